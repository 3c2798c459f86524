"""How a role's structured output is asked for and read back, per endpoint.

Four strategies (``Settings.structured_output``; ``auto`` is resolved by
:func:`deepcritical.llm.probe.resolve_structured_output`):

- ``json_schema``: pydantic-ai ``NativeOutput``; OpenAI's ``response_format``
  ``{"type": "json_schema", "json_schema": {...}}``, compiled to a grammar by vLLM, Ollama and
  llama.cpp's ``llama-server``;
- ``json_object``: the same output, sent in llama-cpp-python's form
  ``{"type": "json_object", "schema": {...}}`` (its server answers HTTP 500 to the
  ``json_schema`` form) by :class:`ConstrainedChatModel`;
- ``tool``: pydantic-ai ``ToolOutput`` (the output is the arguments of a ``final_result`` tool
  call);
- ``prompted``: pydantic-ai ``PromptedOutput`` (the schema is in the instructions, the answer
  is plain text).

Whatever the strategy, :class:`TolerantTextModel` reads the model's text before pydantic-ai
parses it: reasoning in ``<think>…</think>`` (a closed block, an unclosed leading ``<think>`` or
text before a lone ``</think>``) becomes a ``ThinkingPart``; the JSON object is cut out of code
fences and trailing prose and re-encoded, raw newlines inside strings included. What still does
not validate goes back to the model with the validation error (pydantic-ai's output retries).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Literal, get_args

from pydantic_ai import NativeOutput, PromptedOutput
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ThinkingPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

__all__ = [
    "GRAMMAR_STRATEGIES",
    "OUTPUT_STRATEGIES",
    "ConstrainedChatModel",
    "OutputStrategy",
    "StructuredOutputSetting",
    "TolerantTextModel",
    "extract_json_object",
    "grammar_schema",
    "output_spec",
    "split_reasoning",
    "string_list_bounds",
]

StructuredOutputSetting = Literal["auto", "json_schema", "json_object", "tool", "prompted"]
"""The ``structured_output`` setting: a strategy, or ``auto`` (probe the endpoint once)."""

OutputStrategy = Literal["json_schema", "json_object", "tool", "prompted"]
"""A resolved strategy (what one call uses)."""

OUTPUT_STRATEGIES: tuple[OutputStrategy, ...] = get_args(OutputStrategy)
"""Strategies in the order ``auto`` tries them: constrained first, prompted last."""

GRAMMAR_STRATEGIES: frozenset[OutputStrategy] = frozenset({"json_schema", "json_object"})
"""Strategies whose answer the server holds to the schema (a grammar, guided decoding): the
answer can only be the JSON output, never a tool call or free text around it."""

_THINK_OPEN = "<think>"
_THINK_CLOSE = "</think>"


def output_spec(output_type: type[Any], strategy: OutputStrategy) -> Any:
    """The pydantic-ai ``output_type`` argument for ``output_type`` under ``strategy``:
    ``NativeOutput`` (both JSON forms; the model class picks the wire form), the plain type
    (tool output, pydantic-ai's default) or ``PromptedOutput``."""
    if strategy in ("json_schema", "json_object"):
        return NativeOutput(output_type)
    if strategy == "prompted":
        return PromptedOutput(output_type)
    return output_type


GRAMMAR_MAX_ITEMS = 4
"""``maxItems`` given to an array of a grammar schema that sets none (:func:`grammar_schema`)."""

GRAMMAR_MAX_STRING = 160
"""``maxLength`` (characters) given to a free string of a grammar schema that sets none."""


def string_list_bounds(max_items: int, max_chars: int) -> dict[str, Any]:
    """The ``json_schema_extra`` of a list-of-strings field that a grammar bounds to
    ``max_items`` items of at most ``max_chars`` characters each (schema only: validation
    reads the field as before, and the roles cut lists and strings themselves)."""
    return {"maxItems": max_items, "items": {"type": "string", "maxLength": max_chars}}


def grammar_schema(schema: Any) -> Any:
    """A copy of JSON schema ``schema`` that a grammar can hold a small model to.

    Every object requires all its properties: a grammar built from optional fields lets the
    model stop at ``{}`` (a 135M-parameter model does: every field then takes its default).
    Arrays get at most :data:`GRAMMAR_MAX_ITEMS` items and free strings (no enum, format or
    pattern) at most :data:`GRAMMAR_MAX_STRING` characters unless the schema bounds them, so a
    rambling model cannot fill the context with one field. Validation still uses the output
    model itself (fields with defaults validate when present; longer lists are cut by the
    roles as before).
    """
    if isinstance(schema, list):
        return [grammar_schema(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: grammar_schema(v) for k, v in schema.items()}
    properties = out.get("properties")
    if isinstance(properties, dict) and properties:
        out["required"] = list(properties)
    if out.get("type") == "array" and "maxItems" not in out:
        out["maxItems"] = max(GRAMMAR_MAX_ITEMS, int(out.get("minItems", 0)))
    free = not {"enum", "const", "format", "pattern", "maxLength"} & set(out)
    if out.get("type") == "string" and free:
        out["maxLength"] = GRAMMAR_MAX_STRING
    return out


class ConstrainedChatModel(OpenAIChatModel):
    """``OpenAIChatModel`` for openai-compatible servers whose native structured output is a
    grammar built from the schema: the schema is bounded (:func:`grammar_schema`), and with
    ``json_object_form`` it is sent as ``{"type": "json_object", "schema": ...}``
    (llama-cpp-python's server) instead of OpenAI's ``{"type": "json_schema", ...}`` form
    (``llama-server``, vLLM, Ollama)."""

    json_object_form: bool = False

    def _map_json_schema(self, o: Any) -> Any:
        schema = grammar_schema(o.json_schema)
        if self.json_object_form:
            return {"type": "json_object", "schema": schema}
        mapped: Any = super()._map_json_schema(replace(o, json_schema=schema))
        return mapped


def split_reasoning(text: str) -> tuple[str, str]:
    """``(reasoning, answer)`` of a model's text.

    Closed ``<think>…</think>`` blocks, the text before a lone ``</think>`` (templates that
    open the block in the prompt) and an unclosed leading ``<think>`` (the reasoning runs into
    the answer; the answer is then whatever JSON object follows) are reasoning.
    """
    reasoning: list[str] = []
    rest = text
    while (start := rest.find(_THINK_OPEN)) >= 0:
        end = rest.find(_THINK_CLOSE, start)
        if end < 0:
            reasoning.append(rest[start + len(_THINK_OPEN) :])
            rest = rest[:start] + rest[start + len(_THINK_OPEN) :]
            break
        reasoning.append(rest[start + len(_THINK_OPEN) : end])
        rest = rest[:start] + rest[end + len(_THINK_CLOSE) :]
    if (end := rest.find(_THINK_CLOSE)) >= 0:
        reasoning.append(rest[:end])
        rest = rest[end + len(_THINK_CLOSE) :]
    return "\n".join(r.strip() for r in reasoning if r.strip()), rest.strip()


def extract_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in ``text``, or ``None``.

    Reads code fences, prose before or after the object, and raw control characters (newlines,
    tabs) inside strings (``json`` non-strict mode). When several objects are present, the
    last outermost one wins (reasoning that quotes an example comes before the answer).
    """
    decoder = json.JSONDecoder(strict=False)
    found: dict[str, Any] | None = None
    pos = text.find("{")
    while pos >= 0:
        try:
            value, end = decoder.raw_decode(text, pos)
        except ValueError:
            pos = text.find("{", pos + 1)
            continue
        if isinstance(value, dict):
            found = value
        pos = text.find("{", end)
    return found


def _clean_parts(response: ModelResponse, *, json_text: bool) -> ModelResponse:
    """``response`` with reasoning moved out of its text parts and (``json_text``) each text
    part's JSON object re-encoded."""
    parts: list[Any] = []
    changed = False
    for part in response.parts:
        if not isinstance(part, TextPart):
            parts.append(part)
            continue
        reasoning, answer = split_reasoning(part.content)
        if reasoning:
            parts.append(ThinkingPart(content=reasoning))
        if json_text and (obj := extract_json_object(answer)) is not None:
            answer = json.dumps(obj, ensure_ascii=False)
        changed = changed or bool(reasoning) or answer != part.content
        parts.append(replace(part, content=answer))
    return replace(response, parts=parts) if changed else response


class TolerantTextModel(WrapperModel):
    """``wrapped``, with each response's text read tolerantly (see the module docstring)
    before pydantic-ai parses it; tool calls pass unchanged. Streaming is not wrapped."""

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """The wrapped model's response, cleaned (JSON repair only for native/prompted
        output, where the text is the output)."""
        response = await self.wrapped.request(messages, model_settings, model_request_parameters)
        json_text = model_request_parameters.output_mode in ("native", "prompted")
        return _clean_parts(response, json_text=json_text)
