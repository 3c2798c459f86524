"""The research roles: planner (and the fixed-syllabus planner), query generator, search agent,
checklist assignment, hypothesis generator, judge and reflection, plus the source-collection
tools of a gathering agent (:mod:`.source_tools`).

Each role has an LLM implementation (pydantic-ai structured output through
:class:`deepcritical.llm.runner.StructuredAgent`) and an extractive one (no model) used with
``--llm none``; :mod:`.base` holds the protocols they implement.
:func:`deepcritical.orchestrators.agent_set.build_agents` picks them.
"""
