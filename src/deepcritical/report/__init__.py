"""The report stage, from the writer's draft to the report the user gets; no model is called
here except through a rewrite function handed in.

- :mod:`.citations` and :mod:`.drafts`: reference lists, citation markers and the parts of a
  draft the writers share (gap limitations, the no-evidence report);
- :mod:`.sections`: report parts built from the run, never by a model (conflicting findings,
  the yes/no verdict, the study-design summary, run limitations);
- :mod:`.validation` (:func:`validate_report`, :func:`citation_problems`): every reference and
  inline citation refers to the run's evidence;
- :mod:`.grounding` and :mod:`.claims`: every cited sentence checked against the passages of
  the sources it cites;
- :mod:`.finish`: all of it in order, as a function of the draft and the run's facts.
"""

from deepcritical.report.validation import citation_problems, validate_report

__all__ = ["citation_problems", "validate_report"]
