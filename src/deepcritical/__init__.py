"""DeepCritical: a biomedical deep-research agent with validated citations.

``from deepcritical import research`` gives the async entry point (imported lazily, so that
``import deepcritical`` stays cheap).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["__version__", "research"]

if TYPE_CHECKING:
    from deepcritical.api import research


def __getattr__(name: str) -> Any:
    if name == "research":
        from deepcritical.api import research

        return research
    raise AttributeError(f"module 'deepcritical' has no attribute {name!r}")
