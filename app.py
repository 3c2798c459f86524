"""Hugging Face Space entry point: the DeepCritical web app with its MCP server.

Settings and secrets come from environment variables (Space secrets): ``OPENAI_API_KEY`` /
``ANTHROPIC_API_KEY`` / ``NCBI_API_KEY``, ``DEEPCRITICAL_LLM`` (e.g. ``openai:gpt-4o``;
default ``none``, the extractive mode), ``DEEPCRITICAL_SOURCES``, ``DEEPCRITICAL_DATA_DIR``.
Sign-in: with ``hf_oauth: true`` in the Space's metadata, "Sign in with Hugging Face" keeps
each user's runs apart (see docs/security.md).
Run locally with ``python app.py`` or ``deepcritical serve``.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import deepcritical  # noqa: F401  (installed: pip install -e .)
except ImportError:  # a Space installs requirements.txt only: use the source tree
    sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))

from deepcritical.jobs.readiness import Readiness
from deepcritical.logs import configure_logging
from deepcritical.ui.auth import Access
from deepcritical.ui.downloads import DownloadShelf
from deepcritical.ui.launch import build_from_env, launch, server_settings, show_app_warnings

configure_logging()  # errors on standard error, as `deepcritical serve` logs
show_app_warnings()
access = Access.from_env()
downloads = DownloadShelf()
demo = build_from_env(access, downloads)

if __name__ == "__main__":
    settings = server_settings()
    launch(
        demo,
        access=access,
        downloads=downloads,
        readiness=Readiness(settings),
        settings=settings,
    )
