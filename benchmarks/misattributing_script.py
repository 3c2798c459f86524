"""The PubMedQA benchmark's scripted arm: a model whose writer misattributes citations.

:class:`MisattributingScript` plays every LLM role of a research run (a
:class:`~deepcritical.testing.scripted_roles.ScriptedRoles` scenario). Its writer quotes one
sentence of each source it is shown and cites every second quote with the id of *another*
shown source of the same section (a misattributed citation to a real, retrieved, on-topic
paper: the hardest case for grounding), keeping each quote's true and cited id
(:class:`Attribution`); its outline splits the sources shown into two sections; its search
agent screens each round through the source tools (``save_source`` for every record whose
text names the question's key terms, then ``get_progress`` and ``check_completion``; the
others are off-topic). It measures the LLM path, screening and grounding against a known
truth, not the quality of a language model.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo

from deepcritical.testing.chat import CHECKLIST_KEY, FENCED_BLOCK, RECORD_LINE, first_prompt
from deepcritical.testing.scripted_roles import ScriptedRoles, research_question
from deepcritical.text.terms import extract_key_terms, key_term_query, required_term_count

TEXT_LINE = re.compile(r"^Text: (.*)$", re.MULTILINE)
TITLE_LINE = re.compile(r"^Title: (.*)$", re.MULTILINE)
LABEL = re.compile(r"\b[A-Z][A-Z /&,()-]{2,60}:\s+")
SENTENCE = re.compile(r"(?<=[a-z0-9%)\]][.!?])\s+(?=[A-Z])")


@dataclass
class Attribution:
    """A quoted sentence, the source it was taken from and the id the writer cited."""

    sentence: str
    true_id: str
    cited_id: str


@dataclass
class MisattributingScript(ScriptedRoles):
    """Every LLM role, with a misattributing writer (see the module docstring); calls are
    not recorded.

    Args:
        attributions: every quote the writer wrote since it was last cleared, in order.
    """

    model_name: ClassVar[str] = "scripted-misattributing-writer"

    record_calls: bool = False
    attributions: list[Attribution] = field(default_factory=list)

    def screening_steps(
        self, messages: list[ModelMessage], info: AgentInfo
    ) -> ModelResponse | None:
        """The search agent's tool calls at its ``step``-th request (:meth:`_screener_calls`);
        ``None`` once it is done with them."""
        step = sum(isinstance(m, ModelResponse) for m in messages)
        calls = self._screener_calls(first_prompt(messages), step)
        if not calls:
            return None
        return ModelResponse(parts=[ToolCallPart(n, json.dumps(a)) for n, a in calls])

    @staticmethod
    def _question(prompt: str) -> str:
        question = research_question(prompt)
        return "the question" if question is None else question

    def planner(self, prompt: str) -> dict[str, Any]:
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

    def queries(self, prompt: str) -> dict[str, Any]:
        question = self._question(prompt)
        m = re.search(r"^Search round: (\d+)", prompt, re.MULTILINE)
        round_no = int(m.group(1)) if m else 1
        terms = " ".join(extract_key_terms(question)[:3])
        if round_no == 1:
            return {"queries": [question, f"{terms} outcome"]}
        return {"queries": [f"{terms} {suffix} {round_no}" for suffix in ("risk", "trial")]}

    def _quotable(self, prompt: str) -> list[tuple[str, str]]:
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

    def screener(self, prompt: str) -> dict[str, Any]:
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

    def hypothesis(self, prompt: str) -> dict[str, Any]:
        shown = [sid for sid, _ in self._quotable(prompt)]
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

    def judge(self, prompt: str) -> dict[str, Any]:
        return {
            "mechanism_score": 3,
            "clinical_evidence_score": 5,
            "sufficient": False,
            "recommendation": "continue",
            "next_queries": [],
            "reasoning": "Scripted judge: never sufficient.",
        }

    def rewriter(self, prompt: str) -> dict[str, Any]:
        return {"rewritten_sentence": ""}  # declines: grounding removes what it rejects

    def reflection(self, prompt: str) -> dict[str, Any]:
        return {"items": [], "follow_up_queries": [], "reasoning": "Scripted reflection."}

    def outline(self, prompt: str) -> dict[str, Any]:
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

    def findings(self, prompt: str) -> dict[str, Any]:
        shown = self._quotable(prompt)[:8]
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

    def summary(self, prompt: str) -> dict[str, Any]:
        ids = re.findall(r"cite only these ids: ([E\d, ]+)\)", prompt)
        first = ids[0].split(",")[0].strip() if ids else "E1"
        return {
            "executive_summary": (
                f"The collected studies answer the question conclusively [{first}]."
            ),
            "limitations": ["Only abstracts were read."],
            "conclusion": "More research is needed.",
        }
