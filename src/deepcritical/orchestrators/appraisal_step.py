"""The model-appraisal step of a search round: the study records of the most relevant new
on-topic records read by the model, within ``Settings.model_appraisals`` per run."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from deepcritical.llm.llm_errors import describe_error
from deepcritical.orchestrators.run_context import RunContext

__all__ = ["appraise_by_model"]


async def appraise_by_model(run: RunContext, ids: Sequence[str]) -> int:
    """With a model and ``Settings.model_appraisals`` > 0: the study records of the most
    relevant of the round's new on-topic items (``ids``) read by the model
    (:class:`~deepcritical.agents.appraiser.LLMStudyExtractor`, every value checked
    verbatim), within that many per run; a failed call keeps the rules' record, with a
    warning. Returns how many the model read."""
    appraiser = run.agents.appraiser
    done = sum(e.study is not None and e.study.method == "model" for e in run.store.all())
    room = run.settings.model_appraisals - done
    if appraiser is None or room <= 0:
        return 0
    new = set(ids)
    chosen = sorted(
        (e for e in run.on_topic() if e.id in new and e.study and e.study.method == "rules"),
        key=lambda e: -e.relevance,
    )[:room]
    read = 0
    with run.accounting.stage("appraisal"):
        for item in chosen:
            try:
                item.study = await appraiser.extract(item)
                read += 1
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the rules' record stays, with a warning
                run.warn(
                    f"appraiser failed on {item.id} ({describe_error(exc)}); its study "
                    "record was read by rules"
                )
    return read
