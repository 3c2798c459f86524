"""Turning a yes/no research question into the claim it tests, without a model.

Only patterns that can be rewritten safely are rewritten; anything else becomes
``"Affirmative answer to the research question: <question>"`` so no meaning is invented.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Claim", "question_to_claim"]

_MODAL = re.compile(
    r"^(can|could|will|would|should|may|might|must)\s+(.+?)\s+(be|have|help|improve|reduce|"
    r"prevent|increase|decrease|treat|cause|protect|slow|delay|predict|replace|lower|raise)\b"
    r"\s*(.*)$",
    re.IGNORECASE,
)
_VERBS = (
    "reduce|improve|increase|decrease|prevent|cause|protect|slow|delay|predict|affect|lower|"
    "raise|influence|alter|modulate|inhibit|promote|enhance|worsen|have|help|need|require|"
    "benefit|shorten|prolong|extend|attenuate|exacerbate|induce|trigger|correlate|contribute|"
    "lead|play|mediate|impair|restore|reverse|change|cross|work"
)
_AUXILIARY = re.compile(
    rf"^(does|do|did)\s+(.+?)\s+({_VERBS})\b\s*(.*)$",
    re.IGNORECASE,
)
_COPULA = re.compile(
    r"^(is|are|was|were)\s+(.+?)\s+(associated|related|linked|correlated|effective|safe|"
    r"superior|inferior|equivalent|beneficial|useful|necessary|required|a\s+\w+|an\s+\w+|"
    r"more|less|better|worse|higher|lower|involved|implicated|responsible|sufficient)\b\s*(.*)$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Claim:
    """A claim and, when the question names one, its subject (the drug or exposure)."""

    statement: str
    subject: str = ""


def _third_person(verb: str) -> str:
    if verb == "have":
        return "has"
    if verb.endswith(("s", "sh", "ch", "x", "z")):
        return verb + "es"
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _past(verb: str) -> str:
    irregular = {"have": "had", "lead": "led", "make": "made"}
    if verb in irregular:
        return irregular[verb]
    if verb.endswith("e"):
        return verb + "d"
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ied"
    return verb + "ed"


def _clean(question: str) -> str:
    text = " ".join(question.split()).strip()
    return text.rstrip("?").rstrip(".").strip()


def _sentence(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] + "."


def question_to_claim(question: str) -> Claim:
    """The claim a yes/no question tests.

    >>> question_to_claim("Can metformin be repurposed for Alzheimer's disease?").statement
    "Metformin can be repurposed for Alzheimer's disease."
    >>> question_to_claim("Is obesity associated with asthma?").statement
    'Obesity is associated with asthma.'
    """
    q = _clean(question)
    # drop a leading "Topic: " part ("Body dysmorphic disorder: does it have ...")
    tail = q.rsplit(":", 1)[-1].strip() if ":" in q else q
    m = _MODAL.match(tail)
    if m and len(m.group(2).split()) <= 6:
        modal, subject, verb, rest = m.groups()
        if subject.lower() not in {"it", "they", "this", "we", "you", "one"}:
            return Claim(_sentence(f"{subject} {modal.lower()} {verb} {rest}".strip()), subject)
    m = _AUXILIARY.match(tail)
    if m and len(m.group(2).split()) <= 6:
        aux, subject, verb, rest = m.groups()
        if subject.lower() not in {"it", "they", "this", "we", "you", "one"}:
            verb = verb.lower()
            if aux.lower() == "does":
                verb = _third_person(verb)
            elif aux.lower() == "did":
                verb = _past(verb)
            return Claim(_sentence(f"{subject} {verb} {rest}".strip()), subject)
    m = _COPULA.match(tail)
    if m and len(m.group(2).split()) <= 6:
        copula, subject, predicate, rest = m.groups()
        if subject.lower() not in {"it", "they", "this", "there"}:
            text = f"{subject} {copula.lower()} {predicate} {rest}".strip()
            return Claim(_sentence(text), subject)
    return Claim(f"Affirmative answer to the research question: {q}?")
