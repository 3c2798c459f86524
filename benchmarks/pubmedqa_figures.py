"""The PubMedQA benchmark's figures: per configuration, from the runs' outcomes.

:func:`report_configuration` prints a full-corpus configuration's figures (gold abstract
retrieved and cited, references and grounding, stated and proxy verdicts, time, tokens, and
the scripted writer's misattributions), then the issue-12 figures (:class:`TargetFigures`)
next to their targets (:func:`target_rows`); :func:`report_withheld` prints the gold-withheld
arm's (abstention, :func:`withheld_rows`). :func:`write_details` and :func:`write_accuracy`
write the tuning half's outcomes and the test half's verdict figures. What each figure
means: :mod:`benchmarks.bench_pubmedqa`.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.pubmedqa_outcomes import Outcome


def mean(values: Sequence[float]) -> float:
    """The mean of ``values``; NaN when there are none."""
    return statistics.fmean(values) if values else float("nan")


def stated_agreement(outcomes: Sequence[Outcome]) -> str:
    """Share of reports stating a verdict whose verdict equals the label ("uncertain" counts
    as "maybe"), with how many stated one."""
    stated = [o for o in outcomes if o.verdict is not None]
    if not stated:
        return "n/a (no report states a verdict)"
    agree = mean(
        [{"uncertain": "maybe"}.get(o.verdict or "", o.verdict) == o.answer for o in stated]
    )
    return f"{agree:.1%} of {len(stated)} reports stating one"


def abstains(says_no_evidence: bool, sources_cited: int, verdict: str | None) -> bool:
    """Whether a report abstains: it says the sources hold no evidence, cites at most one
    source and states no yes/no verdict (``None`` or "uncertain")."""
    return says_no_evidence and sources_cited <= 1 and verdict not in ("yes", "no")


@dataclass(frozen=True)
class TargetFigures:
    """The issue-12 figures of one configuration, from its per-question outcomes."""

    runs: int
    gold_cited: int
    """Reports whose final references include the gold abstract."""
    off_topic_mean: float
    off_topic_median: float
    stated: int
    """Reports stating "yes" or "no"."""
    right: int
    """Of those, the ones whose verdict equals the gold answer."""
    abstained: int
    says_no_evidence: int
    cites_at_most_one: int
    no_yes_no_verdict: int
    seconds_median: float

    @property
    def precision(self) -> float:
        """Share right among the stated yes/no verdicts (NaN when none is stated)."""
        return self.right / self.stated if self.stated else float("nan")

    @property
    def coverage(self) -> float:
        """Share of reports stating "yes" or "no"."""
        return self.stated / self.runs if self.runs else float("nan")

    @property
    def abstention(self) -> float:
        """Share of reports that abstain (:func:`abstains`)."""
        return self.abstained / self.runs if self.runs else float("nan")


def target_figures(outcomes: Sequence[Outcome]) -> TargetFigures:
    """The issue-12 figures over ``outcomes`` (failed runs are not among them)."""
    off_topic = [o.off_topic for o in outcomes]
    stated = [o for o in outcomes if o.verdict in ("yes", "no")]
    return TargetFigures(
        runs=len(outcomes),
        gold_cited=sum(o.gold_cited_grounded for o in outcomes),
        off_topic_mean=mean(off_topic),
        off_topic_median=statistics.median(off_topic) if off_topic else float("nan"),
        stated=len(stated),
        right=sum(o.verdict == o.answer for o in stated),
        abstained=sum(
            abstains(o.states_no_evidence, o.references_grounded, o.verdict) for o in outcomes
        ),
        says_no_evidence=sum(o.states_no_evidence for o in outcomes),
        cites_at_most_one=sum(o.references_grounded <= 1 for o in outcomes),
        no_yes_no_verdict=sum(o.verdict not in ("yes", "no") for o in outcomes),
        seconds_median=statistics.median([o.seconds for o in outcomes])
        if outcomes
        else float("nan"),
    )


def against(met: bool, target: str) -> str:
    """``target ...: met`` or ``target ...: MISSED``."""
    return f"target {target}: {'met' if met else 'MISSED'}"


def target_rows(f: TargetFigures) -> list[tuple[str, str]]:
    """Label and value (figure, then its target) of each full-corpus issue-12 figure."""
    n = f.runs
    return [
        (
            "gold abstract cited in the final report",
            f"{f.gold_cited / n:.1%} ({f.gold_cited}/{n})  "
            + against(f.gold_cited >= 0.95 * n, ">= 95%"),
        ),
        (
            "off-topic references per report: mean / median",
            f"{f.off_topic_mean:.2f} / {f.off_topic_median:g}  "
            + against(f.off_topic_mean <= 0.5 and f.off_topic_median == 0, "<= 0.5 / 0"),
        ),
        (
            "stated yes/no verdicts right (precision)",
            f"{f.precision:.1%} ({f.right}/{f.stated})  " + against(f.precision >= 0.85, ">= 85%")
            if f.stated
            else "n/a (no yes/no verdict stated)  target >= 85%: MISSED",
        ),
        (
            "reports stating yes or no (coverage)",
            f"{f.coverage:.1%} ({f.stated}/{n})  " + against(f.coverage >= 0.3, ">= 30%"),
        ),
        (
            "wall time per run: median",
            f"{f.seconds_median:.1f} s  " + against(f.seconds_median < 10, "< 10 s"),
        ),
    ]


ACCURACY_FILE = (
    Path(__file__).resolve().parents[1] / "src/deepcritical/report/verdict_accuracy.json"
)


def write_details(path: Path, outcomes: Sequence[Outcome]) -> None:
    """One JSON line per tuning-half outcome (question, gold answer, verdict and reason)."""
    keys = ("pmid", "question", "answer", "verdict", "verdict_reason", "gold_cited_grounded")
    lines = [json.dumps({k: getattr(o, k) for k in keys}) for o in outcomes]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_accuracy(f: TargetFigures) -> None:
    """Write the test half's stated-verdict figures where the answer card reads them."""
    data = {
        "questions": f.runs,
        "stated": f.stated,
        "right": f.right,
        "measured": (
            f"{time.strftime('%Y-%m-%d')}, python -m benchmarks.bench_pubmedqa --arms full"
            " --write-accuracy: the test half of the PubMedQA dev questions"
            " (benchmarks/verdict_split.json), --llm none over the local corpus"
        ),
    }
    ACCURACY_FILE.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"   wrote {ACCURACY_FILE.name}: {f.right}/{f.stated} right of {f.runs} questions")


def verdict_counts(outcomes: Sequence[Outcome]) -> str:
    """How many reports state each verdict: "yes / no / uncertain / none" counts."""
    return " / ".join(
        str(sum(o.verdict == v for o in outcomes)) for v in ("yes", "no", "uncertain", None)
    )


def withheld_rows(outcomes: Sequence[Outcome]) -> list[tuple[str, str]]:
    """Label and value of each gold-withheld figure (abstention next to its target)."""
    f = target_figures(outcomes)
    n = f.runs
    return [
        (
            "abstention rate",
            f"{f.abstention:.1%} ({f.abstained}/{n})  " + against(f.abstention >= 0.9, ">= 90%"),
        ),
        (
            "says no evidence / cites <= 1 source / no yes-no verdict",
            f"{f.says_no_evidence} / {f.cites_at_most_one} / {f.no_yes_no_verdict} of {n}",
        ),
        (
            "off-topic references per report: mean / median",
            f"{f.off_topic_mean:.2f} / {f.off_topic_median:g} (every reference is off-topic)",
        ),
        ("report verdicts yes / no / uncertain / none", verdict_counts(outcomes)),
        (
            "gold abstract in evidence (withheld: must be 0)",
            f"{sum(o.gold_retrieved for o in outcomes)} of {n}",
        ),
        (
            "wall time per run: median",
            f"{f.seconds_median:.1f} s  " + against(f.seconds_median < 10, "< 10 s"),
        ),
    ]


def print_rows(rows: Sequence[tuple[str, str]], width: int = 0) -> None:
    """Print label/value rows as the benchmark's aligned table (labels padded to the longest,
    or to ``width`` when wider)."""
    width = max(width, *(len(label) for label, _ in rows))
    for label, value in rows:
        print(f"   {label:<{width}}  {value}")


def report_configuration(
    name: str, outcomes: list[Outcome], failures: list[str], *, targets: bool = True
) -> None:
    """Print a full-corpus configuration's figures (:func:`configuration_rows`,
    :func:`misattribution_rows`), then its issue-12 figures, next to their targets when
    ``targets`` (the test half), else without them (the tuning half)."""
    n = len(outcomes)
    print(f"\n== {name}: {n} questions" + (f", {len(failures)} failed" if failures else ""))
    for failure in failures[:5]:
        print(f"   failure: {failure}")
    if not n:
        return
    rows = configuration_rows(outcomes) + misattribution_rows(outcomes)
    print_rows(rows)
    width = max(len(label) for label, _ in rows)
    if targets:
        print("   -- issues 12 and 28 (targets: offline arm, the test half, never tuned on)")
        print_rows(target_rows(target_figures(outcomes)), width)
    else:
        print("   -- the same figures on the tuning half (the rules were fitted here; no targets)")
        print_rows(
            [
                (label, value.split("  target")[0])
                for label, value in target_rows(target_figures(outcomes))
            ],
            width,
        )


def configuration_rows(outcomes: Sequence[Outcome]) -> list[tuple[str, str]]:
    """Label and value of each full-corpus figure of a configuration (means over
    ``outcomes``, at least one)."""
    scores = [o.grounding_score for o in outcomes if o.grounding_score is not None]
    agree = mean([o.proxy_verdict == o.answer for o in outcomes])
    baseline = mean([o.answer == "yes" for o in outcomes])
    return [
        (
            "gold abstract retrieved (in evidence)",
            f"{mean([o.gold_retrieved for o in outcomes]):.1%}",
        ),
        (
            "gold abstract cited (before / after grounding)",
            f"{mean([o.gold_cited for o in outcomes]):.1%} / "
            f"{mean([o.gold_cited_grounded for o in outcomes]):.1%}",
        ),
        (
            "references per report (before / after)",
            f"{mean([o.references for o in outcomes]):.2f} / "
            f"{mean([o.references_grounded for o in outcomes]):.2f}",
        ),
        (
            "grounding score (mean over reports citing anything)",
            f"{mean(scores):.3f} (min {min(scores):.3f}, {len(scores)} reports)"
            if scores
            else "n/a",
        ),
        (
            "sentences / citations removed by grounding per report",
            f"{mean([o.sentences_removed for o in outcomes]):.2f} / "
            f"{mean([o.citations_removed for o in outcomes]):.2f}",
        ),
        ("answer agreement, verdict stated in the report", stated_agreement(outcomes)),
        ("report verdicts yes / no / uncertain / none", verdict_counts(outcomes)),
        (
            "answer agreement, hypothesis-stance proxy",
            f"{agree:.1%} (always-'yes' baseline {baseline:.1%})",
        ),
        (
            "proxy verdicts yes / no / maybe",
            " / ".join(
                str(sum(o.proxy_verdict == v for o in outcomes)) for v in ("yes", "no", "maybe")
            ),
        ),
        (
            "wall time per question: research / grounding",
            f"{mean([o.seconds for o in outcomes]):.2f} s / "
            f"{mean([o.grounding_seconds for o in outcomes]):.2f} s",
        ),
        (
            "tokens per report: input / output",
            f"{mean([o.prompt_tokens for o in outcomes]):.0f} / "
            f"{mean([o.output_tokens for o in outcomes]):.0f} (cost: these times your"
            " provider's prices)",
        ),
    ]


def misattribution_rows(outcomes: Sequence[Outcome]) -> list[tuple[str, str]]:
    """How grounding treated the scripted writer's citations (misattributed ones removed,
    correct ones kept); no rows without a misattributed citation (no scripted model)."""
    misattributed = sum(o.misattributed for o in outcomes)
    if not misattributed:
        return []
    correct = sum(o.correct for o in outcomes)
    return [
        (
            "misattributed citations removed by grounding",
            f"{sum(o.misattributed_removed for o in outcomes)} of {misattributed}"
            f" ({sum(o.misattributed_removed for o in outcomes) / misattributed:.1%})",
        ),
        (
            "correct citations kept by grounding",
            f"{sum(o.correct_kept for o in outcomes)} of {correct}"
            f" ({sum(o.correct_kept for o in outcomes) / max(correct, 1):.1%})",
        ),
    ]


def report_withheld(name: str, outcomes: list[Outcome], failures: list[str]) -> None:
    """Print a gold-withheld configuration's figures (abstention next to its target)."""
    n = len(outcomes)
    print(
        f"\n== gold withheld, {name}: {n} questions"
        + (f", {len(failures)} failed" if failures else "")
    )
    for failure in failures[:5]:
        print(f"   failure: {failure}")
    if not n:
        return
    print_rows(withheld_rows(outcomes))
