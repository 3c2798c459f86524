"""The four research agents (search, hypothesis, judge, report) and the planner.

Each role has an LLM implementation (pydantic-ai, structured output) and an extractive one
(no model) used with ``--llm none``. :func:`deepcritical.agents.factory.build_agents` picks them.
"""
