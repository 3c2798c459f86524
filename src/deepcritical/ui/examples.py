"""The web app's example questions: ones the bundled demo corpus answers when a local corpus
exists, else general questions for the live sources.

The corpus examples are PubMedQA questions (``../shared/data/pubmedqa/dev_questions.jsonl``)
whose gold abstract is in the demo corpus (``make demo``). Each was checked with
``deepcritical research QUESTION --llm none --sources local`` on that corpus: the report's
first reference is the gold abstract and the report's verdict is PubMedQA's answer.
"""

from __future__ import annotations

__all__ = ["CORPUS_EXAMPLES", "LIVE_EXAMPLES", "choose_examples"]

CORPUS_EXAMPLES: list[tuple[str, str, str]] = [
    ("Does hippocampal atrophy on MRI predict cognitive decline?", "9444542", "no"),
    (
        "Do preoperative statins reduce atrial fibrillation after coronary artery bypass grafting?",
        "21881325",
        "yes",
    ),
    ("Does hypoglycaemia increase the risk of cardiovascular events?", "23999452", "yes"),
]
"""(question, PMID of its gold abstract, PubMedQA answer) answered from the demo corpus."""

LIVE_EXAMPLES = [
    "Can metformin be repurposed to lower cancer risk in people with type 2 diabetes?",
    "What is the evidence that statins reduce dementia incidence?",
    "Does hippocampal atrophy on MRI predict cognitive decline?",
]
"""Questions for the live literature sources (PubMed, Europe PMC...)."""


def choose_examples(corpus_exists: bool) -> list[str]:
    """The example questions to offer: :data:`CORPUS_EXAMPLES` when a local corpus exists
    (the default sources then include it), else :data:`LIVE_EXAMPLES`."""
    return [q for q, _, _ in CORPUS_EXAMPLES] if corpus_exists else list(LIVE_EXAMPLES)
