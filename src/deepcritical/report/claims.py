"""Judging one cited sentence against the sources it cites (the core of
:mod:`deepcritical.report.grounding`).

- :func:`source_passages`: the passages of an evidence item a sentence is compared with
  (title, every sentence, every pair of adjacent sentences; verbatim source text);
  :func:`body_passages`: the same for the few passages of a full text that best match the
  sentence, each with its locator (``"Results, paragraph 4"``).
- :func:`claim_text`: what a report sentence claims (markers and markdown removed).
- :func:`judge_unit`: the best passage of each cited item by embedding cosine similarity (or
  NLI entailment among the most similar passages), whether each item supports the sentence,
  and the sentence with unsupporting citations dropped.
- :func:`check_units`: every cited sentence of a report in one embedding batch.
- :func:`rewrite_unsupported`: offers unsupported sentences to a rewriter (an LLM) and keeps a
  rewrite only when its cited items support it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.mmr import unit_rows
from deepcritical.evidence.passages import rank_passages
from deepcritical.logs import get_logger
from deepcritical.models import (
    CITATION_MARKER,
    MARKER_IDS,
    Evidence,
    GroundedClaim,
    SupportingQuote,
    marker_ids,
)
from deepcritical.text.sentences import prose_spans

__all__ = [
    "MAX_SOURCE_SENTENCES",
    "NLI_CANDIDATES",
    "NLIFunction",
    "Passages",
    "RewriteFunction",
    "Scorer",
    "Unit",
    "body_passages",
    "check_units",
    "claim_text",
    "drop_ids",
    "embed_rows",
    "embed_with_passages",
    "judge_unit",
    "rewrite_unsupported",
    "source_passages",
]

log = get_logger(__name__)

NLI_CANDIDATES = 3
"""Passages of each cited item (the most similar ones) given to the NLI callable."""

MAX_SOURCE_SENTENCES = 200
"""Sentences of one evidence item read (long web pages are cut)."""

NLIFunction = Callable[[str, str], float]
"""``nli(premise, hypothesis) -> probability that the premise entails the hypothesis``."""

RewriteFunction = Callable[[GroundedClaim], "str | None"]
"""``rewrite(claim) -> replacement sentence`` (citing only ``claim.evidence_ids``) or ``None``
/ ``""`` to leave the sentence removed. May raise: the sentence is then removed."""


_LABEL = re.compile(r"^[ \t]*[A-Z][A-Za-z0-9 /&,()'-]{0,60}?[ \t]*:[ \t]+(?=\S)")
_MARKER_WITH_SPACE = re.compile(rf"(?P<space>[ \t]*)\[(?P<ids>{MARKER_IDS})\]")
_EMPHASIS = re.compile(r"\*\*|__|`|(?<!\w)[*_](?=\w)|(?<=\w)[*_](?!\w)")


# --------------------------------------------------------------------------- source passages


def _label_length(line: str) -> int:
    """Length of a ``LABEL: `` prefix (at most six words) of a content line, 0 if none."""
    m = _LABEL.match(line)
    if m is None or len(m.group(0).split()) > 6:
        return 0
    return m.end()


def _windows(text: str, skip: int, limit: int) -> tuple[list[str], int]:
    """Every sentence of ``text`` after ``skip`` characters and every pair of adjacent ones
    (at most ``limit`` sentences), and the number of sentences read."""
    spans = prose_spans(text, skip)[: max(limit, 0)]
    out: list[str] = []
    for i, (begin, stop) in enumerate(spans):
        out.append(text[begin:stop])
        if i + 1 < len(spans):
            out.append(text[begin : spans[i + 1][1]])
    return out, len(spans)


def source_passages(evidence: Evidence, max_sentences: int = MAX_SOURCE_SENTENCES) -> list[str]:
    """The passages of ``evidence`` a sentence is compared with, each verbatim source text.

    The title (when there is one), then, paragraph by paragraph (one line of content each, a
    leading ``LABEL: `` left out), every sentence and every pair of adjacent sentences. At
    most ``max_sentences`` sentences are read. Repeats are dropped. A full text's body is not
    read here: :func:`embed_with_passages` adds the passages that best match each sentence.
    """
    passages: list[str] = []
    title = evidence.citation.title.strip()
    if title:
        passages.append(title)
    read = 0
    for line in evidence.content.split("\n"):
        if read >= max_sentences:
            break
        windows, n = _windows(line, _label_length(line), max_sentences - read)
        read += n
        passages += windows
    return list(dict.fromkeys(p for p in passages if p.strip()))


def body_passages(
    evidence: Evidence,
    claims: Sequence[str],
    claim_vectors: NDArray[np.float32],
    embedder: Embedder,
) -> list[tuple[str, str]]:
    """``(text, locator)`` pairs of ``evidence``'s full text to compare ``claims`` with: every
    sentence and pair of adjacent sentences of the passages that best match each claim
    (:func:`~deepcritical.evidence.passages.rank_passages`), with the passage's locator
    (``"Results, paragraph 4"``). ``[]`` for an abstract-only item."""
    positions: list[int] = []
    for claim, vector in zip(claims, claim_vectors, strict=True):
        positions += [p.position for p in rank_passages(evidence, claim, vector, embedder)]
    out: list[tuple[str, str]] = []
    for position in dict.fromkeys(positions):
        passage = evidence.passages[position]
        windows, _ = _windows(passage.text, 0, MAX_SOURCE_SENTENCES)
        out += [(w, passage.locator()) for w in windows if w.strip()]
    return out


def claim_text(sentence: str) -> str:
    """What a report sentence claims, for comparison with sources: citation markers,
    markdown emphasis and table pipes removed, white space collapsed."""
    text = CITATION_MARKER.sub("", sentence)
    text = _EMPHASIS.sub("", text).replace("|", " ")
    text = re.sub(r"\s+([.,;:!?])", r"\1", text)
    text = re.sub(r"\(\s*\)", "", text)
    return " ".join(text.split()).strip()


@dataclass
class Unit:
    """One cited sentence (or table row) of a grounded text."""

    part: int  # index into _texts(report)
    location: str
    begin: int
    stop: int
    sentence: str
    cited: list[str]
    claim: str


def drop_ids(sentence: str, keep: set[str]) -> str:
    """``sentence`` citing only ``keep``; an emptied marker goes with the space before it."""

    def repl(m: re.Match[str]) -> str:
        ids = [i.strip() for i in m.group("ids").split(",")]
        kept = [i for i in ids if i in keep]
        return m.group("space") + "[" + ", ".join(kept) + "]" if kept else ""

    out = _MARKER_WITH_SPACE.sub(repl, sentence)
    out = re.sub(r"[ \t]*\(\s*\)", "", out)
    return out.strip()


# --------------------------------------------------------------------------- scoring


@dataclass
class Passages:
    """Passages of the cited items, their embeddings (rows L2-normalised) and where each lies
    in its item's full text (``""``: its title or abstract)."""

    texts: dict[str, list[str]] = field(default_factory=dict)
    vectors: dict[str, NDArray[np.float32]] = field(default_factory=dict)
    locators: dict[str, list[str]] = field(default_factory=dict)


def embed_rows(embedder: Embedder, texts: Sequence[str]) -> NDArray[np.float32]:
    if not texts:
        return np.zeros((0, 1), dtype=np.float32)
    return unit_rows(np.asarray(embedder.embed(list(texts)), dtype=np.float32))


def embed_with_passages(
    claims: Sequence[str],
    ids: Sequence[str],
    evidence: Mapping[str, Evidence],
    embedder: Embedder,
    citing: Mapping[str, Sequence[int]] | None = None,
) -> tuple[Passages, NDArray[np.float32]]:
    """The passages of the items ``ids`` and the vectors of ``claims``.

    An abstract's passages are :func:`source_passages`; a full text adds
    :func:`body_passages` for the claims that cite it (``citing[eid]``: indexes into
    ``claims``; every claim when ``citing`` is ``None``). One embedding batch (claims first,
    then every item's passages in order) when no item has a full text; else the claims are
    embedded first, to choose the body passages.
    """
    passages = Passages()
    for eid in ids:
        passages.texts[eid] = source_passages(evidence[eid])
        passages.locators[eid] = [""] * len(passages.texts[eid])
    full = [eid for eid in ids if evidence[eid].passages]
    if full:
        claim_vectors = embed_rows(embedder, claims)
        for eid in full:
            chosen = list(range(len(claims))) if citing is None else list(citing.get(eid, ()))
            pairs = body_passages(
                evidence[eid], [claims[i] for i in chosen], claim_vectors[chosen], embedder
            )
            seen = set(passages.texts[eid])
            for text, locator in pairs:
                if text not in seen:
                    seen.add(text)
                    passages.texts[eid].append(text)
                    passages.locators[eid].append(locator)
        texts = [p for eid in ids for p in passages.texts[eid]]
        vectors = embed_rows(embedder, texts)
        offset = 0
    else:
        texts = [p for eid in ids for p in passages.texts[eid]]
        vectors = embed_rows(embedder, [*claims, *texts])
        claim_vectors = vectors[: len(claims)]
        offset = len(claims)
    for eid in ids:
        n = len(passages.texts[eid])
        passages.vectors[eid] = vectors[offset : offset + n]
        offset += n
    return passages, claim_vectors


def judge_unit(
    unit: Unit,
    vector: NDArray[np.float32],
    passages: Passages,
    threshold: float,
    nli: NLIFunction | None,
    nli_threshold: float,
) -> GroundedClaim:
    quotes: list[SupportingQuote] = []
    for eid in unit.cited:
        texts = passages.texts.get(eid)
        if not texts:
            continue  # not an evidence item, or nothing to read: cannot support
        sims = passages.vectors[eid] @ vector
        if nli is None or not unit.claim:
            best = int(np.argmax(sims))
            similarity = round(float(sims[best]), 4)  # the recorded value decides
            quotes.append(
                SupportingQuote(
                    evidence_id=eid,
                    quote=texts[best],
                    locator=passages.locators[eid][best],
                    similarity=similarity,
                    supports=bool(unit.claim) and similarity >= threshold,
                )
            )
            continue
        order = [int(i) for i in np.argsort(-sims, kind="stable")[:NLI_CANDIDATES]]
        scored = [(round(float(nli(texts[i], unit.claim)), 4), i) for i in order]
        entailment, best = max(scored, key=lambda pair: (pair[0], -order.index(pair[1])))
        quotes.append(
            SupportingQuote(
                evidence_id=eid,
                quote=texts[best],
                locator=passages.locators[eid][best],
                similarity=round(float(sims[best]), 4),
                entailment=entailment,
                supports=entailment >= nli_threshold,
            )
        )
    kept = [q.evidence_id for q in quotes if q.supports]
    scores = [q.entailment if q.entailment is not None else q.similarity for q in quotes]
    return GroundedClaim(
        location=unit.location,
        sentence=unit.sentence,
        evidence_ids=list(unit.cited),
        quotes=quotes,
        supported=bool(kept),
        score=max(scores) if scores else 0.0,
        kept_ids=kept,
        removed=not kept,
        grounded_sentence="" if not kept else drop_ids(unit.sentence, set(kept)),
    )


def check_units(
    units: Sequence[Unit],
    evidence: Mapping[str, Evidence],
    embedder: Embedder,
    threshold: float,
    nli: NLIFunction | None,
    nli_threshold: float,
) -> tuple[list[GroundedClaim], dict[int, dict[tuple[int, int], str | None]]]:
    """Claims for ``units`` and the text changes they call for, by location."""
    if not units:
        return [], {}
    ids = list(dict.fromkeys(eid for u in units for eid in u.cited if eid in evidence))
    citing: dict[str, list[int]] = {}
    for i, unit in enumerate(units):
        for eid in dict.fromkeys(unit.cited):
            citing.setdefault(eid, []).append(i)
    passages, claim_vectors = embed_with_passages(
        [u.claim or "-" for u in units], ids, evidence, embedder, citing
    )
    claims: list[GroundedClaim] = []
    changes: dict[int, dict[tuple[int, int], str | None]] = {}
    for unit, vector in zip(units, claim_vectors, strict=True):
        claim = judge_unit(unit, vector, passages, threshold, nli, nli_threshold)
        claims.append(claim)
        if claim.removed:
            changes.setdefault(unit.part, {})[(unit.begin, unit.stop)] = None
        elif claim.grounded_sentence != unit.sentence:
            changes.setdefault(unit.part, {})[(unit.begin, unit.stop)] = claim.grounded_sentence
    return claims, changes


@dataclass
class Scorer:
    """Everything needed to judge one more sentence (a rewrite) against its cited items."""

    evidence: Mapping[str, Evidence]
    embedder: Embedder
    threshold: float
    nli: NLIFunction | None
    nli_threshold: float

    def judge(self, unit: Unit) -> GroundedClaim:
        ids = [eid for eid in unit.cited if eid in self.evidence]
        passages, vectors = embed_with_passages(
            [unit.claim or "-"], ids, self.evidence, self.embedder
        )
        return judge_unit(unit, vectors[0], passages, self.threshold, self.nli, self.nli_threshold)


def rewrite_unsupported(
    units: Sequence[Unit],
    claims: list[GroundedClaim],
    changes: dict[int, dict[tuple[int, int], str | None]],
    scorer: Scorer,
    rewrite: RewriteFunction,
    max_rewrites: int,
) -> None:
    """Offer the first ``max_rewrites`` removed claims to ``rewrite``; a supported rewrite
    (citing only the original's items) replaces the sentence in ``changes`` and its claim is
    marked ``rewritten`` (in place)."""
    offered = 0
    for i, (unit, claim) in enumerate(zip(units, claims, strict=True)):
        if not claim.removed:
            continue
        if offered >= max_rewrites:
            break
        offered += 1
        try:
            proposal = rewrite(claim)
        except Exception as exc:  # noqa: BLE001 - a failing rewriter leaves the sentence removed
            log.warning("grounding rewrite failed", error=f"{type(exc).__name__}: {exc}")
            continue
        if not proposal or not proposal.strip():
            continue
        text = drop_ids(" ".join(proposal.split()), set(unit.cited))
        cited = list(dict.fromkeys(marker_ids(text)))
        if not cited:
            continue
        new_unit = Unit(
            unit.part, unit.location, unit.begin, unit.stop, text, cited, claim_text(text)
        )
        judged = scorer.judge(new_unit)
        if not judged.supported:
            continue
        claims[i] = claim.model_copy(
            update={
                "removed": False,
                "rewritten": True,
                "quotes": judged.quotes,
                "kept_ids": judged.kept_ids,
                "grounded_sentence": judged.grounded_sentence,
            }
        )
        changes.setdefault(unit.part, {})[(unit.begin, unit.stop)] = judged.grounded_sentence
