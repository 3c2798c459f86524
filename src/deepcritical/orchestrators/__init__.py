"""Orchestrators: the deterministic ``iterative`` loop (and, later, ``magentic``)."""
