"""Revision instructions read by rules, without a model (issue 32 item 5): each phrase maps to
its report preference or design filter, parts combine, and anything else is refused with a
message that lists what works offline (and says a model would be needed after an LLM run)."""

from __future__ import annotations

import pytest

from deepcritical.evidence.design import DesignGroup
from deepcritical.models import ReportPreferences
from deepcritical.writing.revision_instructions import (
    MAX_INSTRUCTION_CHARS,
    PATIENTS,
    RevisionError,
    RevisionRequest,
    parse_instruction,
)


@pytest.mark.parametrize(
    ("instruction", "expected"),
    [
        ("shorter", RevisionRequest(length="brief")),
        ("Make it more concise, please", RevisionRequest(length="brief")),
        ("brief", RevisionRequest(length="brief")),
        ("longer", RevisionRequest(length="detailed")),
        ("in more detail", RevisionRequest(length="detailed")),
        ("for patients", RevisionRequest(audience=PATIENTS)),
        ("For the public", RevisionRequest(audience=PATIENTS)),
        ("in plain language", RevisionRequest(audience=PATIENTS)),
        ("for clinicians", RevisionRequest(audience="clinicians")),
        ("for scientists", RevisionRequest(audience="")),
        ("focus on harms", RevisionRequest(focus="harms")),
        ("Add a section on harms in the elderly", RevisionRequest(focus="harms in the elderly")),
        ("more on dosing", RevisionRequest(focus="dosing")),
        ("only randomised trials", RevisionRequest(designs=(DesignGroup.RCT,))),
        ("only RCTs", RevisionRequest(designs=(DesignGroup.RCT,))),
        ("randomized controlled trials only", RevisionRequest(designs=(DesignGroup.RCT,))),
        ("only systematic reviews", RevisionRequest(designs=(DesignGroup.SYSTEMATIC,))),
        ("only clinical trials", RevisionRequest(designs=(DesignGroup.RCT, DesignGroup.TRIAL))),
        (
            "only observational studies",
            RevisionRequest(designs=(DesignGroup.OBSERVATIONAL,)),
        ),
    ],
)
def test_each_phrase_maps_to_its_preference_or_filter(
    instruction: str, expected: RevisionRequest
) -> None:
    assert parse_instruction(instruction) == expected


def test_parts_combine_and_a_focus_keeps_only_its_topic() -> None:
    request = parse_instruction("Focus on harms and make it shorter, for patients, only RCTs")
    assert request == RevisionRequest(
        length="brief", audience=PATIENTS, focus="harms", designs=(DesignGroup.RCT,)
    )
    before = ReportPreferences(audience="clinicians", length="detailed", focus="dosing")
    assert request.apply(before) == ReportPreferences(
        audience=PATIENTS, length="brief", focus="harms"
    )
    assert parse_instruction("longer").apply(before) == before.model_copy(
        update={"length": "detailed"}
    )
    assert parse_instruction("shorter").apply(before).focus == "dosing"  # the rest stays


@pytest.mark.parametrize(
    ("instruction", "says"),
    [
        ("translate it into French", "the words 'translate into french' are not understood"),
        ("shorter and funnier", "the words 'funnier' are not understood"),
        ("please", "it is not understood"),
        ("shorter and longer", "two lengths at once"),
        ("for patients, for clinicians", "two audiences at once"),
        (" \x00 \n", "the instruction is empty"),
        ("shorter " * 60, f"the limit is {MAX_INSTRUCTION_CHARS}"),
    ],
)
def test_anything_else_is_refused_clearly(instruction: str, says: str) -> None:
    with pytest.raises(RevisionError, match=says) as caught:
        parse_instruction(instruction)
    if "not understood" in says:
        message = str(caught.value)
        for works in ('"shorter"', '"for patients"', '"focus on X"', '"only randomised trials"'):
            assert works in message
        assert "model" not in message.split("understands")[1]


def test_after_a_model_run_the_refusal_says_a_model_would_be_needed() -> None:
    with pytest.raises(RevisionError, match=r"written with a model \(openai:gpt-4o\)"):
        parse_instruction("translate it into French", llm="openai:gpt-4o")
