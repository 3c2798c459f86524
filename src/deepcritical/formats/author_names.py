"""Authors' names of a record, parsed for the reference-manager export (:func:`parse_author`).

PubMed's ``"Surname Initials"`` (``"van der Berg JA Jr"``) becomes family ``van der Berg``,
given ``J. A.``, suffix ``Jr``; ``"Family, Given"`` is split at its comma; every other name,
organisations included (and every author of a trial record, the trial's sponsor), is kept
whole as a literal name. A name is never guessed into parts. Each format writes a
:class:`Name` its own way (RIS: the name without commas; BibTeX: braced, so it is one name;
CSL: ``{"literal": ...}``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from deepcritical.formats.export_text import clean_text

__all__ = ["Name", "parse_author"]


@dataclass(frozen=True)
class Name:
    """An author's name: ``family``, ``given`` (initials as ``"J. A."`` or given names) and
    ``suffix`` (``"Jr"``), or ``literal`` alone for a name kept whole (an organisation)."""

    family: str = ""
    given: str = ""
    suffix: str = ""
    literal: str = ""


_PUBMED_NAME = re.compile(
    r"^(?P<family>[^\W\d_][\w'’.\- ]*?)\s+(?P<initials>[A-Z]{1,4})"
    r"(?:\s+(?P<suffix>Jr|Sr|[IVX]{1,4}|2nd|3rd|[4-9]th))?$"
)
_ORGANISATION_WORDS = frozenset(
    {
        "ag",
        "agency",
        "alliance",
        "association",
        "board",
        "center",
        "centre",
        "collaboration",
        "collaborative",
        "committee",
        "company",
        "consortium",
        "corp",
        "corporation",
        "council",
        "department",
        "federation",
        "foundation",
        "gmbh",
        "group",
        "health",
        "hospital",
        "inc",
        "institut",
        "institute",
        "institutes",
        "investigators",
        "laboratories",
        "limited",
        "llc",
        "ltd",
        "ministry",
        "network",
        "organisation",
        "organization",
        "pharma",
        "pharmaceutical",
        "pharmaceuticals",
        "plc",
        "school",
        "service",
        "services",
        "society",
        "srl",
        "study",
        "team",
        "trialists",
        "trust",
        "universidad",
        "university",
        "universität",
        "université",
        "working",
        "and",
        "&",
        "of",
        "for",
        "the",
    }
)


def _is_organisation(name: str) -> bool:
    words = {w.strip(".,()").lower() for w in name.split()}
    return bool(words & _ORGANISATION_WORDS)


def _initials(letters: str) -> str:
    return " ".join(f"{letter}." for letter in letters)


def parse_author(name: str, *, organisation: bool = False) -> Name:
    """An author string of a record as a :class:`Name`.

    PubMed's ``"Surname Initials [Suffix]"`` (``"Smith JA"``, ``"van der Berg A Jr"``) gives
    family, initials (``"J. A."``) and suffix; ``"Family, Given"`` is split at its one comma;
    anything else (one word, ``"Given Family"`` of OpenAlex or the web, an organisation:
    a name with a word such as *group*, *consortium*, *university*, *Inc*, *of*) is kept whole
    as ``literal``, as is every name when ``organisation`` is true. Control characters and
    runs of white space are cleaned first.
    """
    text = clean_text(name)
    if organisation or not text or _is_organisation(text):
        return Name(literal=text)
    match = _PUBMED_NAME.match(text)
    if match and len(match["family"].split()) <= 4:
        return Name(
            family=match["family"].strip(),
            given=_initials(match["initials"]),
            suffix=match["suffix"] or "",
        )
    if text.count(",") == 1:
        family, given = (part.strip() for part in text.split(","))
        if family and given:
            return Name(family=family, given=given)
    return Name(literal=text)
