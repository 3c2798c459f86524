"""The Gradio web app, the Hugging Face Space and the ``deep_research`` MCP tool.

It sits above :mod:`deepcritical.api`: it only consumes ``research(...)`` events and
``RunResult`` objects (:mod:`.app` builds the app, :mod:`.launch` serves it, :mod:`.mcp_tool` is the
tool; :mod:`.progress`, :mod:`.render`, :mod:`.downloads`, :mod:`.session`, :mod:`.history`,
:mod:`.streams` are its parts).
"""
