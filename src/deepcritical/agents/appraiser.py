"""The study record of one evidence item read by a model: structured extraction of
population, setting, sample size, intervention and comparator, outcomes, effect estimates and
follow-up (``prompts/appraiser.md``), each value with a verbatim quote.

The model's quotes are located in the item's abstract or full-text passages
(:func:`~deepcritical.evidence.study_extraction.locate_quote`, exact up to white space) and
then pass the same verbatim check as the rules' records
(:func:`~deepcritical.evidence.study_extraction.checked_record`): a value whose quote is
not found, or that is not in its quote, is dropped and counted in ``values_dropped``, never
kept. What a model does not read (randomisation, blinding, single or multiple centres,
dose-response: the certainty rules' cues) is taken from the rules' record of the same item.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from deepcritical.evidence.study_extraction import checked_record, extract_study, locate_quote
from deepcritical.llm.config import LLMConfig
from deepcritical.llm.fencing import fence_evidence, new_fence
from deepcritical.llm.templates import render_prompt
from deepcritical.models import EffectEstimate, Evidence, ExtractedValue, StudyRecord

__all__ = ["LLMStudyExtractor", "ModelEffect", "QuotedValue", "StudyExtraction", "to_record"]


class QuotedValue(BaseModel):
    """A value as written in the source and the verbatim passage that contains it."""

    value: str = Field(max_length=300)
    quote: str = Field(max_length=600)


class ModelEffect(BaseModel):
    """An effect estimate as written, with the verbatim passage that contains all of it."""

    measure: str = Field(max_length=40)
    value: str = Field(max_length=40)
    ci_low: str | None = Field(default=None, max_length=40)
    ci_high: str | None = Field(default=None, max_length=40)
    p_value: str | None = Field(default=None, max_length=40)
    quote: str = Field(max_length=600)


class StudyExtraction(BaseModel):
    """The model's output (see ``prompts/appraiser.md``); every field optional."""

    population: QuotedValue | None = None
    setting: QuotedValue | None = None
    sample_size: QuotedValue | None = None
    analysed: QuotedValue | None = None
    intervention: QuotedValue | None = None
    comparator: QuotedValue | None = None
    outcomes: list[QuotedValue] = Field(default_factory=list, max_length=10)
    effects: list[ModelEffect] = Field(default_factory=list, max_length=20)
    follow_up: QuotedValue | None = None


_SINGLE = ("population", "setting", "sample_size", "analysed", "intervention", "comparator")


class LLMStudyExtractor:
    """Reads an item's study record with a model (see the module docstring).

    Args:
        config: model, retries, timeout, usage tracker.
        snippet_chars: characters of the item's content shown to the model (its abstract).
    """

    role = "appraiser"

    def __init__(self, config: LLMConfig, snippet_chars: int = 4000) -> None:
        self.snippet_chars = snippet_chars
        self._agent = config.structured(self.role, StudyExtraction)

    async def extract(self, evidence: Evidence) -> StudyRecord:
        """The item's study record, every value proven verbatim (``method="model"``).

        Raises:
            AgentOutputError: invalid output after the retries.
            AgentModelError: the model call failed or timed out.
        """
        fence = new_fence()
        instructions = render_prompt("appraiser", untrusted=fence.note())
        prompt = "Source:\n\n" + fence_evidence([evidence], fence, self.snippet_chars)
        output = await self._agent.run(instructions, prompt, None)
        return to_record(output, evidence)


def _value(evidence: Evidence, quoted: QuotedValue | None) -> tuple[ExtractedValue | None, int]:
    if quoted is None:
        return None, 0
    proof = locate_quote(evidence, quoted.quote)
    if proof is None:
        return None, 1
    return ExtractedValue(value=quoted.value.strip(), proof=proof), 0


def to_record(output: StudyExtraction, evidence: Evidence) -> StudyRecord:
    """The model's output as a checked :class:`StudyRecord` of ``evidence``: quotes located
    in its text, unproven values dropped and counted; cues taken from the rules' record."""
    rules = extract_study(evidence)
    dropped = 0
    fields: dict[str, object] = {}
    for name in (*_SINGLE, "follow_up"):
        value, lost = _value(evidence, getattr(output, name))
        fields[name] = value
        dropped += lost
    outcomes = []
    for o in output.outcomes:
        value, lost = _value(evidence, o)
        dropped += lost
        outcomes += [value] if value is not None else []
    effects = []
    for e in output.effects:
        proof = locate_quote(evidence, e.quote)
        if proof is None:
            dropped += 1
            continue
        effects.append(
            EffectEstimate(
                measure=e.measure.strip() or "estimate",
                value=e.value.strip(),
                ci_low=e.ci_low.strip() if e.ci_low else None,
                ci_high=e.ci_high.strip() if e.ci_high else None,
                p_value=e.p_value.strip() if e.p_value else None,
                proof=proof,
            )
        )
    record = StudyRecord(
        design=rules.design,
        outcomes=outcomes,
        effects=effects,
        randomised=rules.randomised,
        blinded=rules.blinded,
        single_centre=rules.single_centre,
        multicentre=rules.multicentre,
        dose_response=rules.dose_response,
        values_dropped=dropped,
        method="model",
        full_text=evidence.full_text,
        **fields,
    )
    return checked_record(record, evidence)
