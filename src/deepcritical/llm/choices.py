"""Bounded choices in an output schema: the values a field may take, given per call.

A role's output model names evidence ids, checklist keys or hypothesis ids as free strings.
A small model fills them with whatever it likes ("E17" when E1..E4 were shown, a checklist
description instead of its key), and every such answer costs a retry. :func:`with_choices`
returns a subclass of the output model whose JSON schema lists the values of this call as an
``enum``: a grammar-constrained server (``json_schema``, ``json_object``) then cannot write
anything else, and a tool-calling or prompted model sees the allowed values in the schema.

Only the schema changes: validation stays that of the original model (its lenient types and
the role's own checks), so an answer that is not in the enum (a prompted model writing
``"e3"``) is still read as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from copy import copy
from typing import Annotated, Any, TypeVar, get_args, get_origin

from pydantic import BaseModel, TypeAdapter, WithJsonSchema, create_model

__all__ = ["Choices", "with_choices"]

ModelT = TypeVar("ModelT", bound=BaseModel)

Choices = Mapping[str, Sequence[str]]
"""Field path -> allowed values. A path is a field name, or names joined by dots through
nested models and lists of models (``"outline.evidence_ids"``)."""


def with_choices(model: type[ModelT], choices: Choices) -> type[ModelT]:
    """A subclass of ``model`` (same name) whose JSON schema restricts fields to ``choices``.

    Per field, by its type:

    - a string: ``enum`` of the values;
    - a list of strings: items from the values (no value: ``maxItems`` 0);
    - a ``dict`` of string keys to a model: an object with exactly the values as its keys,
      each required, each value that model's schema (one entry per record, for example).

    Args:
        model: the role's pydantic output model.
        choices: see :data:`Choices`; values are de-duplicated, order kept.

    Returns:
        ``model`` itself when ``choices`` is empty, else a subclass that validates exactly as
        ``model`` does.

    Raises:
        ValueError: a path names no field of the model, or a field of another type.
    """
    if not choices:
        return model
    nested: dict[str, dict[str, Sequence[str]]] = {}
    leaves: dict[str, Sequence[str]] = {}
    for path, values in choices.items():
        head, _, rest = path.partition(".")
        if head not in model.model_fields:
            raise ValueError(f"{model.__name__} has no field {head!r}")
        if rest:
            nested.setdefault(head, {})[rest] = values
        else:
            leaves[head] = values
    fields: dict[str, Any] = {}
    for name in dict.fromkeys([*nested, *leaves]):
        info = model.model_fields[name]
        annotation: Any = info.annotation
        if name in nested:
            annotation = _nested(model, name, annotation, nested[name])
        if name in leaves:
            values = list(dict.fromkeys(leaves[name]))
            schema = _restricted(model, name, annotation, info.metadata, values)
            annotation = Annotated[annotation, WithJsonSchema(schema)]
        fields[name] = (annotation, copy(info))
    built: type[ModelT] = create_model(
        model.__name__, __base__=model, __module__=model.__module__, **fields
    )
    built.__doc__ = model.__doc__
    return built


def _model_type(annotation: Any) -> type[BaseModel] | None:
    return (
        annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    )


def _nested(model: type[BaseModel], name: str, annotation: Any, inner: Choices) -> Any:
    """``annotation`` (a model, a list of models or a dict of string keys to models) with
    its model restricted."""
    if (found := _model_type(annotation)) is not None:
        return with_choices(found, inner)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is list and len(args) == 1 and (item := _model_type(args[0])) is not None:
        return list[with_choices(item, inner)]  # type: ignore[misc]
    if origin is dict and args[:1] == (str,) and (value := _model_type(args[-1])) is not None:
        return dict[str, with_choices(value, inner)]  # type: ignore[misc]
    raise ValueError(f"{model.__name__}.{name} is not a model, a list or a dict of models")


def _restricted(
    model: type[BaseModel], name: str, annotation: Any, metadata: list[Any], values: list[str]
) -> dict[str, Any]:
    """The JSON schema of field ``name`` (``annotation`` with its constraints ``metadata``)
    restricted to ``values``."""
    typed: Any = Annotated[annotation, *metadata] if metadata else annotation
    schema: dict[str, Any] = TypeAdapter(typed).json_schema()
    kind = schema.get("type")
    if kind == "string":
        return {**schema, "enum": values or [""]}
    items = schema.get("items")
    if kind == "array" and isinstance(items, dict) and items.get("type") == "string":
        if not values:
            return {**schema, "items": {"type": "string"}, "maxItems": 0}
        return {**schema, "items": {**items, "enum": values}}
    value = _model_type(get_args(annotation)[-1]) if get_origin(annotation) is dict else None
    if value is not None:
        inline = value.model_json_schema()
        if "$defs" in inline:
            raise ValueError(f"{value.__name__} nests models: its schema cannot be inlined")
        inline.pop("description", None)  # once per key otherwise
        return {
            "type": "object",
            "properties": dict.fromkeys(values, inline),
            "required": values,
            "additionalProperties": False,
        }
    raise ValueError(
        f"{model.__name__}.{name} is not a string, a list of strings or a dict of models"
    )
