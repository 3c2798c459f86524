"""Reading decoded JSON payloads of search APIs defensively: wrong types read as empty.

API replies are decoded by :func:`~deepcritical.sources.http.decode_json` and handed to each
source's pure parser; these helpers let the parsers walk optional, possibly mistyped fields
without ``isinstance`` checks at every step, and check the top level once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from deepcritical.logs import Logger
from deepcritical.sources.base import SourceError

__all__ = ["UNEXPECTED_TOP_LEVEL", "as_list", "as_mapping", "json_object", "parse_each"]

T = TypeVar("T")

UNEXPECTED_TOP_LEVEL = "unexpected response: a JSON {type}"
"""The default reason of :func:`json_object`."""


def as_mapping(value: object) -> Mapping[str, Any]:
    """``value`` when it is a JSON object (a mapping), else an empty one."""
    return value if isinstance(value, Mapping) else {}


def as_list(value: object) -> list[Any]:
    """``value`` when it is a JSON array (a list), else an empty list."""
    return value if isinstance(value, list) else []


def json_object(
    payload: object, source: str, reason: str = UNEXPECTED_TOP_LEVEL
) -> Mapping[str, Any]:
    """``payload`` when its top level is a JSON object.

    Args:
        payload: a decoded JSON body.
        source: the source name for the error.
        reason: the error reason, a :meth:`str.format` template; ``{type}`` is the Python type
            name of what came instead (``list``, ``str``, ``int``, ``NoneType``...).

    Raises:
        SourceError: ``payload`` is not a mapping.
    """
    if not isinstance(payload, Mapping):
        raise SourceError(source, reason.format(type=type(payload).__name__))
    return payload


def parse_each(
    values: list[Any],
    parse: Callable[[Mapping[str, Any]], T | None],
    log: Logger,
    skipped: str,
) -> list[T]:
    """``parse`` applied to each JSON object in ``values`` (a page of API records), in order.

    A value that is not an object, or that ``parse`` rejects by returning None (a record
    without the identifier the source needs), is left out and logged: ``skipped`` as a
    warning on ``log`` (the calling source's logger).
    """
    parsed: list[T] = []
    for value in values:
        item = parse(value) if isinstance(value, Mapping) else None
        if item is None:
            log.warning(skipped)
            continue
        parsed.append(item)
    return parsed
