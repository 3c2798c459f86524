"""Prompt templates: markdown files in ``deepcritical/llm/prompts/`` (package data).

Templates use :class:`string.Template` placeholders (``$name`` / ``${name}``; a literal dollar
is ``$$``). Values are inserted once and never re-interpreted, so source text containing ``$``
or braces is safe to insert.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from string import Template

__all__ = ["PromptTemplateError", "load_prompt", "render_prompt"]


class PromptTemplateError(LookupError):
    """A prompt template is missing, or a placeholder it uses was not given a value."""


@cache
def load_prompt(name: str) -> str:
    """The text of ``prompts/<name>.md``.

    Raises:
        PromptTemplateError: no such template in the installed package.
    """
    path = resources.files("deepcritical.llm").joinpath("prompts", f"{name}.md")
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise PromptTemplateError(f"prompt template {name!r} is not in the package") from exc


def render_prompt(name: str, **values: object) -> str:
    """``prompts/<name>.md`` with its placeholders replaced by ``str(value)``.

    Raises:
        PromptTemplateError: missing template, or a placeholder with no value.
    """
    template = Template(load_prompt(name))
    try:
        return template.substitute({k: str(v) for k, v in values.items()}).strip()
    except KeyError as exc:
        raise PromptTemplateError(
            f"prompt template {name!r} needs a value for {exc.args[0]!r}"
        ) from exc
