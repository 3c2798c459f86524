"""The ``deepcritical`` command (typer + rich): ``research``, ``corpus``, ``runs`` and ``serve``.

``main()`` is the console script's entry point; ``python -m deepcritical.cli`` runs it too.
"""

from deepcritical.cli.main import app, main

__all__ = ["app", "main"]
