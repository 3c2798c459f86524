"""The study record of one evidence item read by a model: structured extraction of
population, setting, sample size, intervention and comparator, outcomes, effect estimates and
follow-up (``prompts/appraiser.md``), each value with a verbatim quote.

The model's quotes are located in the item's abstract or full-text passages
(:func:`~deepcritical.evidence.proofs.locate_quote`, exact up to white space) and
then pass the same verbatim check as the rules' records
(:func:`~deepcritical.evidence.proofs.checked_record`): a value whose quote is
not found, or that is not in its quote, is dropped and counted in ``values_dropped``, never
kept. What a model does not read (randomisation, blinding, single or multiple centres,
dose-response: the certainty rules' cues) is taken from the rules' record of the same item.

The model's numbers are held to the rules' standard (:func:`reconcile`): a sample size whose
quote says the count was excluded, screened or identified, or an estimate outside its own CI,
is dropped and counted; a sample size, number analysed or estimate that disagrees with the
rules' reading of the same thing (the rules read one only when the text states it) is shown
as neither, and counted in ``StudyRecord.disagreements``; what the rules read and the model
missed is kept.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from deepcritical.evidence.effect_estimates import inside_ci
from deepcritical.evidence.proofs import checked_record, locate_quote
from deepcritical.evidence.sample_size import names_other_count
from deepcritical.evidence.study_extraction import extract_study
from deepcritical.llm.agent_config import LLMConfig
from deepcritical.llm.fencing import fence_evidence, new_fence
from deepcritical.llm.templates import render_prompt
from deepcritical.models import EffectEstimate, Evidence, ExtractedValue, StudyRecord, parse_number

__all__ = [
    "LLMStudyExtractor",
    "ModelEffect",
    "QuotedValue",
    "StudyExtraction",
    "reconcile",
    "to_record",
]


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
    for name in ("sample_size", "analysed"):
        count = fields[name]
        if isinstance(count, ExtractedValue) and names_other_count(count.proof.quote):
            fields[name] = None  # "12 patients were excluded": not the sample
            dropped += 1
    effects = []
    for e in output.effects:
        proof = locate_quote(evidence, e.quote)
        if proof is None or not inside_ci(e.value, e.ci_low, e.ci_high):
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
    model = StudyRecord(
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
    return reconcile(checked_record(model, evidence), rules)


def _number(value: ExtractedValue | None) -> float | None:
    return parse_number(value.value) if value is not None else None


def _total(record: StudyRecord) -> float | None:
    """The sample size a record shows (the total or the sum of its groups), not the number
    analysed."""
    n = record.n if record.sample_size or record.sample_size_parts else None
    return float(n) if n is not None else None


def _overlap(a: EffectEstimate, b: EffectEstimate) -> bool:
    pa, pb = a.proof, b.proof
    return pa.passage == pb.passage and pa.start < pb.end and pb.start < pa.end


def _same(a: EffectEstimate, b: EffectEstimate) -> bool:
    return all(
        parse_number(x or "") == parse_number(y or "")
        for x, y in ((a.value, b.value), (a.ci_low, b.ci_low), (a.ci_high, b.ci_high))
    )


def reconcile(model: StudyRecord, rules: StudyRecord) -> StudyRecord:
    """``model`` held to the rules' confident reading ``rules`` of the same item: a sample
    size, number analysed or effect estimate (the one at the same place in the text) that
    disagrees with the rules' is dropped with the rules' (neither is shown) and counted in
    ``disagreements``; what only the rules read is added. Returns a new record."""
    update: dict[str, object] = {}
    disagreements = 0
    model_n, rules_n = _total(model), _total(rules)
    if model_n is not None and rules_n is not None and model_n != rules_n:
        update |= {"sample_size": None, "sample_size_parts": []}
        disagreements += 1
    elif model_n is None and rules_n is not None:
        update |= {"sample_size": rules.sample_size, "sample_size_parts": rules.sample_size_parts}
    model_a, rules_a = _number(model.analysed), _number(rules.analysed)
    if model_a is not None and rules_a is not None and model_a != rules_a:
        update["analysed"] = None
        disagreements += 1
    elif model_a is None and rules.analysed is not None:
        update["analysed"] = rules.analysed
    effects: list[EffectEstimate] = []
    clashing: set[int] = set()
    for e in model.effects:
        clash = [i for i, r in enumerate(rules.effects) if _overlap(e, r) and not _same(e, r)]
        if clash:
            clashing.update(clash)
            disagreements += 1
            continue
        effects.append(e)
    effects += [
        r
        for i, r in enumerate(rules.effects)
        if i not in clashing and not any(_overlap(r, e) for e in model.effects)
    ]
    update |= {"effects": effects, "disagreements": model.disagreements + disagreements}
    return model.model_copy(update=update)
