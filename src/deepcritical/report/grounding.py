"""Claim-level grounding: every cited sentence must be supported by a passage of a source it
cites, and the passage is recorded.

:func:`ground_report` reads the executive summary, the findings and the conclusion of a report
sentence by sentence (:func:`~deepcritical.text.sentences.prose_spans`, markdown-aware; a
table row is one unit; headings and code are not read). For each sentence that cites evidence
(``[E3]``, ``[E3, E7]``), and for each evidence item it cites, the passage of the item that
best matches the sentence is found: every sentence of the item's content (structured-abstract
labels such as ``RESULTS:`` left out), every window of two adjacent sentences of one paragraph,
and the title, compared with the sentence (citation markers and markdown emphasis removed) by
cosine similarity of their embeddings. That passage is recorded verbatim as a
:class:`~deepcritical.models.SupportingQuote`.

- A cited item **supports** the sentence when its best passage reaches ``threshold``.
  With an ``nli`` callable (``nli(premise, hypothesis) -> entailment probability``), the
  :data:`NLI_CANDIDATES` most similar passages of each item are given to it instead, and the
  item supports the sentence when one of them reaches ``nli_threshold``.
- A sentence is **supported** when at least one cited item supports it. Citations of items
  that do not support a supported sentence are removed from it; a sentence that none of its
  cited items supports is removed (``removed``), whatever else it cites — unless a
  ``rewrite`` callable is given (an LLM rewriter): it is offered the unsupported claim (with
  the best passage of each cited item) and may return a replacement citing only the same
  items; the replacement is checked the same way and takes the sentence's place only when
  it is supported (``rewritten``); at most ``max_rewrites`` sentences are offered.
- Sentences without citations are not checked and stay (fixed statements of the extractive
  writer, for instance). Methodology, limitations, headings and hypotheses are not checked.
- A findings section left without text is dropped (with a note); an executive summary or
  conclusion left empty gets a fixed sentence saying that its statements were removed.
- References of items no longer cited anywhere (text or hypotheses) are removed; every
  remaining reference gets the study design of its item
  (:func:`~deepcritical.evidence.grading.grade_evidence`).

What it records: ``report.grounding`` (one :class:`~deepcritical.models.GroundedClaim` per
cited sentence, removed ones included), ``metadata.grounding_check`` (counts) and
``metadata.grounding_score`` (share of cited sentences supported, before removal; ``None``
when there is none). Grounding a grounded report with the same settings changes nothing: the
records of sentences removed earlier are kept, the others are found again unchanged.

**Default threshold (0.65).** :data:`DEFAULT_THRESHOLD` is for all-MiniLM-L6-v2 and was
measured on the 500 PubMedQA dev questions (``python -m benchmarks.bench_pubmedqa
--calibrate`` prints the figures). Best-passage cosine similarity, p10 / median / p90:

- a verbatim quote (marker removed) against its own abstract: 1.000 / 1.000 / 1.000;
- A, a paraphrase written by the authors (the question turned into a claim): own abstract
  0.673 / 0.822 / 0.928; the most similar *other* abstract of the corpus (a real but
  irrelevant source on a neighbouring topic) 0.412 / 0.535 / 0.670;
- B, the first sentence of the conclusions against the rest of its abstract (results,
  methods): 0.600 / 0.778 / 0.893; against the most similar other abstract 0.406 / 0.522 /
  0.653.

Share of right citations kept (TPR) and of irrelevant ones kept (FPR):

====== ===== ===== ===== =====
 t     A TPR A FPR B TPR B FPR
====== ===== ===== ===== =====
 0.60  0.954 0.292 0.902 0.188
 0.65  0.926 0.132 0.832 0.104
 0.70  0.856 0.058 0.736 0.028
====== ===== ===== ===== =====

TPR - FPR averaged over A and B is highest (0.76-0.77) between 0.65 and 0.68; 0.65 keeps more
right citations. The negatives are the nearest of 1000 mixed-topic abstracts; the sources of
a real run are all on the question's topic, so expect more irrelevant citations to survive
there (0.70 is the stricter choice). The similarity measures topical match, not entailment:
a sentence that misstates or contradicts its source can score high, which is what the
``nli`` hook is for.

The report must be valid against ``evidence`` (:func:`~deepcritical.report.validation.
citation_problems` finds nothing); if it is not, it is validated first. The result is always
valid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.grading import grade_evidence
from deepcritical.models import (
    CitationValidation,
    Evidence,
    GroundedClaim,
    GroundingCheck,
    ResearchReport,
    marker_ids,
)
from deepcritical.report.claims import (
    NLI_CANDIDATES,
    NLIFunction,
    RewriteFunction,
    Scorer,
    Unit,
    check_units,
    claim_text,
    rewrite_unsupported,
    source_passages,
)
from deepcritical.report.validation import citation_problems, validate_report
from deepcritical.text.sentences import (
    MarkdownBlock,
    markdown_blocks,
    prose_spans,
    rebuild_block,
    rebuild_text,
)

__all__ = [
    "DEFAULT_NLI_THRESHOLD",
    "DEFAULT_THRESHOLD",
    "NLI_CANDIDATES",
    "EmptiedPart",
    "NLIFunction",
    "RewriteFunction",
    "claim_text",
    "ground_report",
    "source_passages",
]

DEFAULT_THRESHOLD = 0.65
"""Cosine similarity (all-MiniLM-L6-v2) at or above which a cited item's best passage
supports a sentence; see the module docstring for how it was measured."""

DEFAULT_NLI_THRESHOLD = 0.5
"""Entailment probability at or above which a passage supports a sentence (with ``nli``)."""

EmptiedPart = {
    "executive summary": (
        "Every statement of the draft executive summary was removed by the grounding check: "
        "none of the sources it cited contained a passage supporting it."
    ),
    "conclusion": (
        "Every statement of the draft conclusion was removed by the grounding check: none of "
        "the sources it cited contained a passage supporting it."
    ),
}
"""Fixed text put in an executive summary or conclusion that grounding left empty."""

# --------------------------------------------------------------------------- report units


@dataclass
class _Block:
    block: MarkdownBlock
    units: list[tuple[int, int]] | None  # None: not grounded, kept as is


def _blocks(text: str) -> list[_Block]:
    blocks: list[_Block] = []
    for block in markdown_blocks(text):
        if block.is_prose:
            units = prose_spans(text, block.body_start, block.end)
            blocks.append(_Block(block, units or None))
        elif block.kind == "table":
            blocks.append(_Block(block, [(block.start, block.end)]))
        else:
            blocks.append(_Block(block, None))
    return blocks


def _cited_units(text: str, part: int, location: str) -> list[Unit]:
    out: list[Unit] = []
    for block in _blocks(text):
        for begin, stop in block.units or []:
            sentence = text[begin:stop]
            cited = list(dict.fromkeys(marker_ids(sentence)))
            if cited:
                claim = claim_text(sentence)
                out.append(Unit(part, location, begin, stop, sentence, cited, claim))
    return out


def _rewrite(text: str, changes: Mapping[tuple[int, int], str | None]) -> str:
    """``text`` with units replaced (``str``) or removed (``None``); markdown kept."""
    if not changes:
        return text
    blocks = _blocks(text)
    pieces: list[str | None] = []
    for b in blocks:
        if b.units is None:
            pieces.append(text[b.block.start : b.block.end])
            continue
        kept = [
            (stop, new)
            for begin, stop in b.units
            if (new := changes.get((begin, stop), text[begin:stop])) is not None
        ]
        pieces.append(rebuild_block(text, b.block, b.units, kept) if kept else None)
    return rebuild_text(text, [b.block for b in blocks], pieces, keep_tail=False)


# --------------------------------------------------------------------------- the check


def _texts(report: ResearchReport) -> list[tuple[str, str]]:
    """(location, text) of every grounded part, in reading order."""
    parts = [("executive summary", report.executive_summary)]
    parts += [(f"findings: {s.heading}", s.content) for s in report.findings]
    parts.append(("conclusion", report.conclusion))
    return parts


def _all_cited(report: ResearchReport) -> set[str]:
    ids = {eid for text in report.texts() for eid in marker_ids(text)}
    for h in report.hypotheses_tested:
        ids.update(h.supporting_evidence_ids)
        ids.update(h.contradicting_evidence_ids)
    return ids


def _merge_validation(before: CitationValidation, after: CitationValidation) -> CitationValidation:
    """``before`` with the removals of a later validation pass added."""
    return before.model_copy(
        update={
            "references_removed": before.references_removed + after.references_removed,
            "references_added": before.references_added + after.references_added,
            "markers_removed": before.markers_removed + after.markers_removed,
            "sentences_removed": before.sentences_removed + after.sentences_removed,
            "removed_reference_ids": list(
                dict.fromkeys([*before.removed_reference_ids, *after.removed_reference_ids])
            ),
            "removed_marker_ids": list(
                dict.fromkeys([*before.removed_marker_ids, *after.removed_marker_ids])
            ),
        }
    )


def ground_report(
    report: ResearchReport,
    evidence: Mapping[str, Evidence],
    embedder: Embedder,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    nli: NLIFunction | None = None,
    nli_threshold: float = DEFAULT_NLI_THRESHOLD,
    rewrite: RewriteFunction | None = None,
    max_rewrites: int = 5,
) -> ResearchReport:
    """A copy of ``report`` whose every cited sentence is supported by a cited source.

    See the module docstring for the rules. ``evidence`` maps the run's evidence ids to their
    items (``{e.id: e for e in store.all()}``); ``embedder`` should be the run's (the default
    ``threshold`` is for all-MiniLM-L6-v2). The input report is not modified. Synchronous and
    CPU-bound (one embedding batch, plus ``nli`` calls): call it through
    ``asyncio.to_thread`` from async code.
    """
    new = report.model_copy(deep=True)
    if citation_problems(new, evidence):
        new = validate_report(new, evidence)
    cited_before = _all_cited(new)
    method = "embedding+nli" if nli is not None else "embedding"
    previous = new.metadata.grounding_check
    same = (
        previous is not None
        and previous.method == method
        and previous.threshold == threshold
        and (nli is None or previous.nli_threshold == nli_threshold)
    )
    units = [
        u for i, (location, text) in enumerate(_texts(new)) for u in _cited_units(text, i, location)
    ]
    if same and _unchanged_since_grounded(new, units):
        claims = list(new.grounding)  # grounded before with the same settings: nothing to do
        changes: dict[int, dict[tuple[int, int], str | None]] = {}
    else:
        scorer = Scorer(evidence, embedder, threshold, nli, nli_threshold)
        claims, changes = _check_again(new, units, scorer, rewrite, max_rewrites)

    notes = list(new.metadata.notes)
    _apply_to_report(new, changes, notes)
    dropped = _drop_uncited_references(new, evidence, cited_before)
    removed_refs = list(
        dict.fromkeys([*(previous.removed_reference_ids if previous else []), *dropped])
    )
    check = _check_record(
        method, threshold, nli_threshold if nli is not None else None, claims, removed_refs
    )
    new.grounding = claims
    new.metadata = new.metadata.model_copy(
        update={
            "grounding_check": check,
            "grounding_score": (
                round(check.sentences_supported / check.sentences_checked, 4)
                if check.sentences_checked
                else None
            ),
            "notes": notes,
        }
    )
    if citation_problems(new, evidence):  # not expected: removal keeps every marker canonical
        before = new.metadata.citation_validation
        new = validate_report(new, evidence)
        new.metadata.citation_validation = _merge_validation(
            before, new.metadata.citation_validation
        )
    return new


def _unchanged_since_grounded(report: ResearchReport, units: Sequence[Unit]) -> bool:
    """Whether the report's cited sentences ``units`` are those its kept claims were
    grounded on."""
    earlier = [c for c in report.grounding if not c.removed]
    return [(u.location, u.sentence) for u in units] == [
        (c.location, c.grounded_sentence) for c in earlier
    ]


def _check_again(
    report: ResearchReport,
    units: Sequence[Unit],
    scorer: Scorer,
    rewrite: RewriteFunction | None,
    max_rewrites: int,
) -> tuple[list[GroundedClaim], dict[int, dict[tuple[int, int], str | None]]]:
    """Every cited sentence ``units`` of ``report`` checked (and, with ``rewrite``, up to
    ``max_rewrites`` unsupported ones rewritten): the claims (those removed before first)
    and the changes to make per part and sentence."""
    claims, changes = check_units(
        units, scorer.evidence, scorer.embedder, scorer.threshold, scorer.nli, scorer.nli_threshold
    )
    if rewrite is not None and max_rewrites > 0:
        rewrite_unsupported(units, claims, changes, scorer, rewrite, max_rewrites)
    return [*(c for c in report.grounding if c.removed), *claims], changes


def _apply_to_report(
    new: ResearchReport,
    changes: Mapping[int, Mapping[tuple[int, int], str | None]],
    notes: list[str],
) -> None:
    """Apply the sentence changes to ``new`` in place: the summary (part 0), each findings
    section (parts 1..n; an emptied one is dropped and noted in ``notes``) and the
    conclusion (part n + 1); an emptied summary or conclusion says so."""
    conclusion_part = len(new.findings) + 1
    if 0 in changes:
        new.executive_summary = _apply(new.executive_summary, changes[0])
        if not new.executive_summary.strip():
            new.executive_summary = EmptiedPart["executive summary"]
    sections = []
    for i, section in enumerate(new.findings, start=1):
        content = _apply(section.content, changes.get(i))
        if section.content.strip() and not content.strip():
            notes.append(
                f"Grounding check removed the findings section “{section.heading}”: none of "
                "its statements was supported by a passage of the sources it cited."
            )
            continue
        section.content = content
        sections.append(section)
    new.findings = sections
    if conclusion_part in changes:
        new.conclusion = _apply(new.conclusion, changes[conclusion_part])
        if not new.conclusion.strip():
            new.conclusion = EmptiedPart["conclusion"]


def _drop_uncited_references(
    new: ResearchReport, evidence: Mapping[str, Evidence], cited_before: set[str]
) -> list[str]:
    """Drop from ``new`` the references cited before grounding and no longer cited, and
    grade the study design of the others; returns the ids dropped."""
    cited_after = _all_cited(new)
    dropped = [
        r.evidence_id
        for r in new.references
        if r.evidence_id in cited_before and r.evidence_id not in cited_after
    ]
    new.references = [r for r in new.references if r.evidence_id not in dropped]
    for ref in new.references:
        if ref.evidence_id in evidence:
            ref.study_design = grade_evidence(evidence[ref.evidence_id])
    return dropped


def _check_record(
    method: str,
    threshold: float,
    nli_threshold: float | None,
    claims: Sequence[GroundedClaim],
    removed_refs: list[str],
) -> GroundingCheck:
    """What the grounding check did, counted from its ``claims``, with the ids of the
    references it removed (this time and before)."""
    return GroundingCheck(
        method=method,
        threshold=threshold,
        nli_threshold=nli_threshold,
        sentences_checked=len(claims),
        sentences_supported=sum(c.supported for c in claims),
        sentences_removed=sum(c.removed for c in claims),
        sentences_rewritten=sum(c.rewritten for c in claims),
        citations_removed=sum(
            len(c.evidence_ids) - len(c.kept_ids) for c in claims if not c.removed
        ),
        references_removed=len(removed_refs),
        removed_reference_ids=removed_refs,
    )


def _apply(text: str, changes: Mapping[tuple[int, int], str | None] | None) -> str:
    return _rewrite(text, changes) if changes else text
