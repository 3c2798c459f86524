"""Sentence splitting of biomedical prose and report markdown (deepcritical.text.sentences)."""

from __future__ import annotations

import itertools
import json
import random
import re
from pathlib import Path

import pytest

from deepcritical.text.sentences import (
    CITATION_GROUP,
    markdown_blocks,
    plain_sentence_spans,
    rebuild_block,
    rebuild_text,
    sentence_spans,
    sentence_tiles,
    split_paragraph_sentences,
    split_sentences,
)


def _no_text_lost(text: str, parts: list[str]) -> None:
    assert re.sub(r"\s", "", "".join(parts)) == re.sub(r"\s", "", text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Metformin reduced risk [E3]. It also lowered HbA1c [E3, E7].",
            ["Metformin reduced risk [E3].", "It also lowered HbA1c [E3, E7]."],
        ),
        (
            "Metformin reduced risk. [E3] It also lowered HbA1c. [E3, E7]",
            ["Metformin reduced risk. [E3]", "It also lowered HbA1c. [E3, E7]"],
        ),
        ("It works.[E1] Next claim.", ["It works.[E1]", "Next claim."]),
        ("Risk fell in 2019.[E3] Next claim.", ["Risk fell in 2019.[E3]", "Next claim."]),
        ("Risk fell by 3.5. [E3, E4] Next.", ["Risk fell by 3.5. [E3, E4]", "Next."]),
        ("It works. [E1][E2] Next claim.", ["It works. [E1][E2]", "Next claim."]),
        ("It works. [E1]. Next claim.", ["It works. [E1].", "Next claim."]),
        ("It works. [PMID: 123] Next claim.", ["It works. [PMID: 123]", "Next claim."]),
        ("It works. [1-3] Next claim.", ["It works. [1-3]", "Next claim."]),
        ("It works. [see E7] Next claim.", ["It works. [see E7]", "Next claim."]),
        ("It works! [E2] Does it? [E4] Yes.", ["It works! [E2]", "Does it? [E4]", "Yes."]),
    ],
)
def test_citation_markers_stay_with_the_sentence_they_follow(
    text: str, expected: list[str]
) -> None:
    assert split_sentences(text) == expected


@pytest.mark.parametrize(
    "sentence",
    [
        "Smith et al. found a lower incidence of dementia in users [E1].",
        "Other designs, e.g. nested case-control studies, agreed [E2].",
        "The effect was modest, i.e. a 10% reduction [E2].",
        "The fractures were typed, i. e., for the detection of dislocation.",
        "Metformin vs. sulfonylurea users were compared [E4].",
        "As shown in Fig. 2 and Figs. 3-4, the curves separate [E5].",
        "The difference was significant (p < 0.05) [E6].",
        "The hazard ratio was 0.78 (95% CI 1.2-3.4; P = .006) [E7].",
        "Risk fell by approx. 30% in treated mice [E8].",
        "Survival was ca. 12 weeks longer [E8].",
        "Infection with E. coli was assessed after 10 mg/kg i.p. dosing [E9].",
        "Patients received 500 mg b.i.d. for 12 wk. in the trial [E9].",
        "See Suppl. Table 3 for details.",
        "Retention may suit non-S. aureus infection [E2].",
        "As shown by Smith et al. [E3] in mice, it works.",
    ],
)
def test_abbreviations_and_statistics_do_not_split(sentence: str) -> None:
    text = f"First sentence here. {sentence} Last sentence here."
    assert split_sentences(text) == ["First sentence here.", sentence, "Last sentence here."]


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("Yes. No. Maybe.", 3),
        ("Cells were treated for 24 h. Cells were then fixed.", 2),
        ("mTOR inhibition reduced growth [E1]. p53 was upregulated [E2].", 2),
        ("Results were given in Table 2. Next claim follows.", 2),
        ("Data were described by Smith et al. The next study disagreed.", 2),
    ],
)
def test_real_sentence_ends_still_split(text: str, count: int) -> None:
    assert len(split_sentences(text)) == count


def test_soft_wraps_join_and_blank_lines_separate() -> None:
    text = "Metformin reduced\nrisk in a cohort [E1]. Next one\n\nOBJECTIVE: To assess X"
    assert split_sentences(text) == [
        "Metformin reduced\nrisk in a cohort [E1].",
        "Next one",
        "OBJECTIVE: To assess X",
    ]


def test_markdown_lines_are_boundaries_and_prefixes_stay_with_their_text() -> None:
    text = (
        "Intro claim.\n- bullet one [E1]. Second part [E2].\n- bullet two [E2]\n"
        "  continued here.\n## Heading\nText [E3]."
    )
    assert split_sentences(text) == [
        "Intro claim.",
        "- bullet one [E1].",
        "Second part [E2].",
        "- bullet two [E2]\n  continued here.",
        "## Heading",
        "Text [E3].",
    ]


def test_split_paragraph_sentences_keeps_bullets_and_headings_whole() -> None:
    text = (
        "## Efficacy\n\nMetformin helped [E1]. Not always [E2].\n\n"
        "- First point. With two sentences [E3].\n"
        "1. Numbered point [E4].\n"
        "> Quoted claim. Second quoted.\n"
        "| a | b |\n---\n```\ncode. here\n\nmore\n```\nEnd."
    )
    assert split_paragraph_sentences(text) == [
        "## Efficacy",
        "Metformin helped [E1].",
        "Not always [E2].",
        "- First point. With two sentences [E3].",
        "1. Numbered point [E4].",
        "> Quoted claim.",
        "Second quoted.",
        "| a | b |",
        "---",
        "```\ncode. here\n\nmore\n```",
        "End.",
    ]


def test_markdown_blocks_offsets() -> None:
    text = "Para one\ncontinued.\n\n  - item [E1]\n### Head\n"
    blocks = markdown_blocks(text)
    assert [(b.kind, text[b.start : b.end], text[b.body_start : b.end]) for b in blocks] == [
        ("paragraph", "Para one\ncontinued.", "Para one\ncontinued."),
        ("bullet", "- item [E1]", "item [E1]"),
        ("heading", "### Head", "### Head"),
    ]


@pytest.mark.parametrize("text", ["", "   ", "\n\n \n"])
def test_empty_text_has_no_sentences(text: str) -> None:
    assert split_sentences(text) == []
    assert split_paragraph_sentences(text) == []


def test_spans_are_ordered_stripped_and_cover_the_text() -> None:
    text = "  A claim [E1].  B claim. [E2]\n\n- c [E3]\n# H\n"
    spans = sentence_spans(text)
    assert spans == sorted(spans)
    assert all(e1 <= b2 for (_, e1), (b2, _) in itertools.pairwise(spans))
    assert all(text[b:e] == text[b:e].strip() for b, e in spans)
    _no_text_lost(text, [text[b:e] for b, e in spans])


def _random_prose(rng: random.Random) -> str:
    words = ["metformin", "reduced", "risk", "in", "cohorts", "AMPK", "p53", "mice", "(n = 40)"]
    fragments = ["et al.", "e.g.", "i.e.", "vs.", "Fig. 2", "p < 0.05", "95% CI 1.2-3.4"]
    markers = ["[E1]", "[E2, E7]", "[PMID: 123]", "[1-3]", "[E4][E5]", "(PMID: 9)"]
    paragraphs = []
    for _ in range(rng.randint(1, 3)):
        sentences = []
        for _ in range(rng.randint(1, 5)):
            body = [rng.choice(words) for _ in range(rng.randint(2, 8))]
            if rng.random() < 0.4:
                body.insert(rng.randint(0, len(body)), rng.choice(fragments))
            sentence = " ".join(body).capitalize()
            marker = rng.choice(markers)
            sentence = rng.choice(
                [f"{sentence} {marker}.", f"{sentence}. {marker}", f"{sentence}.", f"{sentence}?"]
            )
            sentences.append(sentence)
        paragraphs.append(" ".join(sentences))
    return "\n\n".join(paragraphs)


def test_random_prose_loses_nothing_and_never_splits_a_marker() -> None:
    rng = random.Random(20240611)
    for _ in range(150):
        text = _random_prose(rng)
        parts = split_sentences(text)
        _no_text_lost(text, parts)
        assert parts == split_sentences(text)  # deterministic
        markers = [m.group() for m in CITATION_GROUP.finditer(text)]
        found = [m.group() for part in parts for m in CITATION_GROUP.finditer(part)]
        assert found == markers, text
        for part in parts:  # a marker never opens a sentence
            assert not re.match(r"\[|\(PMID", part), (part, text)


def test_pubmedqa_abstracts_lose_no_text(pubmedqa_dir: Path) -> None:
    lines = (pubmedqa_dir / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:80]
    parts: list[str] = []
    for line in lines:
        record = json.loads(line)
        text = "\n\n".join(s["text"] for s in record["abstract_sections"])
        sentences = split_sentences(text)
        _no_text_lost(text, sentences)
        parts += sentences
    assert len(parts) > 80 * 5  # abstracts have several sentences each
    # a spurious split starts a "sentence" in lower case; the sources' own quirks
    # ("p53 was...", "i) first aim;") leave a few
    lower = [p for p in parts if p[0].islower()]
    assert len(lower) < 0.02 * len(parts), lower


def test_plain_text_reads_no_markdown_and_every_line_is_a_paragraph() -> None:
    text = "1. DBE is safe e.g. in adults.\n- Not a list item. Second\nline [E2]."
    assert [text[b:e] for b, e in plain_sentence_spans(text)] == [
        "1. DBE is safe e.g. in adults.",
        "- Not a list item.",
        "Second",
        "line [E2].",
    ]
    assert plain_sentence_spans("  \n\n ") == []


@pytest.mark.parametrize(
    "text", ["", "   ", "One. Two [E1]. [E2] Three.  ", "  Lead. Then. ", "No stop"]
)
def test_sentence_tiles_join_back_to_the_text(text: str) -> None:
    tiles = sentence_tiles(text)
    assert "".join(tiles) == text
    assert [t.strip() for t in tiles if t.strip()] == [
        text[b:e] for b, e in plain_sentence_spans(text)
    ]


def test_rebuild_keeps_markdown_around_removed_sentences() -> None:
    text = "Intro. Drop me.\n\n- Item one.\n  - Nested. Gone.\n\nLast.\n"
    blocks = markdown_blocks(text)
    pieces: list[str | None] = []
    for block in blocks:
        units = [(b, e) for b, e in sentence_spans(text) if block.start <= b < block.end]
        kept = [(e, text[b:e].upper()) for b, e in units if text[b:e] not in ("Drop me.", "Gone.")]
        pieces.append(rebuild_block(text, block, units, kept) if kept else None)
    assert rebuild_text(text, blocks, pieces, keep_tail=False) == (
        "INTRO.\n\n- ITEM ONE.\n  - NESTED.\n\nLAST.\n"
    )
    pieces[-1] = None  # the last block removed: its trailing newline goes only without keep_tail
    assert rebuild_text(text, blocks, pieces, keep_tail=False).endswith("NESTED.")
    assert rebuild_text(text, blocks, pieces, keep_tail=True).endswith("NESTED.\n")
    assert rebuild_text(text, blocks, [None] * len(blocks), keep_tail=True) == ""
