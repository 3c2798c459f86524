"""The context window an OpenAI-compatible server reports (issue 29): llama.cpp's ``/props``,
vLLM's ``max_model_len`` in ``/v1/models``, Ollama's ``num_ctx`` in ``/api/show``; ``None``
(4,096 assumed for the answers' bound) when none says. HTTP is mocked with respx."""

from __future__ import annotations

import httpx
import pytest
import respx

from deepcritical.config import Settings
from deepcritical.llm.probe import probe_context_tokens
from deepcritical.llm.providers import parse_model_spec

BASE = "http://127.0.0.1:8088"
SPEC = parse_model_spec(f"openai-compatible:qwen@{BASE}/v1")


@pytest.mark.parametrize(
    ("props", "models", "show", "expected"),
    [
        ({"default_generation_settings": {"n_ctx": 8192}}, None, None, 8192),  # llama.cpp
        (None, {"data": [{"id": "qwen", "max_model_len": 32768}]}, None, 32768),  # vLLM
        (None, {"data": [{"id": "qwen"}]}, {"parameters": "num_ctx 16384\nstop x"}, 16384),
        (None, {"data": [{"id": "qwen"}]}, {"parameters": "temperature 0.7"}, None),  # Ollama
        (None, None, None, None),
    ],
)
async def test_the_context_window_is_read_where_the_server_says_it(
    props: dict[str, object] | None,
    models: dict[str, object] | None,
    show: dict[str, object] | None,
    expected: int | None,
) -> None:
    with respx.mock(assert_all_called=False) as mock:
        mock.get(f"{BASE}/props").mock(
            return_value=httpx.Response(200, json=props) if props else httpx.Response(404)
        )
        mock.get(f"{BASE}/v1/models").mock(
            return_value=httpx.Response(200, json=models) if models else httpx.Response(404)
        )
        shown = mock.post(f"{BASE}/api/show").mock(
            return_value=httpx.Response(200, json=show) if show else httpx.Response(404)
        )
        assert await probe_context_tokens(SPEC, None) == expected
        if show is not None:
            assert shown.calls.last.request.content == b'{"model":"qwen"}'
    bound = Settings(llm_context_tokens=expected).output_token_bound()
    assert bound == (1024 if expected is None else min(2048, expected // 4))
