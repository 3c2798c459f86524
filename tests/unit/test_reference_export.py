"""The reference-manager export (:mod:`deepcritical.formats.references` and its writers):
every format parsed back with a library that reads it (rispy, bibtexparser, json +
citeproc-py rendering a bundled CSL style) gives the same references in the same order,
identifiers kept, keys unique, and no record's text can break the file or add a field."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import rispy
from bibtexparser.entrypoint import parse_string
from bibtexparser.library import Library
from bibtexparser.middlewares import LatexDecodingMiddleware
from bibtexparser.middlewares.names import SeparateCoAuthors, SplitNameParts
from citeproc import (
    Citation as CslCitation,
)
from citeproc import (
    CitationItem,
    CitationStylesBibliography,
    CitationStylesStyle,
    formatter,
)
from citeproc.source.json import CiteProcJSON
from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec, get_default_latex_context_db

from deepcritical.formats.author_names import Name, parse_author
from deepcritical.formats.bibtex import to_bibtex
from deepcritical.formats.citation_records import NO_TITLE_NOTE, citation_keys
from deepcritical.formats.csl_json import to_csl_json
from deepcritical.formats.references import EXPORT_FORMATS, export_references
from deepcritical.formats.ris import to_ris
from deepcritical.models import (
    Citation,
    Evidence,
    Reference,
    ReportMetadata,
    ReportSection,
    ResearchReport,
    RunResult,
    Screening,
    StudyDesign,
)

SPECIALS_TITLE = "Metformin and {cancer}: 100% & more_ #1 $x^2~ \\alpha"
INJECTION = "}, title={x}, note={pwned"
HOSTILE_TITLE = f"{SPECIALS_TITLE} {INJECTION}"
CONTROL_TITLE = "Metformin\x00 and\x1b[31m kidneys\nTY  - JOUR\r\nER  - \u2028N1  - injected"
CLEAN_CONTROL_TITLE = "Metformin and[31m kidneys TY - JOUR ER - N1 - injected"
DERIVED = "To assess metformin use and cancer incidence in a cohort"
WEB_URL = "https://example.org/metformin?a=1&b=2"
TRIAL_URL = "https://clinicaltrials.gov/study/NCT01234567"


def _evidence(n: int, citation: Citation, **extra: Any) -> Evidence:
    return Evidence(id=f"E{n}", content=f"Content {n}.", citation=citation, **extra)


def _run() -> RunResult:
    pubmed = Citation(
        source="pubmed",
        id="111",
        title=HOSTILE_TITLE,
        authors=["Müller K", "van der Berg JA Jr", "WHO Study Group"],
        journal="BMJ",
        year=2020,
        date="2020-03-14",
        doi="10.1136/bmj.m111",
        url="https://pubmed.ncbi.nlm.nih.gov/111/",
        pmid="111",
        pmcid="PMC222",
    )
    trial = Citation(
        source="trials",
        id="NCT01234567",
        title="A randomised trial of metformin in prostate cancer",
        authors=["Pfizer"],
        year=2021,
        url=TRIAL_URL,
        nct_id="NCT01234567",
    )
    web = Citation(source="web", id=WEB_URL, title="Metformin facts", url=WEB_URL)
    untitled = Citation(source="local", id="333", derived_title=DERIVED, pmid="333", year=2019)
    same_key = Citation(
        source="pubmed",
        id="444",
        title=CONTROL_TITLE,
        authors=["Muller K"],
        year=2020,
        pmid="444",
    )
    evidence = [
        _evidence(1, pubmed, study_design=StudyDesign.COHORT),
        _evidence(2, trial),
        _evidence(3, web),
        _evidence(4, untitled),
        _evidence(5, same_key, screening=Screening.OFF_TOPIC),
    ]
    report = ResearchReport(
        title="Metformin review",
        research_question="Does metformin lower cancer risk?",
        executive_summary="A web page says so [E3]. A cohort agrees [E1].",
        findings=[ReportSection(heading="Trials", content="A trial [E2] and a study [E4].")],
        references=[
            Reference(evidence_id="E1", citation=pubmed, study_design=StudyDesign.COHORT),
            Reference(evidence_id="E2", citation=trial),
            Reference(evidence_id="E3", citation=web),
            Reference(evidence_id="E4", citation=untitled),
            Reference(evidence_id="E1", citation=pubmed),  # listed twice: exported once
        ],
        metadata=ReportMetadata(),
    )
    return RunResult(report=report, evidence=evidence)


REPORT_ORDER = ["Metformin facts", HOSTILE_TITLE, "A randomised trial", ""]
"""The titles in the report's reference order: [1] is E3, cited first; the untitled record
is exported without a title (its derived title is display data only)."""


def _starts(titles: list[str]) -> None:
    assert len(titles) == len(REPORT_ORDER)
    for title, expected in zip(titles, REPORT_ORDER, strict=True):
        assert title.startswith(expected), (title, expected)


def _no_control_characters(text: str) -> None:
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]", text), text


# ---------------------------------------------------------------------------------- RIS


def test_ris_reads_back_with_rispy_in_report_order_with_every_identifier() -> None:
    text = export_references(_run(), "ris")
    _no_control_characters(text)
    for line in text.splitlines():
        assert not line or re.match(r"^[A-Z][A-Z0-9]  - ", line), line
    entries = rispy.loads(text)
    _starts([e.get("title", "") for e in entries])
    assert [e["type_of_reference"] for e in entries] == ["ELEC", "JOUR", "RPRT", "JOUR"]
    web, article, trial, untitled = entries
    assert article["title"] == HOSTILE_TITLE
    assert article["authors"] == ["Müller, K.", "van der Berg, J. A., Jr", "WHO Study Group"]
    assert article["secondary_title"] == "BMJ"
    assert (article["year"], article["date"]) == ("2020", "2020/03/14/")
    assert article["doi"] == "10.1136/bmj.m111"
    assert article["urls"] == ["https://pubmed.ncbi.nlm.nih.gov/111/"]
    assert article["accession_number"] == "111"
    assert article["custom2"] == "PMC222"
    assert "PMID: 111" in article["notes"]
    assert "PMCID: PMC222" in article["notes"]
    assert any(
        "reference [2] (evidence E1, study design: cohort study)" in n for n in article["notes"]
    )
    assert trial["accession_number"] == "NCT01234567"
    assert trial["urls"] == [TRIAL_URL]
    assert trial["authors"] == ["Pfizer"]
    assert "ClinicalTrials.gov: NCT01234567" in trial["notes"]
    assert web["urls"] == [WEB_URL]
    assert untitled["accession_number"] == "333"
    assert NO_TITLE_NOTE in untitled["notes"]
    assert "title" not in untitled  # a title cut from the text is never exported
    assert len({e["id"] for e in entries}) == 4


def test_ris_text_cannot_start_a_line() -> None:
    text = export_references(_run(), "ris", scope="evidence")
    _no_control_characters(text)
    entries = rispy.loads(text)
    assert len(entries) == 5
    assert entries[4]["title"] == CLEAN_CONTROL_TITLE
    assert "notes" in entries[4]
    assert all(not n.startswith("injected") for n in entries[4]["notes"])
    assert text.count("ER  - ") == 5


# ------------------------------------------------------------------------------- BibTeX


def _decoder() -> LatexNodes2Text:
    """pylatexenc's LaTeX-to-text with the text commands the export writes for braces and
    ``^`` (pylatexenc drops the first two and maps the third to a modifier letter)."""
    db = get_default_latex_context_db()
    db.add_context_category(
        "deepcritical-export",
        prepend=True,
        macros=[
            MacroTextSpec("textbraceleft", "{"),
            MacroTextSpec("textbraceright", "}"),
            MacroTextSpec("textasciicircum", "^"),
        ],
    )
    return LatexNodes2Text(latex_context=db)


def _parse_bibtex(text: str, *, decode: bool) -> Library:
    extra = [LatexDecodingMiddleware(decoder=_decoder())] if decode else []
    library = parse_string(text, append_middleware=extra)
    assert library.failed_blocks == []
    return library


def test_bibtex_reads_back_with_bibtexparser_in_report_order_with_every_identifier() -> None:
    text = export_references(_run(), "bibtex")
    _no_control_characters(text)
    raw = _parse_bibtex(text, decode=False)
    decoded = _parse_bibtex(text, decode=True)
    entries = decoded.entries
    assert len(entries) == 4
    _starts([e.fields_dict["title"].value if "title" in e.fields_dict else "" for e in entries])
    assert [e.entry_type for e in entries] == ["misc", "article", "techreport", "article"]
    keys = [e.key for e in entries]
    assert len(set(keys)) == 4
    assert all(re.fullmatch(r"[a-z0-9]+", k) for k in keys)
    assert keys[1] == "muller2020metformin"
    allowed = {
        "author",
        "title",
        "journal",
        "institution",
        "type",
        "number",
        "howpublished",
        "year",
        "date",
        "doi",
        "url",
        "pmid",
        "pmcid",
        "note",
    }
    for entry in raw.entries:
        assert set(entry.fields_dict) <= allowed, entry.fields_dict
    _, article, trial, untitled = entries
    fields = {k: f.value for k, f in article.fields_dict.items()}
    assert fields["title"] == HOSTILE_TITLE
    assert fields["journal"] == "BMJ"
    assert (fields["year"], fields["date"]) == ("2020", "2020-03-14")
    assert (fields["pmid"], fields["pmcid"]) == ("111", "PMC222")
    assert "reference [2] (evidence E1" in fields["note"]
    raw_web, raw_article, raw_trial = (e.fields_dict for e in raw.entries[:3])
    assert raw_article["doi"].value == "10.1136/bmj.m111"  # verbatim fields: read raw
    assert raw_article["url"].value == "https://pubmed.ncbi.nlm.nih.gov/111/"
    assert raw_trial["url"].value == TRIAL_URL
    assert raw_web["url"].value == WEB_URL
    assert raw_article["author"].value == (
        "Müller, K. and van der Berg, Jr, J. A. and {WHO Study Group}"
    )
    assert "pwned" not in {f.key for f in raw.entries[1].fields}
    assert trial.fields_dict["number"].value == "NCT01234567"
    assert "ClinicalTrials.gov: NCT01234567" in trial.fields_dict["note"].value
    assert untitled.fields_dict["pmid"].value == "333"
    assert NO_TITLE_NOTE in untitled.fields_dict["note"].value
    assert "title" not in untitled.fields_dict


def test_bibtex_names_split_as_bibtex_reads_them() -> None:
    text = to_bibtex([_run().evidence[0].citation])
    library = parse_string(text, append_middleware=[SeparateCoAuthors(), SplitNameParts()])
    names = library.entries[0].fields_dict["author"].value
    assert [(n.last, n.first, n.von, n.jr) for n in names] == [
        (["Müller"], ["K."], [], []),
        (["Berg"], ["J.", "A."], ["van", "der"], ["Jr"]),
        (["{WHO Study Group}"], [], [], []),
    ]


def test_every_brace_in_the_bibtex_file_is_balanced() -> None:
    text = export_references(_run(), "bibtex", scope="evidence")
    depth = 0
    for ch in text:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0
    assert depth == 0
    assert "\\{" not in text
    assert "\\}" not in text


# ----------------------------------------------------------------------------- CSL-JSON


def _bibliography(items: list[dict[str, Any]]) -> list[str]:
    """``items`` rendered by citeproc-py with its bundled Harvard style (plain text)."""
    style = CitationStylesStyle("harvard-cite-them-right", validate=False)
    bibliography = CitationStylesBibliography(style, CiteProcJSON(items), formatter.plain)
    for item in items:
        bibliography.register(CslCitation([CitationItem(item["id"])]))
    return [str(entry) for entry in bibliography.bibliography()]


def test_csl_json_is_valid_csl_rendered_by_citeproc_py() -> None:
    text = export_references(_run(), "csljson")
    items: list[dict[str, Any]] = json.loads(text)
    _starts([i.get("title", "") for i in items])
    assert [i["type"] for i in items] == ["webpage", "article-journal", "report", "article-journal"]
    assert len({i["id"] for i in items}) == 4
    web, article, trial, untitled = items
    assert article["author"] == [
        {"family": "Müller", "given": "K."},
        {"family": "van der Berg", "given": "J. A.", "suffix": "Jr"},
        {"literal": "WHO Study Group"},
    ]
    assert article["container-title"] == "BMJ"
    assert article["issued"] == {"date-parts": [[2020, 3, 14]]}
    assert (article["DOI"], article["PMID"], article["PMCID"]) == (
        "10.1136/bmj.m111",
        "111",
        "PMC222",
    )
    assert article["URL"] == "https://pubmed.ncbi.nlm.nih.gov/111/"
    assert trial["number"] == "NCT01234567"
    assert "ClinicalTrials.gov: NCT01234567" in trial["note"]
    assert web["URL"] == WEB_URL
    assert NO_TITLE_NOTE in untitled["note"]
    assert "title" not in untitled
    rendered = _bibliography(items)
    assert len(rendered) == 4
    joined = "\n".join(rendered)
    for needle in ("Müller, K.", "WHO Study Group", "Pfizer", "Metformin facts", "(2019)"):
        assert needle in joined, needle
    assert "https://doi.org/10.1136/bmj.m111" in joined


# -------------------------------------------------------------------------- both scopes


@pytest.mark.parametrize("fmt", EXPORT_FORMATS)
def test_the_evidence_scope_holds_every_item_with_unique_keys(fmt: Any) -> None:
    text = export_references(_run(), fmt, scope="evidence")
    if fmt == "ris":
        keys = [e["id"] for e in rispy.loads(text)]
    elif fmt == "bibtex":
        keys = [e.key for e in _parse_bibtex(text, decode=False).entries]
    else:
        keys = [i["id"] for i in json.loads(text)]
    assert len(keys) == 5
    assert len(set(keys)) == 5
    assert keys[0] == "muller2020metforminb" or keys[0] == "muller2020metformina"
    assert {keys[0], keys[4]} == {"muller2020metformina", "muller2020metforminb"}
    assert "E5" in text
    assert "off-topic" in text


def test_keys_are_stable_and_suffixed_in_order() -> None:
    a = Citation(source="pubmed", id="1", title="Effect of X", authors=["Smith J"], year=2020)
    b = a.model_copy(update={"id": "2"})
    c = Citation(source="pubmed", id="3", title="Effect", authors=["Smith J"], year=2020)
    keys = citation_keys([a, b, c])
    assert keys == ["smith2020effecta", "smith2020effectb", "smith2020effectc"]
    assert citation_keys([a, b, c]) == keys
    assert citation_keys([Citation(source="web", id="x")]) == ["anonnd"]


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Smith JA", Name(family="Smith", given="J. A.")),
        ("van der Berg A Jr", Name(family="van der Berg", given="A.", suffix="Jr")),
        ("García-López M", Name(family="García-López", given="M.")),
        ("O'Neil B", Name(family="O'Neil", given="B.")),
        ("Smith, John A.", Name(family="Smith", given="John A.")),
        ("World Health Organization", Name(literal="World Health Organization")),
        ("Novartis AG", Name(literal="Novartis AG")),
        ("Jane Smith", Name(literal="Jane Smith")),
        ("Smith\x00 JA", Name(family="Smith", given="J. A.")),
    ],
)
def test_author_names(text: str, name: Name) -> None:
    assert parse_author(text) == name


def test_empty_lists_and_bad_arguments() -> None:
    assert to_ris([]) == ""
    assert to_bibtex([]) == ""
    assert json.loads(to_csl_json([])) == []
    with pytest.raises(ValueError, match="unknown format"):
        export_references(_run(), "endnote")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown scope"):
        export_references(_run(), "ris", scope="all")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="labels"):
        to_ris([Citation(source="web", id="x")], labels=["a", "b"])
