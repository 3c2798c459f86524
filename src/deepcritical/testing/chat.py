"""Scripted LLMs for the Magentic tests, in process and over HTTP.

- :class:`ManagerScript` answers the Magentic manager's prompts (read from the installed
  ``agent_framework_orchestrations._magentic`` prompts): the facts pre-survey, the plan, the
  JSON progress ledgers (a scripted sequence of next speakers; booleans optionally written as
  strings, as small models do), the facts/plan updates of a replan and the final answer.
- :class:`RoleScript` answers every structured-output role of the pydantic-ai agents
  (planner, query generator, hypothesis generator, judge, reflection, writer outline, writer
  sections and summary), read
  from the output tool's JSON schema, citing only ids fenced in the prompt.
- :class:`ScriptedChatClient` (an agent-framework ``BaseChatClient``) and
  :meth:`RoleScript.model` (a pydantic-ai ``FunctionModel``) play them in process.
- :class:`ChatCompletionsStub` plays both over HTTP on 127.0.0.1: ``POST
  /v1/chat/completions`` (JSON, and SSE when the client asks for ``stream``).

Every answer reports token usage; the scripts tally what they reported per usage role
(``manager``, ``planner``, ``query_generator``, ``hypothesis``, ``judge``,
``writer.outline``, ``writer.section``, ``writer.summary``) so tests can compare it with the
report metadata.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agent_framework import BaseChatClient, ChatResponse, Message
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from deepcritical.text.clarify_rules import clarify_by_rules

ROLE_BY_FIELD = {
    "checklist": "planner",
    "clarifying_questions": "clarifier",
    "hypotheses": "hypothesis",
    "mechanism_score": "judge",
    "outline": "writer.outline",
    "content": "writer.section",
    "executive_summary": "writer.summary",
    "follow_up_queries": "reflection",
    "rewritten_sentence": "rewriter",
    "screened": "screener",
    "decisions": "screener",  # the screener's structured form (no tools)
    "sentences": "writer.section",  # the section's grammar form
    "queries": "query_generator",  # last: the planner's output has "queries" too
}
FENCED_ID = re.compile(r'<source id="(E\d+)" nonce="[0-9a-f]+">')
FENCED_BLOCK = re.compile(
    r'<source id="(E\d+)" nonce="([0-9a-f]+)">\n(.*?)\n</source \2>', re.DOTALL
)
RECORD_LINE = re.compile(r"^Record: source_type=(.*?); external_id=(.*?); url=(.*)$", re.M)
CHECKLIST_KEY = re.compile(r"^- ([\w.-]+): .* \(\d+\)$", re.MULTILINE)
OUTPUT_TOOL = "final_result"
MANAGER_ROLE = "manager"

INSTRUCTIONS = {
    "SearchAgent": "Find clinical studies of metformin and cancer incidence in diabetics",
    "HypothesisAgent": "Form mechanistic hypotheses from the evidence collected so far",
    "JudgeAgent": "Judge whether the evidence answers the question",
    "ReportAgent": "Write the final report from the evidence store",
}


@dataclass
class Tally:
    """Requests and tokens reported, per usage role."""

    requests: dict[str, int] = field(default_factory=dict)
    input_tokens: dict[str, int] = field(default_factory=dict)
    output_tokens: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, role: str, input_tokens: int, output_tokens: int) -> None:
        with self.lock:
            self.requests[role] = self.requests.get(role, 0) + 1
            self.input_tokens[role] = self.input_tokens.get(role, 0) + input_tokens
            self.output_tokens[role] = self.output_tokens.get(role, 0) + output_tokens

    def roles(self) -> set[str]:
        return set(self.requests)


def _tokens(text: str, base: int) -> int:
    """A deterministic token count for ``text`` (roughly words), plus ``base``."""
    return base + len(text.split())


# --------------------------------------------------------------------------- manager
@dataclass
class ManagerScript:
    """The Magentic manager's answers.

    Args:
        speakers: next speaker of each successive progress ledger; ``None`` answers "request
            satisfied". When exhausted: ``cycle`` restarts the list, else the last entry
            repeats.
        string_booleans: write the ledger booleans as strings ("false", "true").
        hang_at_ledger: the n-th ledger request (1-based) never returns (cancellation tests).
        in_loop: answer ``is_in_loop`` true (stall tests).
    """

    speakers: Sequence[str | None] = (
        "SearchAgent",
        "HypothesisAgent",
        "JudgeAgent",
        "ReportAgent",
        None,
    )
    cycle: bool = False
    string_booleans: bool = False
    hang_at_ledger: int | None = None
    in_loop: bool = False
    tally: Tally = field(default_factory=Tally)
    kinds: list[str] = field(default_factory=list)
    ledgers: int = 0

    def kind_of(self, prompt: str) -> str:
        if "pre-survey" in prompt:
            return "facts"
        if "devise a short bullet-point plan" in prompt:
            return "plan"
        if "rewrite the following fact sheet" in prompt:
            return "facts_update"
        if "come up with a new plan" in prompt:
            return "plan_update"
        if "Is the request fully satisfied?" in prompt:
            return "ledger"
        if "provide the final answer" in prompt:
            return "final"
        raise AssertionError(f"an unexpected manager prompt: {prompt[:300]!r}")

    def _speaker(self) -> str | None:
        index = self.ledgers - 1
        if index < len(self.speakers):
            return self.speakers[index]
        if self.cycle:
            return self.speakers[index % len(self.speakers)]
        return self.speakers[-1]

    def _bool(self, value: bool) -> bool | str:
        return ("true" if value else "false") if self.string_booleans else value

    def ledger(self) -> str:
        speaker = self._speaker()
        satisfied = speaker is None
        return json.dumps(
            {
                "is_request_satisfied": {
                    "reason": "the report is written" if satisfied else "work remains",
                    "answer": self._bool(satisfied),
                },
                "is_in_loop": {"reason": "scripted", "answer": self._bool(self.in_loop)},
                "is_progress_being_made": {
                    "reason": "scripted",
                    "answer": self._bool(not self.in_loop),
                },
                "next_speaker": {"reason": "scripted", "answer": speaker or "ReportAgent"},
                "instruction_or_question": {
                    "reason": "scripted",
                    "answer": INSTRUCTIONS.get(speaker or "", "Thank you."),
                },
            },
            indent=2,
        )

    def reply(self, prompt: str) -> tuple[str, int, int, bool]:
        """(text, input tokens, output tokens, hang) for the manager request ending in
        ``prompt``."""
        kind = self.kind_of(prompt)
        self.kinds.append(kind)
        hang = False
        if kind == "ledger":
            self.ledgers += 1
            hang = self.hang_at_ledger is not None and self.ledgers >= self.hang_at_ledger
            text = self.ledger()
        elif kind in {"facts", "facts_update"}:
            text = (
                "1. GIVEN OR VERIFIED FACTS\n- The question.\n2. FACTS TO LOOK UP\n- Studies in "
                "PubMed.\n3. FACTS TO DERIVE\n- None.\n4. EDUCATED GUESSES\n- Some effect."
            )
        elif kind in {"plan", "plan_update"}:
            text = "- SearchAgent gathers evidence\n- JudgeAgent judges\n- ReportAgent writes"
        else:
            text = "The team wrote a validated report; see the report for the answer."
        input_tokens = _tokens(prompt, 40)
        output_tokens = _tokens(text, 3)
        self.tally.add(MANAGER_ROLE, input_tokens, output_tokens)
        return text, input_tokens, output_tokens, hang


class ScriptedChatClient(BaseChatClient):
    """An agent-framework chat client answering with a :class:`ManagerScript`."""

    def __init__(self, script: ManagerScript) -> None:
        super().__init__()
        self.script = script

    def _inner_get_response(
        self,
        *,
        messages: Sequence[Message],
        stream: bool,
        options: Mapping[str, Any],
        **kwargs: Any,
    ) -> Any:
        if stream:
            raise NotImplementedError("the Magentic manager does not stream")
        prompt = next((m.text for m in reversed(messages) if m.role == "user"), "")

        async def respond() -> ChatResponse[Any]:
            text, input_tokens, output_tokens, hang = self.script.reply(prompt)
            if hang:
                await asyncio.sleep(3600)
            return ChatResponse(
                messages=[Message(role="assistant", contents=[text])],
                usage_details={
                    "input_token_count": input_tokens,
                    "output_token_count": output_tokens,
                    "total_token_count": input_tokens + output_tokens,
                },
            )

        return respond()


# --------------------------------------------------------------------------- roles
@dataclass
class RoleScript:
    """Structured outputs of every LLM role, from the prompt they were given.

    Args:
        sufficient_at_call: the judge says ``sufficient`` from its n-th call (1-based).
        fail_roles: roles whose calls raise (as a broken model would).
    """

    sufficient_at_call: int | None = None
    fail_roles: frozenset[str] = frozenset()
    tally: Tally = field(default_factory=Tally)
    prompts: dict[str, list[str]] = field(default_factory=dict)
    off_topic_text: str | None = None
    """The screener saves no record whose text holds this, and calls it off-topic."""
    invalid_roles: frozenset[str] = frozenset()
    """Roles whose final output is broken JSON."""
    tool_calls: list[str] = field(default_factory=list)
    """Names of the source tools the screener called, in order."""
    tool_answers: list[str] = field(default_factory=list)
    """What those tools answered."""

    def role_of(self, properties: Mapping[str, Any] | Sequence[str]) -> str:
        fields = set(properties)
        return next((r for f, r in ROLE_BY_FIELD.items() if f in fields), "unknown")

    def answer(
        self, role: str, prompt: str, properties: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The role's answer to ``prompt``, in the form its schema's ``properties`` ask for
        (the screener's ``decisions`` and the section's ``sentences`` forms included)."""
        answer = self._answer(role, prompt)
        fields = set(properties or ())
        if role == "screener" and "decisions" in fields:
            return self._decisions(prompt, answer)
        if role == "writer.section" and "sentences" in fields:
            return {"sentences": _sentences(answer["content"])}
        return answer

    def _answer(self, role: str, prompt: str) -> dict[str, Any]:
        self.prompts.setdefault(role, []).append(prompt)
        if role in self.fail_roles:
            raise RuntimeError(f"scripted failure of {role}")
        method = {
            "planner": self._planner,
            "clarifier": self._clarifier,
            "query_generator": self._queries,
            "hypothesis": self._hypothesis,
            "judge": self._judge,
            "writer.outline": self._outline,
            "writer.section": self._section,
            "reflection": self._reflection,
            "rewriter": self._rewriter,
            "writer.summary": self._summary,
            "screener": self._screener,
        }.get(role)
        if method is None:
            raise AssertionError(f"a request for an unknown output: {prompt[:200]}")
        return method(prompt)

    def usage(self, role: str, prompt: str, answer: str) -> tuple[int, int]:
        input_tokens, output_tokens = _tokens(prompt, 20), _tokens(answer, 2)
        self.tally.add(role, input_tokens, output_tokens)
        return input_tokens, output_tokens

    # pydantic-ai, in process
    def model(self, name: str = "scripted-roles") -> FunctionModel:
        return FunctionModel(self.respond, model_name=name)

    def screener_step(self, prompt: str, step: int) -> list[tuple[str, dict[str, Any]]]:
        """The screener's tool calls at ``step`` (0: ``save_source`` for every record but the
        off-topic ones, each for one checklist question in turn, with one verbatim and one
        made-up excerpt, and ``get_progress``; 1:
        ``check_completion``); ``[]`` from step 2 (then it gives its output)."""
        if step == 1:
            return [("check_completion", {})]
        if step > 1:
            return []
        keys = CHECKLIST_KEY.findall(prompt)
        calls: list[tuple[str, dict[str, Any]]] = []
        for sid, _nonce, body in FENCED_BLOCK.findall(prompt):
            if self.off_topic_text and self.off_topic_text in body:
                continue
            record = RECORD_LINE.search(body)
            assert record, body[:200]
            title = re.search(r"^Title: (.*)$", body, re.MULTILINE)
            opening = first_words(body)
            arguments = {
                "source_type": record.group(1),
                "external_id": record.group(2),
                "url": None if record.group(3) == "none" else record.group(3),
                "title": title.group(1) if title else "",
                "relevant_questions": [keys[len(calls) % len(keys)]],
                "key_excerpts": [opening, "a paraphrase the source never says"],
                "citation_id": sid,
            }
            calls.append(("save_source", arguments))
        return [*calls, ("get_progress", {})]

    def _screener(self, prompt: str) -> dict[str, Any]:
        screened = []
        for sid, _nonce, body in FENCED_BLOCK.findall(prompt):
            off = bool(self.off_topic_text and self.off_topic_text in body)
            screened.append(
                {
                    "citation_id": sid,
                    "status": "off_topic" if off else "relevant",
                    "reason": "about another disease" if off else "answers the question",
                }
            )
        return {
            "screened": screened,
            "next_queries": ["metformin screened follow-up"],
            "progress": "Scripted screening.",
        }

    def screener_response(
        self, messages: list[ModelMessage], info: AgentInfo
    ) -> ModelResponse | None:
        """The scripted screener's next tool calls when ``info`` is a screener request that is
        not done with its tools (:meth:`screener_step`); ``None`` otherwise. Other scripted
        models call it first to play the search agent's screening."""
        tool = info.output_tools[0]
        if self.role_of(tool.parameters_json_schema.get("properties", {})) != "screener":
            return None
        prompt = first_prompt(messages)
        self.tool_answers.extend(
            str(p.content)
            for p in messages[-1].parts
            if isinstance(p, ToolReturnPart | RetryPromptPart)
        )
        step = sum(isinstance(m, ModelResponse) for m in messages)
        calls = self.screener_step(prompt, step)
        if not calls:
            return None
        self.tool_calls.extend(name for name, _ in calls)
        input_tokens, output_tokens = self.usage(
            "screener", prompt, json.dumps([a for _, a in calls])
        )
        return ModelResponse(
            parts=[ToolCallPart(n, json.dumps(a)) for n, a in calls],
            usage=RequestUsage(input_tokens=input_tokens, output_tokens=output_tokens),
        )

    def screener_output(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        """The scripted screener's final output (after :meth:`screener_response`)."""
        prompt = first_prompt(messages)
        tool = info.output_tools[0]
        return ModelResponse(parts=[ToolCallPart(tool.name, json.dumps(self._screener(prompt)))])

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        """The scripted answer to one request of a pydantic-ai agent (:meth:`model`'s
        function): the screener's tool calls, then every role's output as a tool call, or as
        text when the request asks for native or prompted output."""
        if not info.output_tools:  # native or prompted output: the answer is the text
            return self._text_output(messages, info)
        tool = info.output_tools[0]
        properties = tool.parameters_json_schema.get("properties", {})
        role = self.role_of(properties)
        prompt = first_prompt(messages)
        response = self.screener_response(messages, info)
        if response is not None:
            return response
        if role in self.invalid_roles:
            self.prompts.setdefault(role, []).append(prompt)
            return ModelResponse(parts=[ToolCallPart(tool.name, '{"broken": ')])
        arguments = json.dumps(self.answer(role, prompt, properties))
        input_tokens, output_tokens = self.usage(role, prompt, arguments)
        return ModelResponse(
            parts=[ToolCallPart(tool.name, arguments)],
            usage=RequestUsage(input_tokens=input_tokens, output_tokens=output_tokens),
        )

    def _text_output(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        """The answer as text (a grammar-constrained or prompted request): the role is read
        from the request's output schema, as a server holding a model to it would."""
        output_object = info.model_request_parameters.output_object
        assert output_object is not None, "a request with neither output tools nor a schema"
        properties = output_object.json_schema.get("properties", {})
        role = self.role_of(properties)
        prompt = first_prompt(messages)
        if role in self.invalid_roles:
            self.prompts.setdefault(role, []).append(prompt)
            return ModelResponse(parts=[TextPart('{"broken": ')])
        text = json.dumps(self.answer(role, prompt, properties))
        input_tokens, output_tokens = self.usage(role, prompt, text)
        return ModelResponse(
            parts=[TextPart(text)],
            usage=RequestUsage(input_tokens=input_tokens, output_tokens=output_tokens),
        )

    def _decisions(self, prompt: str, screened: Mapping[str, Any]) -> dict[str, Any]:
        """The screener's answer in its structured form: one decision per fenced record,
        each kept record for one checklist key in turn, with its first eight words as the
        excerpt (off-topic ones as :meth:`_screener` calls them)."""
        keys = CHECKLIST_KEY.findall(prompt)
        status = {s["citation_id"]: s for s in screened["screened"]}
        decisions: dict[str, Any] = {}
        for n, (sid, _nonce, body) in enumerate(FENCED_BLOCK.findall(prompt)):
            opening = first_words(body)
            judged = status.get(sid, {"status": "relevant", "reason": "answers the question"})
            decisions[sid] = {
                "reason": judged["reason"],
                "status": judged["status"],
                "checklist_keys": [keys[n % len(keys)]],
                "excerpt": opening,
            }
        return {
            "decisions": decisions,
            "next_queries": screened["next_queries"],
            "progress": screened["progress"],
        }

    # answers
    @staticmethod
    def _question(prompt: str) -> str:
        m = re.search(r"^Research question: (.+)$", prompt, re.MULTILINE)
        return m.group(1).strip() if m else "the question"

    @staticmethod
    def _shown(prompt: str) -> list[str]:
        return FENCED_ID.findall(prompt)

    @staticmethod
    def _clarifier(prompt: str) -> dict[str, Any]:
        """The offline rules' clarification of the fenced question, as the model's answer
        (no question for one the rules find complete)."""
        m = re.search(
            r'<source id="user_question" nonce="[0-9a-f]+">\n(.*?)\n</source', prompt, re.S
        )
        clarification = clarify_by_rules(m.group(1) if m else "")
        questions = clarification.questions if clarification is not None else []
        return {"clarifying_questions": [q.model_dump(mode="json") for q in questions]}

    def _planner(self, prompt: str) -> dict[str, Any]:
        return {
            "refined_question": self._question(prompt),
            "checklist": [
                {
                    "key": "cancer_incidence",
                    "description": "Cancer incidence in patients with diabetes taking metformin",
                    "min_evidence": 1,
                },
                {
                    "key": "mechanism",
                    "description": "Mechanism of metformin against cancer through AMPK and mTOR",
                    "min_evidence": 1,
                },
                {
                    "key": "trials",
                    "description": "Randomised trials of metformin for cancer outcomes",
                    "min_evidence": 1,
                },
            ],
            "queries": ["metformin cancer risk diabetes"],
            "key_terms": ["metformin", "cancer"],
        }

    def _queries(self, prompt: str) -> dict[str, Any]:
        m = re.search(r"^Search round: (\d+)", prompt, re.MULTILINE)
        round_no = int(m.group(1)) if m else 1
        by_round = {
            1: ["metformin cancer incidence diabetes", "metformin AMPK mTOR cancer"],
            2: ["metformin randomised trial cancer", "metformin tumour growth"],
            3: ["metformin cancer mortality cohort"],
        }
        return {"queries": by_round.get(round_no, [f"metformin cancer round {round_no}"])}

    def _hypothesis(self, prompt: str) -> dict[str, Any]:
        shown = self._shown(prompt)
        return {
            "hypotheses": [
                {
                    "statement": "Metformin lowers cancer risk by activating AMPK.",
                    "drug": "metformin",
                    "target": "AMPK",
                    "pathway": "mTOR",
                    "effect": "lower cancer incidence",
                    "confidence": 0.6,
                    "supporting_evidence_ids": shown[:1],
                    "contradicting_evidence_ids": [],
                }
            ]
        }

    def _judge(self, prompt: str) -> dict[str, Any]:
        calls = len(self.prompts.get("judge", []))
        sufficient = self.sufficient_at_call is not None and calls >= self.sufficient_at_call
        return {
            "mechanism_score": 6,
            "clinical_evidence_score": 5,
            "sufficient": sufficient,
            "recommendation": "synthesize" if sufficient else "continue",
            "next_queries": [] if sufficient else ["metformin cancer meta-analysis"],
            "reasoning": "Scripted judgement.",
        }

    def _outline(self, prompt: str) -> dict[str, Any]:
        shown = self._shown(prompt)
        assert shown, "the writer was shown no source"
        first = shown[0]
        second = shown[1] if len(shown) > 1 else first
        return {
            "title": "Metformin and cancer risk: a scripted review",
            "outline": [
                {"heading": "Cancer incidence", "purpose": "incidence", "evidence_ids": [first]},
                {"heading": "Mechanism", "purpose": "mechanism", "evidence_ids": [second]},
            ],
        }

    def _section(self, prompt: str) -> dict[str, Any]:
        shown = self._shown(prompt)
        assert shown, "the section was shown no source"
        if "Section to write: Mechanism" in prompt:
            return {"content": f"AMPK activation inhibits mTOR signalling [{shown[0]}]."}
        return {"content": f"Metformin users had fewer cancers [{shown[0]}]."}

    def _rewriter(self, prompt: str) -> dict[str, Any]:
        return {"rewritten_sentence": ""}  # declines

    def _reflection(self, prompt: str) -> dict[str, Any]:
        """Every checklist item partial (gathering goes on to the round limit)."""
        keys = re.findall(r"^- (\w+) \(\d+/\d+ sources", prompt, re.MULTILINE)
        return {
            "items": [{"key": k, "status": "partial", "missing": "more trials"} for k in keys],
            "follow_up_queries": ["metformin cancer cohort study"],
            "reasoning": "Scripted reflection.",
        }

    def _summary(self, prompt: str) -> dict[str, Any]:
        shown = self._shown(prompt)
        first = shown[0] if shown else "E1"
        return {
            "executive_summary": f"Metformin is associated with lower cancer risk [{first}].",
            "limitations": ["Few randomised trials."],
            "conclusion": f"The evidence suggests a modest protective effect [{first}].",
        }


# --------------------------------------------------------------------------- HTTP stub
class _CompletionsHandler(BaseHTTPRequestHandler):
    """The stub's request handler: ``stub`` is the :class:`ChatCompletionsStub` it answers
    for (set on the subclass each stub makes)."""

    stub: ChatCompletionsStub

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            with self.stub._lock:
                self.stub.requests.append(body)
            rejected = self.stub.rejects(body)
            if rejected:
                self._send(500, {"error": {"message": rejected}})
                return
            completion = self.stub.rambling(body) or self.stub.complete(body)
            if body.get("stream"):
                self._send_sse(completion, body)
            else:
                self._send(200, completion)
        except Exception as exc:  # noqa: BLE001 - a bug in the stub: report it, answer 500
            self.stub.errors.append(f"{type(exc).__name__}: {exc}")
            self._send(500, {"error": {"message": str(exc)}})

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_sse(self, completion: dict[str, Any], body: dict[str, Any]) -> None:
        message = completion["choices"][0]["message"]
        delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
        if message.get("tool_calls"):
            delta["tool_calls"] = [
                {"index": i, **call} for i, call in enumerate(message["tool_calls"])
            ]
        base = {k: completion[k] for k in ("id", "created", "model")}
        chunks = [
            {
                **base,
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
            },
            {
                **base,
                "object": "chat.completion.chunk",
                "choices": [
                    {
                        "index": 0,
                        "delta": {},
                        "finish_reason": completion["choices"][0]["finish_reason"],
                    }
                ],
            },
        ]
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append(
                {
                    **base,
                    "object": "chat.completion.chunk",
                    "choices": [],
                    "usage": completion["usage"],
                }
            )
        data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        raw = data.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


class ChatCompletionsStub:
    """An OpenAI Chat Completions server on 127.0.0.1 (ephemeral port) in a thread.

    Requests with ``tools`` are structured-output calls of the pydantic-ai roles (answered
    with a tool call by :class:`RoleScript`); requests without are the Magentic manager's
    (answered with text by :class:`ManagerScript`). ``stream: true`` is answered as SSE.
    """

    def __init__(
        self,
        manager: ManagerScript,
        roles: RoleScript,
        *,
        reject_json_schema: bool = False,
        ramble: frozenset[str] = frozenset(),
    ) -> None:
        self.manager = manager
        self.roles = roles
        self.reject_json_schema = reject_json_schema
        self.ramble = set(ramble)
        self.rambled: list[tuple[str, int | None]] = []
        self.requests: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        handler = type("Handler", (_CompletionsHandler,), {"stub": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> ChatCompletionsStub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _native(
        self, schema: Mapping[str, Any], messages: Sequence[Mapping[str, Any]], tools: list[Any]
    ) -> tuple[dict[str, Any], int, int]:
        """``(message, input_tokens, output_tokens)`` answering a request for JSON output
        following ``schema``: the probe's tiny answer (not tallied), a progress ledger, the
        screener's tool calls while it has some, or the role's answer as message content."""
        properties = schema.get("properties", {})
        if "letters" in properties:  # deepcritical.llm.probe
            return {"role": "assistant", "content": '{"answer": "yes", "letters": 3}'}, 0, 0
        prompt = next((_text(m.get("content")) for m in messages if m.get("role") == "user"), "")
        if "is_request_satisfied" in properties:
            last = next(
                (_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"),
                "",
            )
            text, input_tokens, output_tokens, _hang = self.manager.reply(last)
            return {"role": "assistant", "content": text}, input_tokens, output_tokens
        role = self.roles.role_of(properties)
        step = sum(m.get("role") == "assistant" for m in messages)
        calls = self.roles.screener_step(prompt, step) if role == "screener" and tools else []
        if calls:
            arguments = json.dumps([a for _, a in calls])
            input_tokens, output_tokens = self.roles.usage(role, prompt, arguments)
            tool_calls = [
                {
                    "id": f"call_{len(self.requests)}_{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for i, (name, args) in enumerate(calls)
            ]
            message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
            return message, input_tokens, output_tokens
        content = json.dumps(self.roles.answer(role, prompt, properties))
        input_tokens, output_tokens = self.roles.usage(role, prompt, content)
        return {"role": "assistant", "content": content}, input_tokens, output_tokens

    def rejects(self, body: dict[str, Any]) -> str | None:
        """Why a server playing llama-cpp-python (``reject_json_schema``) answers HTTP 500 to
        ``body``: OpenAI's ``json_schema`` response format; ``None``: it is answered."""
        response_format = body.get("response_format") or {}
        if self.reject_json_schema and response_format.get("type") == "json_schema":
            return "Unknown response_format type: json_schema"
        return None

    def rambling(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """A model that never stops, for the first request of each kind named in ``ramble``
        (``"manager"``: its plain chat; ``"ledger"``: its JSON progress ledger; ``"role"``: a
        pydantic-ai role): text generated up to the request's ``max_tokens`` (or
        ``max_completion_tokens``) and cut there, ``finish_reason: "length"``; a request
        without a bound never returns (the test then fails on its time). ``None`` for every
        other request."""
        properties = (_response_schema(body.get("response_format")) or {}).get("properties", {})
        kind = request_kind(body)
        if kind == "manager" and "is_request_satisfied" in properties:
            kind = "ledger"
        bound = body.get("max_tokens") or body.get("max_completion_tokens")
        with self._lock:
            if kind not in self.ramble:
                return None
            self.ramble.discard(kind)
            self.rambled.append((kind, bound))
        if bound is None:
            time.sleep(3600)  # generating forever
            return None
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model") or "stub"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "and so on " * (bound // 3)},
                    "finish_reason": "length",
                }
            ],
            "usage": {"prompt_tokens": 50, "completion_tokens": bound, "total_tokens": 50 + bound},
        }

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """The Chat Completions response to ``body``."""
        messages = body.get("messages") or []
        model = str(body.get("model") or "stub")
        tools = body.get("tools") or []
        schema = _response_schema(body.get("response_format"))
        message: dict[str, Any]
        if schema is not None:
            message, input_tokens, output_tokens = self._native(schema, messages, tools)
            finish = "tool_calls" if message.get("tool_calls") else "stop"
        elif tools:
            function = next(
                (t["function"] for t in tools if t["function"]["name"] == OUTPUT_TOOL),
                tools[0]["function"],
            )
            role = self.roles.role_of(function.get("parameters", {}).get("properties", {}))
            prompt = next(
                (_text(m.get("content")) for m in messages if m.get("role") == "user"), ""
            )
            step = sum(m.get("role") == "assistant" for m in messages)
            calls = self.roles.screener_step(prompt, step) if role == "screener" else []
            if not calls:
                calls = [(function["name"], self.roles.answer(role, prompt))]
            arguments = json.dumps([a for _, a in calls])
            input_tokens, output_tokens = self.roles.usage(role, prompt, arguments)
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{len(self.requests)}_{i}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                    for i, (name, args) in enumerate(calls)
                ],
            }
            finish = "tool_calls"
        else:
            prompt = next(
                (_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"),
                "",
            )
            text, input_tokens, output_tokens, hang = self.manager.reply(prompt)
            if hang:
                time.sleep(30)
            message = {"role": "assistant", "content": text}
            finish = "stop"
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": input_tokens,
                "completion_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
            },
        }


def first_prompt(messages: Sequence[ModelMessage]) -> str:
    """The user prompt of a pydantic-ai request (its first message's user parts)."""
    first = messages[0]
    assert isinstance(first, ModelRequest)
    return "\n".join(str(p.content) for p in first.parts if isinstance(p, UserPromptPart))


def first_words(body: str, count: int = 8) -> str:
    """The first ``count`` words of a fenced record's ``Text:`` line (a verbatim excerpt)."""
    text = re.search(r"^Text: (.*)$", body, re.MULTILINE)
    return " ".join((text.group(1) if text else "").split()[:count])


def _sentences(content: str) -> list[dict[str, Any]]:
    """A section's ``content`` in its grammar form: each sentence's text without its
    markers, and the ids of those markers."""
    out = []
    for sentence in re.findall(r"[^.!?]+[.!?]", content):
        ids = re.findall(r"E\d+", " ".join(re.findall(r"\[[^\]]*\]", sentence)))
        text = re.sub(r"\s*\[[^\]]*\]", "", sentence).strip()
        if text:
            out.append({"text": text, "evidence_ids": ids})
    return out


def request_kind(body: Mapping[str, Any]) -> str:
    """``"probe"`` (the structured-output probe, :mod:`deepcritical.llm.probe`),
    ``"manager"`` (the Magentic manager: plain chat, or a progress ledger asked for with a
    ``response_format``) or ``"role"`` (a pydantic-ai role: tools or a response schema)."""
    properties = (_response_schema(body.get("response_format")) or {}).get("properties", {})
    if "letters" in properties:
        return "probe"
    if "is_request_satisfied" in properties:
        return "manager"
    return "role" if body.get("tools") or properties else "manager"


def request_role(roles: RoleScript, body: Mapping[str, Any]) -> str:
    """The LLM role a Chat Completions request ``body`` is for, from its output schema (the
    ``response_format`` or the output tool's parameters): ``"writer.section"``, ``"judge"``,
    ...; ``"unknown"`` for the Magentic manager's free-text calls and the probe."""
    schema = _response_schema(body.get("response_format"))
    if schema is not None:
        return roles.role_of(schema.get("properties", {}))
    tools = body.get("tools") or []
    if not tools:
        return "unknown"
    function = next(
        (t["function"] for t in tools if t["function"]["name"] == OUTPUT_TOOL),
        tools[0]["function"],
    )
    return roles.role_of(function.get("parameters", {}).get("properties", {}))


def _response_schema(response_format: Any) -> dict[str, Any] | None:
    """The JSON schema of a ``response_format`` (OpenAI's ``json_schema`` form or
    llama-cpp-python's ``json_object`` + ``schema``); ``None`` without one."""
    if not isinstance(response_format, Mapping):
        return None
    if response_format.get("type") == "json_schema":
        return dict(response_format.get("json_schema", {}).get("schema") or {})
    if response_format.get("type") == "json_object" and "schema" in response_format:
        return dict(response_format["schema"])
    return None


def _text(content: Any) -> str:
    """The text of a Chat Completions message content (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""
