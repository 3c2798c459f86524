"""Orchestrators: the deterministic ``iterative`` loop and the ``magentic`` one (Microsoft
Agent Framework's Magentic manager picks the next agent), over the same steps
(:mod:`.run`), the same run dependencies (:mod:`.agent_set`) and the same report stage."""
