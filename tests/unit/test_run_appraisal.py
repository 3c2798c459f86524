"""Study records in a run: every on-topic item gets one by rules each round; with a model and
``Settings.model_appraisals``, that many of the new items are read by the model (checked
verbatim), and a failing model leaves the rules' record with a warning."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from deepcritical.agents.appraiser import LLMStudyExtractor
from deepcritical.api import research
from deepcritical.config import Settings
from deepcritical.corpus.index import LocalCorpus
from deepcritical.llm.agent_config import LLMConfig
from deepcritical.models import CERTAINTY_LABEL
from deepcritical.testing.embedders import HashingEmbedder
from tests.unit.test_iterative_orchestrator import (
    CountingSource,
    agents,
    collect,
    final,
    orchestrator,
)

SETTINGS = dict(max_rounds=2, results_per_query=3, sources=["local"])


def extraction(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    output = {
        "population": {"value": "patients with condition", "quote": "of patients with condition"},
        "sample_size": {"value": "999", "quote": "999 patients were enrolled"},  # invented
    }
    return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, json.dumps(output))])


def failing(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    raise RuntimeError("model server down")


async def test_every_item_gets_a_rules_record_without_a_model() -> None:
    orch, store = orchestrator([CountingSource()], Settings(**SETTINGS))  # type: ignore[arg-type]
    final(await collect(orch))
    assert store.all()
    assert all(e.study is not None and e.study.method == "rules" for e in store.all())


async def test_the_model_reads_at_most_model_appraisals_items_and_is_checked() -> None:
    config = LLMConfig(model=FunctionModel(extraction), retries=1, timeout_seconds=10)
    agent_set = agents(appraiser=LLMStudyExtractor(config))
    settings = Settings(model_appraisals=2, **SETTINGS)  # type: ignore[arg-type]
    orch, store = orchestrator([CountingSource()], settings, agent_set)
    report = final(await collect(orch))
    by_model = [e for e in store.all() if e.study is not None and e.study.method == "model"]
    assert len(by_model) == 2
    for item in by_model:
        assert item.study is not None
        assert item.study.population is not None
        assert item.study.sample_size is None  # its quote is not in the source
        assert item.study.values_dropped == 1
    cited = {r.evidence_id for r in report.references}
    assert all(r.study is not None for r in report.references if r.evidence_id in cited)


async def test_a_failing_model_keeps_the_rules_record_with_a_warning() -> None:
    config = LLMConfig(model=FunctionModel(failing), retries=1, timeout_seconds=10)
    agent_set = agents(appraiser=LLMStudyExtractor(config))
    settings = Settings(model_appraisals=1, **SETTINGS)  # type: ignore[arg-type]
    orch, store = orchestrator([CountingSource()], settings, agent_set)
    events = await collect(orch)
    final(events)
    warnings = [e.message for e in events if e.type == "warning"]
    assert any(w.startswith("appraiser failed on E") for w in warnings)
    assert all(e.study is not None and e.study.method == "rules" for e in store.all())


async def test_offline_report_cites_the_trial_with_n_effect_and_certainty(
    api_fixtures: Path, tmp_path: Path
) -> None:
    """A local corpus holding the METRIC trial's PubMed record (PMID 22663011): the offline
    report's study table, reference line and JSON give its n, hazard ratio with CI and a
    certainty level, every value verbatim from the abstract."""
    embedder = HashingEmbedder()
    settings = Settings(llm="none", sources=["local"], data_dir=tmp_path, max_rounds=1)
    with LocalCorpus(settings.resolved_corpus_dir, embedder) as corpus:
        corpus.add_file(
            api_fixtures / "ncbi_eutils" / "efetch_pubmed_structured_abstract_22663011.xml"
        )
    question = "Does trametinib improve survival in BRAF-mutated metastatic melanoma?"
    result = None
    async for event in research(question, settings, embedder=embedder):
        if event.type == "done":
            result = event.result
    assert result is not None
    report = result.report
    ref = next(r for r in report.references if r.citation.pmid == "22663011")
    assert ref.study is not None
    assert ref.study.n == 322
    effect = ref.study.primary_effect
    assert effect is not None
    assert effect.short() == "HR 0.45 (95% CI 0.33 to 0.63), p <0.001"
    trial = next(e for e in result.evidence if e.citation.pmid == "22663011")
    assert trial.content[effect.proof.start : effect.proof.end] == effect.proof.quote
    md = report.to_markdown()
    assert "### Study characteristics" in md
    assert "| 322 |" in md
    assert (
        "*Study: n = 322; HR 0.45 (95% CI 0.33 to 0.63) for disease progression or death, p <0.001;"
        in md
    )
    assert report.metadata.certainty is not None
    assert f"Certainty ({CERTAINTY_LABEL}): {report.metadata.certainty.level.value}" in md
    data = json.loads(result.to_json())
    assert data["report"]["metadata"]["certainty"]["basis"] == "randomised trials"
