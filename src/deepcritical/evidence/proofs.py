"""The verbatim check every study record passes, the rules' and a model's alike.

Each value of a :class:`~deepcritical.models.StudyRecord` carries its proof, a
:class:`~deepcritical.models.TextSpan`: the quote and its character offsets in the item's
abstract (``Evidence.content``) or in one of its full text's passages (``Evidence.passages``).
:func:`checked_record` verifies each proof against that text exactly (``text[start:end] ==
quote`` and the value a substring of the quote) and drops, and counts in ``values_dropped``,
every value that fails. A model's quotes (:mod:`deepcritical.agents.appraiser`) are first
located in the text with :func:`locate_quote`. A quote proves that a value is in the text, not
what it means.
"""

from __future__ import annotations

import re

from deepcritical.models import Evidence, ExtractedValue, StudyRecord, TextSpan
from deepcritical.models._appraisal import SINGLE_VALUE_FIELDS

__all__ = ["checked_record", "locate_quote", "proof_text", "text_span"]


def text_span(text: str, start: int, end: int, passage: int | None, where: str) -> TextSpan:
    """The :class:`TextSpan` of ``text[start:end]``: ``passage`` is the index of the passage
    ``text`` is (``None``: the abstract), ``where`` says where that is for a reader."""
    return TextSpan(quote=text[start:end], start=start, end=end, passage=passage, where=where)


def proof_text(evidence: Evidence, proof: TextSpan) -> str | None:
    """The text a proof points into: the item's content, or its passage ``proof.passage``;
    ``None`` when that passage does not exist."""
    if proof.passage is None:
        return evidence.content
    if proof.passage < len(evidence.passages):
        return evidence.passages[proof.passage].text
    return None


def _proven(evidence: Evidence, proof: TextSpan, values: list[str | None]) -> bool:
    text = proof_text(evidence, proof)
    if text is None or text[proof.start : proof.end] != proof.quote:
        return False
    return all(v is None or (v.strip() != "" and v in proof.quote) for v in values)


def _keep(evidence: Evidence, value: ExtractedValue | None) -> tuple[ExtractedValue | None, int]:
    if value is None:
        return None, 0
    return (value, 0) if _proven(evidence, value.proof, [value.value]) else (None, 1)


def checked_record(record: StudyRecord, evidence: Evidence) -> StudyRecord:
    """``record`` with every value whose proof does not hold dropped, and counted in
    ``values_dropped`` (added to what it already counts). A proof holds when its quote is
    exactly ``text[start:end]`` of the text it names (:func:`proof_text`) and every value it
    proves (a text value; an estimate's value, CI bounds and p) is a non-empty substring of
    the quote. Returns a new record; ``record`` is not changed."""
    dropped = 0
    fields: dict[str, object] = {}
    for name in SINGLE_VALUE_FIELDS:
        kept, lost = _keep(evidence, getattr(record, name))
        fields[name] = kept
        dropped += lost
    outcomes = [o for o in record.outcomes if _proven(evidence, o.proof, [o.value])]
    effects = [
        e
        for e in record.effects
        if _proven(evidence, e.proof, [e.value, e.ci_low, e.ci_high, e.p_value])
    ]
    dropped += len(record.outcomes) - len(outcomes) + len(record.effects) - len(effects)
    fields |= {
        "outcomes": outcomes,
        "effects": effects,
        "values_dropped": record.values_dropped + dropped,
    }
    return record.model_copy(update=fields)


def locate_quote(evidence: Evidence, quote: str) -> TextSpan | None:
    """Where ``quote`` (a model's excerpt) occurs in the item's abstract or one of its
    passages: exactly, else with white space collapsed (the span then covers the text as
    written there). Case-sensitive: a paraphrase is not found. ``None`` when it is nowhere."""
    needle = quote.strip().strip("\"'“”‘’")
    if not needle:
        return None
    texts: list[tuple[str, int | None, str]] = [(evidence.content, None, "abstract")]
    texts += [(p.text, i, p.locator()) for i, p in enumerate(evidence.passages)]
    for text, passage, where in texts:
        at = text.find(needle)
        if at >= 0:
            return text_span(text, at, at + len(needle), passage, where)
        flexible = r"\s+".join(re.escape(w) for w in needle.split())
        m = re.search(flexible, text)
        if m:
            return text_span(text, m.start(), m.end(), passage, where)
    return None
