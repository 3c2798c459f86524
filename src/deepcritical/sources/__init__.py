"""Search sources, one module each, behind the :class:`SearchSource` protocol."""

from deepcritical.sources.base import SearchSource, SourceError

__all__ = ["SearchSource", "SourceError"]
