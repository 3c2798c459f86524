"""LLM plumbing shared by every role: the one provider-selection path and what runs a model.

- :mod:`.providers`: the model spec (``none``, ``openai:``, ``anthropic:``,
  ``openai-compatible:MODEL@URL``) parsed into a pydantic-ai model or an agent-framework chat
  client (the only module that imports provider SDKs);
- :mod:`.runner` (:class:`~deepcritical.llm.runner.StructuredAgent`: one structured-output
  call with retries, a timeout and usage accounting), :mod:`.config` (``LLMConfig``, whose
  ``structured`` builds every role's ``StructuredAgent``),
  :mod:`.errors`, :mod:`.usage`, :mod:`.lenient` (output fields small models get wrong);
- prompts: :mod:`.templates` (``prompts/*.md``) and :mod:`.fencing` (source text fenced as
  data);
- caches keyed by the request: :mod:`.cache` (``CachedModel``) and :mod:`.chat_cache`
  (``CachedChatClient``), over a :class:`~deepcritical.llm.model_cache.CallStore` the run database
  implements.
"""
