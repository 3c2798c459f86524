"""Citation validation: a report may cite only the evidence its run collected.

:func:`validate_report` returns a corrected copy of a report; :func:`citation_problems` lists
what is still wrong with one (nothing, after validation). The rules, in the order applied:

1. **Alternative marker forms are normalised** (see :data:`~.sentences.CITATION_GROUP`): in
   square brackets ``[PMID: 123]``, ``[PMID:123]``, ``[pmid 123]``, ``[PMID: 123, 456]`` (the
   prefix carries over to bare numbers after it), ``[PMC123]``, ``[PMCID: PMC123]``,
   ``[NCT01234567]``, ``[doi:10.1/x]``, ``[https://doi.org/10.1/x]``, lower-case ``[e3]``,
   ``[E3; E4]``, ranges ``[E3-E5]`` (up to 50 ids), and adjacent groups ``[E3][E4]``,
   ``[E3] [E4]``, ``[E3], [E4]``, which all become one ``[E3, E4]``; in parentheses only the
   explicit PubMed forms ``(PMID: 123)``, ``(PMCID: PMC123)``, ``(PMC123)``. A bracket that
   names ids among other words (``[E3 and E4]``, ``[see E3]``, ``[E3, p. 4]``) is a marker
   citing those ids (:data:`~.sentences.LOOSE_CITATION_GROUP`). An identifier resolves when
   exactly that PMID/PMCID/DOI/NCT ID is on an evidence item's citation (DOIs compared in
   lower case). Not markers, never touched: ``(E3)`` (E1-E3 are also estrogens and ubiquitin
   ligases), ``[95% CI]``, ``[n = 3]``, ``[Ca2+]``, ``[1,2,4]triazole``, bare ``NCT…`` or
   ``PMID …`` outside brackets (an identifier mentioned in prose is not a citation), and
   author-year citations such as ``(Smith et al., 2019)``, which this module cannot check.
2. **Every marker id must be an evidence item.** Ids that do not resolve are removed from
   their marker; a marker left empty disappears with the space before it. Bare numeric markers
   (``[1]``, ``[2, 3]``, ``[1-3]``) never resolve: writers are told to cite ``[E#]``, and a
   number cannot be told apart from our own rendered numbering. Each removed id counts once
   in ``markers_removed``.
3. **A sentence that cited only unresolvable ids is removed** from the executive summary,
   the findings and the conclusion (``sentences_removed``): its claim was backed only by a
   fabricated source. A sentence with at least one valid id keeps it; sentences that never
   had a marker stay (validation is not grounding). In the methodology, the limitations,
   section headings and hypothesis statements only the bad ids are removed. A findings
   section left with no text is dropped and a note added to ``metadata.notes``; a
   limitation left empty is dropped.
4. **Hypotheses** keep only supporting/contradicting ids that resolve (alternative forms such
   as ``PMID:123`` are resolved too); the dropped ones count in ``markers_checked`` /
   ``markers_removed`` / ``removed_marker_ids`` like inline markers, since they are
   rendered as citations.
5. **References** must be evidence items: unknown ones are removed (``references_removed``,
   ``removed_reference_ids``); duplicates are collapsed silently; every kept reference gets
   the evidence store's citation (the writer's bibliographic data is never trusted); every
   evidence id cited by a surviving marker or hypothesis without a reference gets one
   (``references_added``), in order of first citation.

6. **A retracted record is never cited** (``Citation.retracted``): both functions treat it
   as if it were not an evidence item, so a marker, hypothesis id or reference naming it is
   removed and counted as above, and :func:`citation_problems` names it as retracted.

The result is idempotent: validating a validated report changes nothing and counts no
removals. Markdown structure (headings, list items, paragraphs, line breaks) is kept.
Evidence ids are expected to look like ``E3`` (the evidence store's ids), since
:data:`~deepcritical.models.CITATION_MARKER` only recognises those.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from deepcritical.models import (
    CITATION_MARKER,
    DOI_BODY,
    DOI_PREFIX,
    DOI_TOKEN,
    E_ID,
    NCT_ID,
    PMCID,
    PMCID_LABEL,
    PMCID_TOKEN,
    PMID_LABEL,
    PMID_TOKEN,
    CitationValidation,
    Evidence,
    Hypothesis,
    Reference,
    ResearchReport,
    clean_doi,
)
from deepcritical.text.sentences import (
    CITATION_GROUP,
    LOOSE_CITATION_GROUP,
    markdown_blocks,
    prose_spans,
    rebuild_block,
    rebuild_text,
)

__all__ = ["citable", "citation_problems", "validate_report"]

_MAX_RANGE = 50  # [E3-E60] would be a typo, not a citation of 58 items

_TOKEN = re.compile(
    r"(?P<erange>E(?P<e1>\d+)\s*[-–]\s*E(?P<e2>\d+))"
    r"|(?P<e>E(?P<en>\d+))"
    rf"|(?:{PMID_LABEL}(?P<pmid>\d+))"
    rf"|(?:{PMCID_LABEL}(?P<pmc>\d+))"
    rf"|(?P<nct>{NCT_ID})"
    rf"|(?:{DOI_PREFIX}(?P<doi>{DOI_BODY}))"
    r"|(?P<num>\d+(?:\s*[-–]\s*\d+)?)",
    re.IGNORECASE,
)
_NCT_ID = re.compile(NCT_ID, re.IGNORECASE)
_PMC_ID = re.compile(PMCID, re.IGNORECASE)


@dataclass(frozen=True)
class _Cite:
    """One cited identifier: how it was written (normalised) and the evidence id, if any."""

    label: str
    evidence_id: str | None


def _norm_doi(doi: str) -> str:
    return clean_doi(doi)


class _Resolver:
    """Maps the identifiers a writer may cite to the run's evidence ids."""

    def __init__(self, evidence: Mapping[str, Evidence]) -> None:
        self.by_upper: dict[str, str] = {}
        self.by_pmid: dict[str, str] = {}
        self.by_pmcid: dict[str, str] = {}
        self.by_doi: dict[str, str] = {}
        self.by_nct: dict[str, str] = {}
        for key, item in evidence.items():  # first item wins if a store ever holds duplicates
            self.by_upper.setdefault(key.upper(), key)
            c = item.citation
            native = c.id.strip()
            pmids = [c.pmid or ""]
            if c.source in ("pubmed", "local") and native.isdigit():
                pmids.append(native)
            for pmid in pmids:
                if pmid.strip():
                    self.by_pmid.setdefault(pmid.strip().lstrip("0"), key)
            for pmcid in (c.pmcid or "", native):
                if _PMC_ID.fullmatch(pmcid.strip()):
                    self.by_pmcid.setdefault(pmcid.strip().upper(), key)
            for doi in (c.doi or "", native if native.startswith("10.") else ""):
                if doi.strip():
                    self.by_doi.setdefault(_norm_doi(doi), key)
            for nct in (c.nct_id or "", native):
                if _NCT_ID.fullmatch(nct.strip()):
                    self.by_nct.setdefault(nct.strip().upper(), key)

    def _e(self, digits: str) -> str | None:
        return self.by_upper.get(f"E{digits}") or self.by_upper.get(f"E{int(digits)}")

    def token(self, raw: str, pmid_context: bool = False) -> list[_Cite]:
        """The identifiers one token (``E3``, ``PMID: 1``, ``E3-E5``, ``7``...) cites."""
        raw = raw.strip().strip("[]()").strip()
        if not raw:
            return []
        m = _TOKEN.fullmatch(raw)
        if m is None:  # an id in another scheme, if the mapping uses one
            return [_Cite(raw, self.by_upper.get(raw.upper()))]
        if m.group("erange"):
            lo, hi = int(m.group("e1")), int(m.group("e2"))
            label = f"E{m.group('e1')}-E{m.group('e2')}"
            if not 0 <= hi - lo < _MAX_RANGE:
                return [_Cite(label, None)]
            return [_Cite(f"E{n}", self._e(str(n))) for n in range(lo, hi + 1)]
        if m.group("e"):
            return [_Cite(f"E{m.group('en')}", self._e(m.group("en")))]
        if m.group("pmid") or (m.group("num") and pmid_context and m.group("num").isdigit()):
            pmid = m.group("pmid") or m.group("num")
            return [_Cite(f"PMID:{pmid}", self.by_pmid.get(pmid.lstrip("0")))]
        if m.group("pmc"):
            pmcid = f"PMC{m.group('pmc')}"
            return [_Cite(pmcid, self.by_pmcid.get(pmcid))]
        if m.group("nct"):
            nct = m.group("nct").upper()
            return [_Cite(nct, self.by_nct.get(nct))]
        if m.group("doi"):
            doi = _norm_doi(m.group("doi"))
            return [_Cite(f"doi:{doi}", self.by_doi.get(doi))]
        return [_Cite(re.sub(r"\s+", "", m.group("num")), None)]  # bare number: ambiguous

    def run(self, text: str) -> list[_Cite]:
        """Every identifier cited by one run of adjacent citation groups, in order."""
        cites: list[_Cite] = []
        for group in CITATION_GROUP.finditer(text):
            pmid_context = False
            for raw in re.split(r"[,;]", group.group()[1:-1]):
                found = self.token(raw, pmid_context)
                pmid_context = pmid_context or any(c.label.startswith("PMID:") for c in found)
                cites.extend(found)
        return cites


@dataclass
class _Tally:
    """Counters of one validation pass."""

    checked: int = 0
    removed: int = 0
    sentences: int = 0
    removed_ids: list[str] = field(default_factory=list)
    cited: list[str] = field(default_factory=list)  # valid evidence ids, first-citation order

    def count(self, cites: list[_Cite]) -> None:
        self.checked += len(cites)
        for c in cites:
            if c.evidence_id is None:
                self.removed += 1
                if c.label not in self.removed_ids:
                    self.removed_ids.append(c.label)
            elif c.evidence_id not in self.cited:
                self.cited.append(c.evidence_id)


_LOOSE_TOKEN = re.compile(
    rf"\b{E_ID}\b"
    rf"|(?i:\b{PMID_TOKEN}|\b{PMCID_TOKEN}|\b{NCT_ID}\b|\b{DOI_TOKEN})"
)
_JOINER = re.compile(r"[ \t]*[,;–-]?[ \t]*")

_Found = tuple[int, int, list[_Cite]]  # (start, end, identifiers cited) of one marker


def _groups(text: str, begin: int = 0, stop: int | None = None) -> list[tuple[int, int]]:
    """Spans of every citation group in ``text[begin:stop]``, strict and loose, in order."""
    end = len(text) if stop is None else stop
    spans = [m.span() for m in CITATION_GROUP.finditer(text, begin, end)]
    for m in LOOSE_CITATION_GROUP.finditer(text, begin, end):
        if not any(s < m.end() and m.start() < e for s, e in spans):
            spans.append(m.span())
    return sorted(spans)


def _citations(text: str, begin: int, stop: int, resolver: _Resolver) -> list[_Found]:
    """The markers in ``text[begin:stop]``: adjacent groups joined, identifiers resolved."""
    found: list[_Found] = []
    for start, end in _groups(text, begin, stop):
        group = text[start:end]
        if CITATION_GROUP.fullmatch(group):
            cites = resolver.run(group)
        else:
            cites = [c for t in _LOOSE_TOKEN.finditer(group) for c in resolver.token(t.group())]
        if found and _JOINER.fullmatch(text, found[-1][1], start):
            found[-1] = (found[-1][0], end, found[-1][2] + cites)
        else:
            found.append((start, end, cites))
    return found


def _rewrite_unit(text: str, begin: int, stop: int, markers: list[_Found]) -> str:
    """``text[begin:stop]`` with each marker replaced by its canonical valid form or removed."""
    out = ""
    pos = begin
    for start, end, cites in markers:
        out += text[pos:start]
        pos = end
        ids = list(dict.fromkeys(c.evidence_id for c in cites if c.evidence_id is not None))
        if ids:
            out += "[" + ", ".join(ids) + "]"
            continue
        # the marker disappears; so does the space before it (or after it, at a line start)
        if out.endswith("(") and text[pos : pos + 1] == ")":  # "([E9])" -> ""
            out, pos = out[:-1], pos + 1
        stripped = out.rstrip(" \t")
        if stripped and not stripped.endswith("\n"):
            out = stripped
        else:
            out = stripped
            while pos < stop and text[pos] in " \t":
                pos += 1
    out += text[pos:stop]
    return out


def _clean_text(text: str, resolver: _Resolver, tally: _Tally, droppable: bool) -> str:
    """Normalise and check the markers of one markdown text; see the module docstring.

    With ``droppable``, sentences whose every cited id fails to resolve are removed.
    """
    blocks = markdown_blocks(text)
    if not blocks:
        return text
    rebuilt: list[str | None] = []
    for block in blocks:
        if block.is_prose:
            units = prose_spans(text, block.body_start, block.end)
        else:
            units = [(block.start, block.end)]
        if not units:
            rebuilt.append(text[block.start : block.end])
            continue
        kept: list[tuple[int, str]] = []  # (stop, rewritten text)
        for begin, stop in units:
            markers = _citations(text, begin, stop, resolver)
            cites = [c for _, _, marker_cites in markers for c in marker_cites]
            tally.count(cites)
            if droppable and block.is_prose and cites and all(c.evidence_id is None for c in cites):
                tally.sentences += 1
                continue
            new = _rewrite_unit(text, begin, stop, markers)
            if new.strip():
                kept.append((stop, new.strip()))
        rebuilt.append(rebuild_block(text, block, units, kept) if kept else None)
    # reassemble, choosing the widest separator over removed blocks (keeps blank lines)
    return rebuild_text(text, blocks, rebuilt, keep_tail=True)


def _resolve_ids(ids: list[str], resolver: _Resolver, tally: _Tally) -> list[str]:
    """Hypothesis evidence ids that resolve, de-duplicated, in order; the rest counted."""
    out: list[str] = []
    for raw in ids:
        cites = resolver.token(raw)
        tally.count(cites)
        for c in cites:
            if c.evidence_id is not None and c.evidence_id not in out:
                out.append(c.evidence_id)
    return out


def citable(evidence: Mapping[str, Evidence]) -> dict[str, Evidence]:
    """``evidence`` without the items a source marks as retracted (``Citation.retracted``):
    what a report may cite."""
    return {eid: e for eid, e in evidence.items() if not e.citation.retracted}


def _not_citable(eid: str, evidence: Mapping[str, Evidence]) -> str:
    """Why ``eid`` may not be cited: a retracted record, or not an evidence item."""
    if eid in evidence and evidence[eid].citation.retracted:
        return "a retracted record (never cited as support)"
    return "not an evidence item of this run"


def validate_report(report: ResearchReport, evidence: Mapping[str, Evidence]) -> ResearchReport:
    """A copy of ``report`` whose every citation refers to ``evidence``.

    ``evidence`` maps the run's evidence ids (``E1``...) to their items, e.g.
    ``{e.id: e for e in store.all()}``. Applies the rules of this module's docstring and
    records what changed in ``metadata.citation_validation`` (replacing any earlier record;
    notes about dropped sections are appended to ``metadata.notes``). The input report is
    not modified, and the returned report shares no mutable state with it or with
    ``evidence``. Raises nothing for malformed citations: they are removed and counted.
    """
    evidence = citable(evidence)
    resolver = _Resolver(evidence)
    tally = _Tally()
    new = report.model_copy(deep=True)
    notes = list(new.metadata.notes)

    _clean_report_text(new, resolver, tally, notes)
    new.references, removed_refs, refs_removed, added = _checked_references(
        report.references, evidence, resolver, tally
    )

    validation = CitationValidation(
        references_checked=len(report.references),
        references_removed=refs_removed,
        references_added=added,
        markers_checked=tally.checked,
        markers_removed=tally.removed,
        sentences_removed=tally.sentences,
        removed_reference_ids=removed_refs,
        removed_marker_ids=tally.removed_ids,
        # what the writer removed before validation ran is carried over, never reset
        writer_markers_removed=report.metadata.citation_validation.writer_markers_removed,
        writer_sentences_removed=report.metadata.citation_validation.writer_sentences_removed,
        writer_removed_ids=list(report.metadata.citation_validation.writer_removed_ids),
    )
    new.metadata = new.metadata.model_copy(
        update={"citation_validation": validation, "notes": notes}
    )
    return new


def _clean_report_text(
    new: ResearchReport, resolver: _Resolver, tally: _Tally, notes: list[str]
) -> None:
    """Clean the markers of every text field of ``new`` in place (summary, methodology,
    hypotheses, findings, limitations, conclusion); a findings section left with nothing is
    dropped and noted in ``notes``."""
    new.executive_summary = _clean_text(new.executive_summary, resolver, tally, droppable=True)
    new.methodology = _clean_text(new.methodology, resolver, tally, droppable=False)
    for h in new.hypotheses_tested:
        h.statement = _clean_text(h.statement, resolver, tally, droppable=False)
        h.supporting_evidence_ids = _resolve_ids(h.supporting_evidence_ids, resolver, tally)
        h.contradicting_evidence_ids = _resolve_ids(h.contradicting_evidence_ids, resolver, tally)
    sections = []
    for section in new.findings:
        section.heading = _clean_text(section.heading, resolver, tally, droppable=False)
        content = _clean_text(section.content, resolver, tally, droppable=True)
        if section.content.strip() and not content.strip():
            notes.append(
                f"Citation check removed the findings section “{section.heading}”: every"
                " statement in it cited only sources that are not in the evidence."
            )
            continue
        section.content = content
        sections.append(section)
    new.findings = sections
    limitations = [_clean_text(lim, resolver, tally, droppable=False) for lim in new.limitations]
    new.limitations = [lim for lim in limitations if lim.strip()]
    new.conclusion = _clean_text(new.conclusion, resolver, tally, droppable=True)


def _checked_references(
    cited_before: Sequence[Reference],
    evidence: Mapping[str, Evidence],
    resolver: _Resolver,
    tally: _Tally,
) -> tuple[list[Reference], list[str], int, int]:
    """The reference list: each of ``cited_before`` that resolves to one evidence item (once),
    then each item cited in the text and not listed. Returns it with the ids removed, how
    many references were removed and how many added."""
    references: list[Reference] = []
    listed: set[str] = set()
    removed_refs: list[str] = []
    refs_removed = 0
    for ref in cited_before:
        cites = resolver.token(ref.evidence_id)
        eid = cites[0].evidence_id if len(cites) == 1 else None
        if eid is None:
            refs_removed += 1
            if ref.evidence_id not in removed_refs:
                removed_refs.append(ref.evidence_id)
            continue
        if eid in listed:
            continue
        listed.add(eid)
        references.append(
            Reference(evidence_id=eid, citation=evidence[eid].citation.model_copy(deep=True))
        )
    added = 0
    for eid in tally.cited:
        if eid not in listed:
            listed.add(eid)
            added += 1
            references.append(
                Reference(evidence_id=eid, citation=evidence[eid].citation.model_copy(deep=True))
            )
    return references, removed_refs, refs_removed, added


def _marker_fields(report: ResearchReport) -> Iterator[tuple[str, str]]:
    """(where, text) for every field that may hold markers, in reading order."""
    yield "executive summary", report.executive_summary
    yield "methodology", report.methodology
    for i, h in enumerate(report.hypotheses_tested, start=1):
        yield f"hypothesis {i} statement", h.statement
    for i, s in enumerate(report.findings, start=1):
        yield f"findings section {i} heading", s.heading
        yield f"findings section {i} ({s.heading!r})", s.content
    for i, lim in enumerate(report.limitations, start=1):
        yield f"limitation {i}", lim
    yield "conclusion", report.conclusion


def citation_problems(report: ResearchReport, evidence: Mapping[str, Evidence]) -> list[str]:
    """Every remaining citation problem of ``report`` against ``evidence``, read-only.

    One message per problem: a reference that is not an evidence item, a reference whose
    citation differs from the evidence store's, a duplicated reference, a marker id that is
    not an evidence item, a cited evidence id without a reference, citation-like text that
    is not an ``[E#]`` marker (``[PMID: 1]``, ``[1]``, ``[e3]``), and the same checks for
    hypothesis evidence ids. An empty list means the report is valid; a report returned by
    :func:`validate_report` with the same ``evidence`` always gives ``[]``.
    """
    problems: list[str] = []
    listed: set[str] = set()
    everything, evidence = evidence, citable(evidence)
    for ref in report.references:
        eid = ref.evidence_id
        if eid in listed:
            problems.append(f"reference {eid} is listed more than once")
        listed.add(eid)
        if eid not in evidence:
            problems.append(f"reference {eid} is {_not_citable(eid, everything)}")
        elif ref.citation != evidence[eid].citation:
            problems.append(
                f"reference {eid} has a citation that differs from the evidence store's"
            )
    for where, text in _marker_fields(report):
        for start, end in _groups(text):
            if CITATION_MARKER.fullmatch(text, start, end) is None:
                problems.append(
                    f"citation-like text {text[start:end]!r} in {where} is not an [E#] marker"
                )
        for marker in CITATION_MARKER.finditer(text):
            for eid in (i.strip() for i in marker.group(1).split(",")):
                if eid not in evidence:
                    problems.append(
                        f"marker {marker.group()} in {where} cites {eid},"
                        f" which is {_not_citable(eid, everything)}"
                    )
                elif eid not in listed:
                    problems.append(f"{eid} is cited in {where} but has no reference")
    for i, h in enumerate(report.hypotheses_tested, start=1):
        problems.extend(_hypothesis_problems(i, h, everything, listed))
    return problems


def _hypothesis_problems(
    number: int, h: Hypothesis, evidence: Mapping[str, Evidence], listed: set[str]
) -> Iterator[str]:
    for kind, ids in (
        ("supporting", h.supporting_evidence_ids),
        ("contradicting", h.contradicting_evidence_ids),
    ):
        for eid in ids:
            if eid not in evidence or evidence[eid].citation.retracted:
                yield f"hypothesis {number} {kind} id {eid} is {_not_citable(eid, evidence)}"
            elif eid not in listed:
                yield f"hypothesis {number} {kind} id {eid} has no reference"
