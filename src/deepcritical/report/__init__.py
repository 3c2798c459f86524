"""Report post-processing: sentence splitting and citation validation.

:func:`validate_report` makes every reference and inline citation of a report refer to the
run's evidence; :func:`citation_problems` lists what is still wrong (nothing, after it).
:func:`split_sentences` and :func:`split_paragraph_sentences` split biomedical prose and
report markdown into sentences, keeping citation markers with the sentence they cite.
"""

from deepcritical.report.sentences import split_paragraph_sentences, split_sentences
from deepcritical.report.validation import citation_problems, validate_report

__all__ = [
    "citation_problems",
    "split_paragraph_sentences",
    "split_sentences",
    "validate_report",
]
