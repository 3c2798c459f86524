"""Test doubles shipped with the package, as pydantic-ai ships ``TestModel``: what the
project's tests and benchmarks share, and what a user's own tests of a DeepCritical
integration can use. Nothing at run time imports it.

- :mod:`~deepcritical.testing.chat`: scripted models (a pydantic-ai ``FunctionModel`` per
  role, :class:`~deepcritical.testing.chat.ScriptedChatClient` for the Magentic manager) and
  :class:`~deepcritical.testing.chat.ChatCompletionsStub`, a local OpenAI-compatible server;
- :mod:`~deepcritical.testing.scripted_roles`:
  :class:`~deepcritical.testing.scripted_roles.ScriptedRoles`, one ``FunctionModel`` function
  for every role that a test's or benchmark's scenario fills in;
- :mod:`~deepcritical.testing.api_stub`: :class:`~deepcritical.testing.api_stub.StubAPI`, a
  local HTTP server of the search APIs answering from recorded responses;
- :mod:`~deepcritical.testing.llama_server`: a real llama.cpp server (llama-cpp-python) of
  SmolLM2-135M on 127.0.0.1;
- :mod:`~deepcritical.testing.failing_sources`: sources that fail or hang;
- :mod:`~deepcritical.testing.embedders`: a deterministic embedder without a model;
- :mod:`~deepcritical.testing.fulltext_questions`: questions answered only in the body of
  the six shared JATS articles;
- :mod:`~deepcritical.testing.shared`: where the shared real data lies (``../shared``).
"""
