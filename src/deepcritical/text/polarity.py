"""The polarity of a yes/no question: does it ask whether something holds, or whether it does
not ("Does X not affect Y?")?

A source's stance is read from its conclusions as "a positive finding" or "a null finding";
for a negated question the two swap: a study that finds no effect of X on Y answers "Does X
not affect Y?" with yes. Only clear negations of the question's own clause count:

- ``not`` / ``n't`` / ``never`` ("Does X not affect Y?", "Isn't X safe?", "Is X never
  needed?"), and ``no`` before a noun ("Is there no difference ...?", "Does X have no
  effect ...?");
- ``without`` only in "without (any) effect / benefit / impact / influence / difference /
  risk / role / association";

and these do not: ``non-``/``non`` terms ("non-small cell"), "no longer", "not only",
"whether or not", "or not", "cannot"/"can not" (a statement of impossibility, too often part
of a term: "cannot be ruled out" is left alone), a negation in a leading topic part before
the last colon ("Patients not on statins: does X ...?") or inside a subordinate clause
("... in patients who did not respond?", "... when they do not understand?").
"""

from __future__ import annotations

import re

__all__ = ["is_negated_question"]

_SUBORDINATE = re.compile(r"\b(?:who|whom|whose|which|where|when|whenever|if|whether|unless)\b")
_SKIP = re.compile(
    r"\bno\s+longer\b|\bnot\s+only\b|\bwhether\s+or\s+not\b|\bor\s+not\b|\bcan\s*not\b"
    r"|\bnon\b|\bnon-",
)
_NEGATION = re.compile(
    r"\b(?:not|never)\b|n't\b"
    r"|\bno\s+(?!one\b|doubt\b)[a-z]"
    r"|\bwithout\s+(?:any\s+)?(?:effects?|benefits?|impacts?|influences?|differences?|risks?"
    r"|roles?|associations?)\b",
)


def is_negated_question(question: str) -> bool:
    """True when ``question`` asks whether something does *not* hold.

    >>> is_negated_question("Does metformin not affect cancer risk?")
    True
    >>> is_negated_question("Is there no difference between the two stents?")
    True
    >>> is_negated_question("Is non-small cell lung cancer more common in smokers?")
    False
    >>> is_negated_question("Does X help patients who did not respond to Y?")
    False
    """
    text = " ".join(question.split()).lower().replace("\u2019", "'")
    clause = text.rsplit(":", 1)[-1] if ":" in text else text
    clause = _SKIP.sub(" ", clause)
    m = _NEGATION.search(clause)
    if m is None:
        return False
    return _SUBORDINATE.search(clause, 0, m.start()) is None
