"""End-to-end research benchmark on PubMedQA: citations, grounding, answers, cost.

Run: ``.venv/bin/python -m benchmarks.bench_pubmedqa [--n N] [--halves tuning,test]
[--scripted | --scripted-only] [--llm MODEL [--orchestrator iterative|magentic]]
[--arms full,withheld] [--details FILE] [--write-accuracy] [--calibrate]``.

``--llm MODEL`` runs the same questions through any model the CLI accepts (its key from the
environment), printed next to the offline arm with the same figures, tokens per report
included: how a capable model compares, measured by whoever can reach one.

Data: ``../shared/data/pubmedqa`` (1000 abstracts without titles; 500 dev questions, each
written from one "gold" abstract, with a yes/no/maybe answer; PubMedQA, Jin et al. 2019, MIT
licence). Exits 0 with a message when the data is absent. The whole corpus is imported once
into a temporary data directory, as ``deepcritical corpus add`` does (the default corpus
embedder).

The dev questions are split once, at random, into a tuning half and a test half
(``benchmarks/verdict_split.json``, :mod:`benchmarks.verdict_split`): rules that read
conclusions are tuned on the first only. Each half is run and reported apart (``--n N``: its
first N questions); the targets are printed for the test half, and the tuning half's figures
beside them without targets. ``--details FILE`` writes the tuning half's outcomes, one JSON
line per question (never the test half's); ``--write-accuracy`` writes the test half's
verdict figures (all 250 questions, extractive, full corpus) to
``src/deepcritical/report/verdict_accuracy.json``, which the answer card shows.

Two arms (``--arms``, default both), each with its own corpus in its own data directory:

- ``full``: the 1000 abstracts; each question's gold abstract answers it.
- ``withheld`` (gold withheld): the corpus minus the gold abstracts of the N questions run, so
  nothing in it answers them; a good report abstains (see below).

In each arm, for each question run, every configuration runs
``deepcritical.api.research(question, Settings(llm="none", sources=["local"], data_dir=<tmp>,
max_rounds=2), embedder=run_embedder())`` (the embedder the command line uses); the run
grounds its own report (``Settings.grounding``, default threshold), so the figures are those
of the report a user gets. Configurations:

- ``extractive``: no model (``--llm none``).
- ``scripted`` (``--scripted``): a pydantic-ai ``FunctionModel`` plays every LLM role. Its
  writer quotes one sentence of each source it is shown and cites every second quote with the
  id of *another* shown source of the same section (a misattributed citation to a real,
  retrieved, on-topic paper: the hardest case for grounding); its outline splits the sources
  shown into two sections; its search agent screens each round through the source tools
  (``save_source`` for every record whose text names the question's key terms, then
  ``get_progress`` and ``check_completion``; the others are off-topic). It measures the LLM
  path, screening and grounding against a known truth, not the quality of a language model.

Printed per configuration (means over questions):

- gold retrieved: the gold abstract is among the run's evidence;
- gold cited: the gold abstract is among the report's references, before grounding (the
  final references plus those grounding removed) / after grounding (the final report);
- references (before / after grounding);
- grounding score: share of cited sentences supported by a passage of a cited source;
  sentences and citations removed by grounding;
- answer agreement, verdict stated in the report: PubMedQA questions are yes/no questions,
  so the report states a verdict (``metadata.verdict``: yes / no / uncertain; yes/no only
  when the relevant sources' stances on the first hypothesis are decisive, see
  :mod:`deepcritical.report.sections`); "uncertain" is compared with "maybe".
  The always-"yes" baseline is printed next to the hypothesis-stance proxy (more supporting
  than contradicting items -> "yes", more contradicting -> "no", otherwise "maybe"). For the
  extractive hypothesis generator an item's stance is read from cue words in its
  conclusions (:mod:`deepcritical.evidence.stance`, calibrated by ``benchmarks/fit_stance``),
  so this measures cue words, not understanding (the scripted hypothesis always has two
  supporting ids and one contradicting, so its verdict says nothing: ignore it);
- wall time per question (research, of which grounding), and prompt tokens per run (0
  without a model; the scripted model's counts are pydantic-ai's estimates).

Then, next to its target (issues 12 and 28; the targets are for the extractive arm on the
test half, offline, and are printed for the scripted arm too):

- gold cited: the gold abstract is among the final report's references (>= 95%);
- off-topic references per report: final references other than the gold abstract (the
  corpus covers unrelated topics), mean (<= 0.5) and median (0);
- verdict precision: share right among the reports stating "yes" or "no" (against the
  PubMedQA gold ``final_decision``; a stated yes/no on a "maybe" question is wrong), >= 85%;
  verdict coverage: share of reports stating "yes" or "no", >= 30%;
- median wall time per run (< 10 s).

In the gold-withheld arm: the abstention rate (>= 90%), the share of reports that abstain:
they state that the sources hold no evidence (:func:`states_no_evidence`), cite at most one
source and state no yes/no verdict (``metadata.verdict`` None or "uncertain"); with each
condition's count, the off-topic references and the median wall time.

``--calibrate`` instead measures, on all 500 dev questions, the cosine similarities that set
:data:`deepcritical.report.grounding.DEFAULT_THRESHOLD` (takes a few minutes): a verbatim
quote against its abstract; a paraphrase written by the authors (the question turned into a
claim) against its own abstract and against the most similar other abstract (a real but
irrelevant source); the first sentence of the conclusions against the rest of its own
abstract (results and methods) and against the most similar other abstract.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.offline import use_offline_environment
from benchmarks.pubmedqa_data import DEFAULT_DATA, pubmedqa_files
from benchmarks.verdict_split import HALVES, questions_of

FENCED_BLOCK = re.compile(
    r'<source id="(E\d+)" nonce="([0-9a-f]+)">\n(.*?)\n</source \2>', re.DOTALL
)
TEXT_LINE = re.compile(r"^Text: (.*)$", re.MULTILINE)
TITLE_LINE = re.compile(r"^Title: (.*)$", re.MULTILINE)
RECORD_LINE = re.compile(r"^Record: source_type=(.*?); external_id=(.*?); url=(.*)$", re.M)
CHECKLIST_KEY = re.compile(r"^- ([\w.-]+): .* \(\d+\)$", re.MULTILINE)
LABEL = re.compile(r"\b[A-Z][A-Z /&,()-]{2,60}:\s+")
SENTENCE = re.compile(r"(?<=[a-z0-9%)\]][.!?])\s+(?=[A-Z])")


# --------------------------------------------------------------------------- data
def load_questions(path: Path, limit: int | None) -> list[dict[str, str]]:
    # split on "\n" only: str.splitlines() also splits at U+2028 inside JSON strings
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]
    return rows[:limit] if limit else rows


def pubmedqa_evidence(row: dict[str, Any], lines: Sequence[str] | None = None) -> Any:
    """A corpus row as the local source gives it (labelled paragraphs, MeSH terms)."""
    from deepcritical.models import Citation, Evidence

    pmid = str(row["pmid"])
    content = "\n".join(
        lines
        if lines is not None
        else [
            f"{s['label']}: {s['text']}" if s.get("label") else s["text"]
            for s in row["abstract_sections"]
        ]
    )
    return Evidence(
        id=pmid,
        content=content,
        citation=Citation(source="local", id=pmid, pmid=pmid),
        mesh_terms=row.get("mesh_terms", []),
    )


# --------------------------------------------------------------------------- scripted model
@dataclass
class Attribution:
    """A quoted sentence, the source it was taken from and the id the writer cited."""

    sentence: str
    true_id: str
    cited_id: str


@dataclass
class ScriptedLLM:
    """A FunctionModel script for every LLM role (see the module docstring)."""

    attributions: list[Attribution] = field(default_factory=list)

    def model(self) -> Any:
        from pydantic_ai.models.function import FunctionModel

        return FunctionModel(self, model_name="scripted-misattributing-writer")

    def __call__(self, messages: list[Any], info: Any) -> Any:
        from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, UserPromptPart

        tool = info.output_tools[0]
        fields = set(tool.parameters_json_schema.get("properties", {}))
        first = messages[0]
        prompt = ""
        if isinstance(first, ModelRequest):
            prompt = "\n".join(str(p.content) for p in first.parts if isinstance(p, UserPromptPart))
        if "screened" in fields:  # the search agent's screening: its tools first
            step = sum(isinstance(m, ModelResponse) for m in messages)
            calls = self._screener_calls(prompt, step)
            if calls:
                return ModelResponse(parts=[ToolCallPart(n, json.dumps(a)) for n, a in calls])
        for name, role in (
            ("checklist", self._planner),
            ("hypotheses", self._hypothesis),
            ("mechanism_score", self._judge),
            ("outline", self._outline),
            ("content", self._findings),
            ("executive_summary", self._summary),
            ("follow_up_queries", self._reflection),
            ("rewritten_sentence", self._rewriter),
            ("queries", self._queries),
            ("screened", self._screener),
        ):
            if name in fields:
                return ModelResponse(parts=[ToolCallPart(tool.name, json.dumps(role(prompt)))])
        raise RuntimeError(f"unknown output tool {tool.name}: {sorted(fields)}")

    @staticmethod
    def _question(prompt: str) -> str:
        m = re.search(r"^Research question: (.+)$", prompt, re.MULTILINE)
        return m.group(1).strip() if m else "the question"

    def _planner(self, prompt: str) -> dict[str, Any]:
        from deepcritical.text.terms import extract_key_terms, key_term_query

        question = self._question(prompt)
        terms = extract_key_terms(question)
        subject = ", ".join(terms[:4]) or question
        return {
            "refined_question": question,
            "checklist": [
                {"key": "direct_evidence", "description": f"Clinical studies of {subject}"},
                {"key": "mechanism", "description": f"Mechanisms behind {subject}"},
                {"key": "conflicts", "description": f"Conflicting findings on {subject}"},
            ],
            "queries": [question, key_term_query(terms)],
            "key_terms": terms,
        }

    def _queries(self, prompt: str) -> dict[str, Any]:
        from deepcritical.text.terms import extract_key_terms

        question = self._question(prompt)
        m = re.search(r"^Search round: (\d+)", prompt, re.MULTILINE)
        round_no = int(m.group(1)) if m else 1
        terms = " ".join(extract_key_terms(question)[:3])
        if round_no == 1:
            return {"queries": [question, f"{terms} outcome"]}
        return {"queries": [f"{terms} {suffix} {round_no}" for suffix in ("risk", "trial")]}

    def _shown(self, prompt: str) -> list[tuple[str, str]]:
        """(id, one sentence of its text) of every fenced source."""
        out = []
        for sid, _nonce, body in FENCED_BLOCK.findall(prompt):
            m = TEXT_LINE.search(body)
            text = LABEL.sub("", m.group(1) if m else "").replace(" …", "")
            sentences = [s for s in SENTENCE.split(text) if len(s) > 40 and s.endswith(".")]
            if sentences:
                out.append((sid, sentences[len(sentences) // 2]))
        return out

    def _on_topic(self, prompt: str, body: str) -> bool:
        """The scripted search agent's reading of relevance: the record's title and text
        mention the question's key terms (all up to three, all but one beyond; a term is
        mentioned when each of its words is, by its first five letters)."""
        from deepcritical.text.terms import extract_key_terms, required_term_count

        terms = extract_key_terms(self._question(prompt))
        text = body.lower()

        def named(term: str) -> bool:  # every word of the term, by its first five letters
            return all(word[:5] in text for word in term.lower().split())

        return sum(named(t) for t in terms) >= required_term_count(len(terms))

    def _screener_calls(self, prompt: str, step: int) -> list[tuple[str, dict[str, Any]]]:
        """The search agent's tool calls at ``step``: 0, ``save_source`` for every record it
        reads as on-topic (for every checklist question, with a verbatim excerpt) and
        ``get_progress``; 1, ``check_completion``; none after (then its output)."""
        if step >= 2:
            return []
        if step == 1:
            return [("check_completion", {})]
        keys = CHECKLIST_KEY.findall(prompt)
        calls: list[tuple[str, dict[str, Any]]] = []
        for sid, _nonce, body in FENCED_BLOCK.findall(prompt):
            record = RECORD_LINE.search(body)
            if record is None or not self._on_topic(prompt, body):
                continue
            title = TITLE_LINE.search(body)
            text = TEXT_LINE.search(body)
            arguments = {
                "source_type": record.group(1),
                "external_id": record.group(2),
                "url": None if record.group(3) == "none" else record.group(3),
                "title": title.group(1) if title else "",
                "relevant_questions": keys,
                "key_excerpts": [" ".join((text.group(1) if text else "").split()[:12])],
                "citation_id": sid,
            }
            calls.append(("save_source", arguments))
        return [*calls, ("get_progress", {})]

    def _screener(self, prompt: str) -> dict[str, Any]:
        screened = [
            {
                "citation_id": sid,
                "status": "relevant" if on_topic else "off_topic",
                "reason": "names the question's key terms"
                if on_topic
                else "does not name the question's key terms",
            }
            for sid, _nonce, body in FENCED_BLOCK.findall(prompt)
            for on_topic in [self._on_topic(prompt, body)]
        ]
        return {"screened": screened, "next_queries": [], "progress": "Scripted screening."}

    def _hypothesis(self, prompt: str) -> dict[str, Any]:
        shown = [sid for sid, _ in self._shown(prompt)]
        return {
            "hypotheses": [
                {
                    "statement": f"Affirmative answer: {self._question(prompt)}",
                    "confidence": 0.5,
                    "supporting_evidence_ids": shown[:2],
                    "contradicting_evidence_ids": shown[2:3],
                }
            ]
        }

    def _judge(self, prompt: str) -> dict[str, Any]:
        return {
            "mechanism_score": 3,
            "clinical_evidence_score": 5,
            "sufficient": False,
            "recommendation": "continue",
            "next_queries": [],
            "reasoning": "Scripted judge: never sufficient.",
        }

    def _rewriter(self, prompt: str) -> dict[str, Any]:
        return {"rewritten_sentence": ""}  # declines: grounding removes what it rejects

    def _reflection(self, prompt: str) -> dict[str, Any]:
        return {"items": [], "follow_up_queries": [], "reasoning": "Scripted reflection."}

    def _outline(self, prompt: str) -> dict[str, Any]:
        ids = [sid for sid, _nonce, _body in FENCED_BLOCK.findall(prompt)][:8]
        half = max(2, (len(ids) + 1) // 2)
        groups = [ids[:half], ids[half:]] if len(ids) - half >= 2 else [ids]
        return {
            "title": f"Scripted review: {self._question(prompt)}",
            "outline": [
                {"heading": f"Findings {i}", "purpose": "findings", "evidence_ids": group}
                for i, group in enumerate(groups, start=1)
            ],
        }

    def _findings(self, prompt: str) -> dict[str, Any]:
        shown = self._shown(prompt)[:8]
        paragraphs = []
        for i, (sid, sentence) in enumerate(shown):
            cited = sid if i % 2 == 0 else shown[(i + 1) % len(shown)][0]
            if cited == sid and i % 2 == 1:
                continue  # a single source: no other id to misattribute to
            self.attributions.append(Attribution(sentence, sid, cited))
            paragraphs.append(f"{sentence[:-1]} [{cited}].")
        if not paragraphs and shown:
            paragraphs.append(f"{shown[0][1][:-1]} [{shown[0][0]}].")
        return {"content": "\n\n".join(paragraphs) or "None."}

    def _summary(self, prompt: str) -> dict[str, Any]:
        ids = re.findall(r"cite only these ids: ([E\d, ]+)\)", prompt)
        first = ids[0].split(",")[0].strip() if ids else "E1"
        return {
            "executive_summary": (
                f"The collected studies answer the question conclusively [{first}]."
            ),
            "limitations": ["Only abstracts were read."],
            "conclusion": "More research is needed.",
        }


# --------------------------------------------------------------------------- one run
@dataclass
class Outcome:
    gold_retrieved: bool
    gold_cited: bool
    gold_cited_grounded: bool
    references: int
    references_grounded: int
    grounding_score: float | None
    sentences_removed: int
    citations_removed: int
    proxy_verdict: str
    verdict: str | None
    answer: str
    seconds: float
    grounding_seconds: float
    prompt_tokens: int
    off_topic: int = 0
    """Final references other than the gold abstract."""
    states_no_evidence: bool = False
    """The report says the sources hold no evidence (:func:`states_no_evidence`)."""
    misattributed: int = 0
    misattributed_removed: int = 0
    correct: int = 0
    correct_kept: int = 0
    output_tokens: int = 0
    question: str = ""
    pmid: str = ""
    verdict_reason: str = ""


def proxy_verdict(report: Any) -> str:
    """ "yes"/"no"/"maybe" from the first tested hypothesis (see the module docstring)."""
    if not report.hypotheses_tested:
        return "maybe"
    h = report.hypotheses_tested[0]
    s, c = len(h.supporting_evidence_ids), len(h.contradicting_evidence_ids)
    return "yes" if s > c else "no" if c > s else "maybe"


def prompt_tokens(report: Any) -> int:
    usage = getattr(report.metadata, "usage", None)
    total = getattr(usage, "llm_total", None)
    return int(getattr(total, "input_tokens", 0) or 0)


async def run_one(
    question: dict[str, str],
    settings: Any,
    embedder: Any,
    scripted: ScriptedLLM | None,
) -> Outcome | str:
    from deepcritical.api import research
    from deepcritical.report.validation import citation_problems

    start = time.perf_counter()
    result = None
    kwargs: dict[str, Any] = {"embedder": embedder}
    if scripted is not None:
        scripted.attributions.clear()
        kwargs["model"] = scripted.model()
    async for event in research(question["question"], settings, **kwargs):
        if event.type == "done":
            result = event.result
        elif event.type == "error":
            return f"error: {event.message}"
    seconds = time.perf_counter() - start
    if result is None:
        return "no result"
    evidence = {e.id: e for e in result.evidence}
    report = result.report
    if citation_problems(report, evidence):
        return "the final report has citation problems"
    check = report.metadata.grounding_check
    if check is None:
        return "the report was not grounded (Settings.grounding is off?)"
    gold = question["pmid"]
    gold_ids = {e.id for e in result.evidence if e.citation.pmid == gold}
    after = {r.evidence_id for r in report.references}
    before = after | set(check.removed_reference_ids)
    outcome = Outcome(
        gold_retrieved=bool(gold_ids),
        gold_cited=bool(gold_ids & before),
        gold_cited_grounded=bool(gold_ids & after),
        references=len(before),
        references_grounded=len(after),
        grounding_score=report.metadata.grounding_score,
        sentences_removed=check.sentences_removed,
        citations_removed=check.citations_removed,
        proxy_verdict=proxy_verdict(report),
        verdict=report.metadata.verdict,
        answer=question["answer"],
        question=question["question"],
        pmid=str(question["pmid"]),
        verdict_reason=report.metadata.verdict_reason,
        seconds=seconds,
        grounding_seconds=report.metadata.usage.stage_seconds.get("grounding", 0.0),
        prompt_tokens=prompt_tokens(report),
        output_tokens=int(report.metadata.usage.llm_total.output_tokens),
        off_topic=len(after - gold_ids),
        states_no_evidence=states_no_evidence("\n".join([report.title, *report.texts()])),
    )
    if scripted is not None:
        kept: dict[tuple[str, str], bool] = {}
        for claim in report.grounding:
            for eid in claim.evidence_ids:
                kept[(claim.sentence.split(" [")[0], eid)] = eid in claim.kept_ids
        for a in scripted.attributions:
            verdict = kept.get((a.sentence[:-1], a.cited_id))
            if verdict is None:
                continue  # the sentence did not survive the writer's own check / validation
            if a.cited_id == a.true_id:
                outcome.correct += 1
                outcome.correct_kept += verdict
            else:
                outcome.misattributed += 1
                outcome.misattributed_removed += not verdict
    return outcome


def mean(values: Sequence[float]) -> float:
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


# --------------------------------------------------------------------------- issue 12 figures
NO_EVIDENCE_STATEMENT = re.compile(
    r"no evidence could be collected for this question"
    r"|the sources searched\b.{0,400}?\bhold no evidence that addresses",
    re.IGNORECASE | re.DOTALL,
)
ARMS = ("full", "withheld")


def states_no_evidence(text: str) -> bool:
    """Whether ``text`` clearly states that the sources hold no evidence for the question.

    Accepts today's no-evidence report ("No evidence could be collected for this question
    ...") and the opening issue 12 asks for ("The sources searched (...) hold no evidence
    that addresses ..."), case-insensitively; a limitation about one checklist item ("No
    evidence was found for the checklist item ...") does not count.
    """
    return NO_EVIDENCE_STATEMENT.search(text) is not None


def abstains(says_no_evidence: bool, sources_cited: int, verdict: str | None) -> bool:
    """Whether a report abstains: it says the sources hold no evidence, cites at most one
    source and states no yes/no verdict (``None`` or "uncertain")."""
    return says_no_evidence and sources_cited <= 1 and verdict not in ("yes", "no")


def parse_arms(value: str) -> tuple[str, ...]:
    """The arms named in a comma-separated ``--arms`` value, in :data:`ARMS` order.

    Raises:
        argparse.ArgumentTypeError: an unknown or no arm.
    """
    names = {part.strip() for part in value.split(",") if part.strip()}
    unknown = names - set(ARMS)
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"arms are a comma-separated subset of {', '.join(ARMS)}; got {value!r}"
        )
    return tuple(arm for arm in ARMS if arm in names)


def corpus_lines_without(text: str, pmids: set[str]) -> list[str]:
    """The non-empty lines of a PubMedQA ``corpus.jsonl`` text whose record's PMID is not in
    ``pmids``, unchanged (split on "\\n" only, as :func:`load_questions` does)."""
    return [
        line
        for line in text.split("\n")
        if line.strip() and str(json.loads(line)["pmid"]) not in pmids
    ]


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
    n = len(outcomes)
    print(f"\n== {name}: {n} questions" + (f", {len(failures)} failed" if failures else ""))
    for failure in failures[:5]:
        print(f"   failure: {failure}")
    if not n:
        return
    scores = [o.grounding_score for o in outcomes if o.grounding_score is not None]
    agree = mean([o.proxy_verdict == o.answer for o in outcomes])
    baseline = mean([o.answer == "yes" for o in outcomes])
    rows = [
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
    misattributed = sum(o.misattributed for o in outcomes)
    if misattributed:
        correct = sum(o.correct for o in outcomes)
        rows += [
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


# --------------------------------------------------------------------------- calibration
def calibrate(data: Path) -> None:
    """Print the similarity distributions behind the default grounding threshold."""
    from deepcritical.evidence.onnx_embeddings import run_embedder
    from deepcritical.evidence.store import embedding_text
    from deepcritical.report.citation_markers import add_marker
    from deepcritical.report.grounding import DEFAULT_THRESHOLD, claim_text, source_passages
    from deepcritical.text.question_claim import question_to_claim
    from deepcritical.text.sentences import split_sentences

    start = time.perf_counter()
    rows = {
        json.loads(line)["pmid"]: json.loads(line)
        for line in (data / "corpus.jsonl").read_text(encoding="utf-8").split("\n")
        if line.strip()
    }
    questions = load_questions(data / "dev_questions.jsonl", None)
    embedder = run_embedder()
    pmids = list(rows)
    # passages of every abstract, by line, remembering which come from the conclusions
    passages: list[str] = []
    owner: list[int] = []
    is_conclusion: list[bool] = []
    for i, pmid in enumerate(pmids):
        for section in rows[pmid]["abstract_sections"]:
            label = section.get("label") or ""
            line = f"{label}: {section['text']}" if label else section["text"]
            found = source_passages(pubmedqa_evidence(rows[pmid], [line]))
            passages += found
            owner += [i] * len(found)
            is_conclusion += [label.upper().startswith("CONCLUSION")] * len(found)
    print(f"embedding {len(passages)} passages of {len(pmids)} abstracts ...")
    vectors = embedder.embed(passages)
    owners = np.asarray(owner)
    concl = np.asarray(is_conclusion)
    abstracts = embedder.embed([embedding_text(pubmedqa_evidence(rows[p])) for p in pmids])
    index = {p: i for i, p in enumerate(pmids)}

    def claim_of(question: str) -> str:
        statement = question_to_claim(question).statement
        if statement.startswith("Affirmative answer"):
            return question.rstrip("?").strip() + "."
        return statement

    def best(i: int, v: Any, mask: Any = None) -> float:
        rows_ = owners == i if mask is None else (owners == i) & mask
        return float((vectors[rows_] @ v).max()) if rows_.any() else float("nan")

    def nearest_other(v: Any, gold: int) -> int:
        order = np.argsort(-(abstracts @ v))
        return int(next(j for j in order if j != gold))

    paraphrases = [claim_of(q["question"]) for q in questions]
    firsts = []
    for q in questions:
        concl_text = [
            s["text"]
            for s in rows[q["pmid"]]["abstract_sections"]
            if (s.get("label") or "").upper().startswith("CONCLUSION")
        ]
        firsts.append(split_sentences(concl_text[0])[0] if concl_text else "")
    verbatim = [claim_text(add_marker(s, "E1")) for s in firsts]
    para_v = embedder.embed(paraphrases)
    first_v = embedder.embed([s or "-" for s in firsts])
    verb_v = embedder.embed([s or "-" for s in verbatim])
    sets: dict[str, tuple[list[float], list[float]]] = {
        "A: author paraphrase (question as claim)": ([], []),
        "B: conclusion sentence vs rest of abstract": ([], []),
        "V: verbatim quote (marker removed)": ([], []),
    }
    for k, q in enumerate(questions):
        gold = index[q["pmid"]]
        other = nearest_other(para_v[k], gold)
        sets["A: author paraphrase (question as claim)"][0].append(best(gold, para_v[k]))
        sets["A: author paraphrase (question as claim)"][1].append(best(other, para_v[k]))
        if firsts[k]:
            other_b = nearest_other(first_v[k], gold)
            sets["B: conclusion sentence vs rest of abstract"][0].append(
                best(gold, first_v[k], ~concl)
            )
            sets["B: conclusion sentence vs rest of abstract"][1].append(best(other_b, first_v[k]))
            sets["V: verbatim quote (marker removed)"][0].append(best(gold, verb_v[k]))
            sets["V: verbatim quote (marker removed)"][1].append(best(other_b, verb_v[k]))
    print(
        f"done in {time.perf_counter() - start:.0f} s; all-MiniLM-L6-v2, {len(questions)} questions"
    )
    print("\nbest-passage cosine similarity: own abstract (right source) vs most similar other")
    print("abstract (real but irrelevant source); percentiles p10 / p50 / p90")
    for name, (pos, neg) in sets.items():
        p, n_ = np.asarray(pos), np.asarray([x for x in neg if x == x])
        print(
            f"   {name:<44} own {np.percentile(p, 10):.3f} / {np.median(p):.3f} / "
            f"{np.percentile(p, 90):.3f}   other {np.percentile(n_, 10):.3f} / "
            f"{np.median(n_):.3f} / {np.percentile(n_, 90):.3f}"
        )
    print("\nthreshold: share of right citations kept (TPR) and of irrelevant ones kept (FPR)")
    print(
        f"   {'t':>5}  {'A TPR':>6} {'A FPR':>6}  {'B TPR':>6} {'B FPR':>6}  {'V TPR':>6}  mean J"
    )
    names = list(sets)
    for t in np.round(np.arange(0.50, 0.76, 0.01), 2):
        cells = []
        js = []
        for name in names[:2]:
            right, wrong = (np.asarray(x) for x in sets[name])
            tpr, fpr = float(np.mean(right >= t)), float(np.mean(wrong >= t))
            cells.append(f"{tpr:>6.3f} {fpr:>6.3f}")
            js.append(tpr - fpr)
        v_tpr = float(np.mean(np.asarray(sets[names[2]][0]) >= t))
        mark = "  <- default" if abs(t - DEFAULT_THRESHOLD) < 1e-9 else ""
        print(f"   {t:>5.2f}  {cells[0]}  {cells[1]}  {v_tpr:>6.3f}  {mean(js):.3f}{mark}")


# --------------------------------------------------------------------------- main
def _parser() -> argparse.ArgumentParser:
    """The benchmark's command line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="PubMedQA directory")
    parser.add_argument(
        "--n", type=int, default=0, help="first N questions of each half (default: all 250)"
    )
    parser.add_argument(
        "--halves",
        default="tuning,test",
        help="comma-separated halves of the dev questions (benchmarks/verdict_split.json):"
        " tuning, test; default both (the targets are for the test half)",
    )
    parser.add_argument("--rounds", type=int, default=2, help="max search rounds (default 2)")
    parser.add_argument("--scripted", action="store_true", help="also run the scripted LLM")
    parser.add_argument(
        "--scripted-only", action="store_true", help="run the scripted LLM only (no extractive)"
    )
    parser.add_argument(
        "--arms",
        type=parse_arms,
        default=ARMS,
        help="comma-separated arms: full (the whole corpus), withheld (the corpus minus the"
        " gold abstracts of the questions run); default full,withheld",
    )
    parser.add_argument(
        "--calibrate", action="store_true", help="measure the grounding threshold instead"
    )
    parser.add_argument(
        "--llm",
        help="also run the questions through this model (any value --llm of the CLI takes:"
        " openai:gpt-4o, anthropic:..., openai-compatible:MODEL@URL); its API key from the"
        " environment, as for the CLI",
    )
    parser.add_argument(
        "--orchestrator",
        choices=["iterative", "magentic"],
        default="iterative",
        help="the orchestrator of the --llm runs (default iterative)",
    )
    parser.add_argument(
        "--details",
        type=Path,
        help="write the tuning half's outcomes, one JSON line per question (never the test"
        " half's: it is not read question by question)",
    )
    parser.add_argument(
        "--write-accuracy",
        action="store_true",
        help="write the test half's verdict figures (extractive, full corpus, all 250"
        " questions) to src/deepcritical/report/verdict_accuracy.json, which the answer card"
        " shows",
    )
    parser.add_argument(
        "--work-dir",
        type=Path,
        help="keep the imported corpora here and reuse them on the next run (default: a"
        " temporary directory); a corpus already imported adds nothing",
    )
    return parser


def _configurations(args: argparse.Namespace) -> list[tuple[str, ScriptedLLM | None, str | None]]:
    """``(name, scripted model, --llm spec)`` of each configuration the arguments ask for."""
    out: list[tuple[str, ScriptedLLM | None, str | None]] = []
    if not args.scripted_only:
        out.append(("extractive (--llm none)", None, None))
    if args.scripted or args.scripted_only:
        out.append(("scripted FunctionModel, misattributing writer", ScriptedLLM(), None))
    if args.llm:
        out.append((f"--llm {args.llm} ({args.orchestrator})", None, args.llm))
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures; returns the process exit code."""
    use_offline_environment()
    parser = _parser()
    args = parser.parse_args(argv)
    files = pubmedqa_files(args.data)
    if files is None:
        return 0
    corpus_file, questions_file = files
    if args.calibrate:
        calibrate(args.data)
        return 0

    from deepcritical.logs import configure_logging

    configure_logging("ERROR", library_level="ERROR")  # errors only
    from deepcritical.config import Settings
    from deepcritical.corpus.embedding import corpus_embedder
    from deepcritical.corpus.index import LocalCorpus
    from deepcritical.evidence.onnx_embeddings import run_embedder

    every = load_questions(questions_file, None)
    halves = [h for h in HALVES if h in args.halves.split(",")]
    by_half = {h: questions_of(every, h, args.n or None) for h in halves}
    questions = [q for h in halves for q in by_half[h]]
    gold = {str(q["pmid"]) for q in questions}
    embedder = run_embedder()
    configurations = _configurations(args)
    with tempfile.TemporaryDirectory(prefix="dc-bench-pubmedqa-") as tmp_dir:
        tmp = args.work_dir or Path(tmp_dir)
        for arm in args.arms:
            settings = Settings(
                llm="none",
                sources=["local"],
                # the withheld corpus depends on the questions run (a reused corpus only grows)
                data_dir=Path(tmp) / (arm if arm == "full" else f"{arm}-{args.n}"),
                max_rounds=args.rounds,
            )
            source = corpus_file
            if arm == "withheld":
                source = Path(tmp) / f"corpus-gold-withheld-{len(gold)}.jsonl"
                lines = corpus_lines_without(corpus_file.read_text(encoding="utf-8"), gold)
                source.write_text("\n".join(lines) + "\n", encoding="utf-8")
            start = time.perf_counter()
            # imported as `deepcritical corpus add` does (the default corpus embedder)
            with LocalCorpus(settings.resolved_corpus_dir, corpus_embedder(settings)) as corpus:
                imported = corpus.add_file(source)
            print(
                (
                    ""
                    if arm == "full"
                    else f"\ngold withheld ({len(gold)} gold abstracts left out), "
                )
                + f"corpus: {imported.added} abstracts imported in "
                f"{time.perf_counter() - start:.0f} s; {len(questions)} dev questions;"
                f" max_rounds={args.rounds}; grounding threshold {settings.grounding_threshold}"
                " (all-MiniLM-L6-v2)"
            )
            for name, scripted, spec in configurations:
                run_settings = settings
                if spec is not None:
                    update = {"llm": spec, "orchestrator": args.orchestrator}
                    run_settings = settings.model_copy(update=update)
                offline = scripted is None and spec is None
                for half in halves:
                    outcomes: list[Outcome] = []
                    failures: list[str] = []
                    for q in by_half[half]:
                        outcome = asyncio.run(run_one(q, run_settings, embedder, scripted))
                        if isinstance(outcome, Outcome):
                            outcomes.append(outcome)
                        else:
                            failures.append(f"{q['pmid']}: {outcome}")
                    label = f"{name}, {half} half ({len(by_half[half])} questions)"
                    if arm == "full":
                        report_configuration(label, outcomes, failures, targets=half == "test")
                        if args.details and half == "tuning" and offline:
                            write_details(args.details, outcomes)
                        complete = half == "test" and not args.n and offline
                        if args.write_accuracy and complete:
                            write_accuracy(target_figures(outcomes))
                    else:
                        report_withheld(label, outcomes, failures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
