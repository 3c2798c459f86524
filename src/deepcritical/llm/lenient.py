"""Lenient field types for LLM output models.

Small models answer booleans as strings ("false", "No.", "not sufficient"), scores as "7/10",
fractions as "80%" and lists as one string. A plain ``bool`` field would accept ``"false"``
(pydantic's lax mode maps it to ``False``) but reject ``"No."`` or ``"not sufficient"``, and a
hand-written ``bool(value)`` would turn ``"false"`` into ``True``. These
annotated types coerce what can be read unambiguously and reject the rest, so pydantic-ai sends
the validation error back to the model.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, WithJsonSchema

__all__ = [
    "EvidenceIdList",
    "LenientBool",
    "LenientFraction",
    "LenientRecommendation",
    "LenientScore",
    "LenientStr",
    "LenientStrList",
    "normalise_evidence_ids",
    "to_bool",
]

_TRUE = {"true", "yes", "y", "1", "t", "sufficient", "enough", "synthesize", "synthesise"}
_FALSE = {
    "false",
    "no",
    "n",
    "0",
    "f",
    "none",
    "null",
    "",
    "insufficient",
    "not sufficient",
    "not enough",
    "continue",
}
_EVIDENCE_ID = re.compile(r"\b[Ee]\s?(\d{1,6})\b")


def to_bool(value: Any) -> Any:
    """``True``/``False`` for booleans, 0/1 and yes/no-like strings (any case, trailing
    punctuation ignored); ``None`` is ``False``; anything else is returned unchanged (and then
    rejected by pydantic)."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = re.sub(r"[\s.!\"']+$", "", value.strip().strip("\"'")).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    return value


def _to_score(value: Any) -> Any:
    """0..10 integer from ``7``, ``7.6``, ``"7"``, ``"7/10"``, ``"8 out of 10"`` (clamped)."""
    if isinstance(value, str):
        m = re.match(r"\s*(-?\d+(?:\.\d+)?)\s*(?:/\s*(\d+)|out\s+of\s+(\d+))?", value)
        if not m:
            return value
        number = float(m.group(1))
        scale = m.group(2) or m.group(3)
        if scale and float(scale) > 0:
            number = number * 10.0 / float(scale)
        value = number
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and math.isfinite(value):
        return max(0, min(10, round(value)))
    return value


def _to_fraction(value: Any) -> Any:
    """0..1 float from ``0.8``, ``80`` (read as percent), ``"80%"``, ``"0.8"`` (clamped)."""
    if isinstance(value, str):
        text = value.strip()
        percent = text.endswith("%")
        try:
            number = float(text.rstrip("%").strip())
        except ValueError:
            return value
        value = number / 100.0 if percent else number
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and math.isfinite(value):
        if 1.0 < value <= 100.0:
            value = value / 100.0
        return max(0.0, min(1.0, float(value)))
    return value


def _to_str_list(value: Any) -> Any:
    """A list of non-empty stripped strings; one string becomes its non-empty lines."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [line for line in value.splitlines()]
    if isinstance(value, list | tuple):
        return [str(v).strip().lstrip("-*• ").strip() for v in value if str(v).strip()]
    return value


def normalise_evidence_ids(value: Any) -> list[str]:
    """Evidence ids ``E<n>`` found in ``value`` (a list or a string), distinct, in order.

    ``"[E3]"``, ``"e3"``, ``"E 3"`` and ``"E3, E7"`` are all understood; anything else (PMIDs,
    titles) is dropped.
    """
    items = [value] if isinstance(value, str) else list(value or [])
    found: list[str] = []
    for item in items:
        for m in _EVIDENCE_ID.finditer(str(item)):
            eid = f"E{int(m.group(1))}"
            if eid not in found:
                found.append(eid)
    return found


def _to_recommendation(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip().lower()
        if text.startswith(("synth", "stop", "report", "write", "finish", "done")):
            return "synthesize"
        if text.startswith(("cont", "search", "more", "keep")):
            return "continue"
    return value


LenientBool = Annotated[bool, BeforeValidator(to_bool)]
"""``bool`` that reads "false"/"No."/"not sufficient" as ``False`` and "true"/"yes" as ``True``."""

LenientScore = Annotated[
    int,
    BeforeValidator(_to_score),
    WithJsonSchema({"type": "integer", "minimum": 0, "maximum": 10}),
]
"""Integer 0..10 (clamped); reads "7/10" as 7. The schema states the bounds, which servers
that compile integer bounds into their grammar (``llama-server``, vLLM) enforce."""

LenientFraction = Annotated[
    float,
    BeforeValidator(_to_fraction),
    WithJsonSchema({"type": "number", "minimum": 0, "maximum": 1}),
]
"""Float 0..1 (clamped); reads 80 and "80%" as 0.8 (the schema states the bounds)."""

LenientStrList = Annotated[list[str], BeforeValidator(_to_str_list)]
"""List of strings; one string is split into its lines; blanks dropped."""

EvidenceIdList = Annotated[list[str], BeforeValidator(normalise_evidence_ids)]
"""List of evidence ids ``E<n>`` (normalised, distinct)."""

LenientRecommendation = Annotated[
    Literal["continue", "synthesize"], BeforeValidator(_to_recommendation)
]
"""``"continue"`` or ``"synthesize"``; reads "Synthesise", "stop", "search more"..."""


def _to_str(value: Any) -> Any:
    """``None`` -> ``""``; numbers -> their text; strings stripped."""
    if value is None:
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str):
        return value.strip()
    return value


LenientStr = Annotated[str, BeforeValidator(_to_str)]
"""``str`` that reads ``null`` as ``""`` (small models write null for unknown links)."""
