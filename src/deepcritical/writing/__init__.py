"""Report writers: the LLM writer (:mod:`.llm_writer`: outline, then section by section, then
the executive summary, with its prompts in :mod:`.prompts`), the extractive writer
(:mod:`.extractive`: verbatim key sentences, each cited, no model) and the LLM rewriter of
unsupported sentences (:mod:`.rewriter`). Citations are validated afterwards by
:mod:`deepcritical.report`."""
