"""The README a newcomer reads first (issue 29): short, every command and flag it shows exists
(``deepcritical ... --help``), and every relative link of it and of docs/ resolves to a file
and, with an anchor, to a heading of that file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from deepcritical.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
SUBCOMMANDS = {
    ("corpus", "add"),
    ("corpus", "info"),
    ("runs", "list"),
    ("runs", "show"),
    ("runs", "resume"),
    ("runs", "export"),
    ("runs", "submit"),
    ("runs", "follow"),
    ("runs", "cancel"),
    ("runs", "approve-plan"),
    ("runs", "approve-evidence"),
}


def _help(path: list[str]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], terminal_width=200)
    assert result.exit_code == 0, f"deepcritical {' '.join(path)} --help: {result.output}"
    return result.output


def _command_uses(text: str) -> list[tuple[list[str], list[str]]]:
    """``(subcommand path, flags)`` of every ``deepcritical ...`` command written in ``text``."""
    uses = []
    code = re.findall(r"```[a-z]*\n(.*?)```", text, re.S) + re.findall(r"`([^`\n]+)`", text)
    lines = (m for block in code for m in re.findall(r"(?<![\w.])deepcritical [^`\n|#]*", block))
    for line in (m for m in lines if not m.startswith("deepcritical import")):
        words = line.split()[1:]
        flags = [w.split("=")[0] for w in words if w.startswith("--")]
        names = [w for w in words if re.fullmatch(r"[a-z]+(?:-[a-z]+)*", w)]
        path: list[str] = []
        if names:
            pair = tuple(names[:2])
            path = list(pair) if pair in SUBCOMMANDS else names[:1]
        uses.append((path, flags))
    return uses


def test_the_readme_is_short_and_keeps_the_space_front_matter() -> None:
    text = README.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    assert len(text.splitlines()) <= 200
    assert "make demo" in text
    assert "make test" in text


def test_every_command_and_flag_in_the_readme_exists() -> None:
    text = README.read_text(encoding="utf-8")
    top = _help([])
    uses = _command_uses(text)
    assert len(uses) >= 8
    for path, flags in uses:
        if path and path[0] not in top:
            pytest.fail(f"README names `deepcritical {path[0]}`, which does not exist")
        shown = _help(path) if path else top
        for flag in flags:
            assert flag in shown or flag in top, (
                f"`deepcritical {' '.join(path)} {flag}` is unknown"
            )


def _headings(path: Path) -> set[str]:
    """GitHub's anchors of the headings of ``path``."""
    out = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^#{1,6}\s+(.*)", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            out.add(slug)
    return out


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue  # https:, mailto:
        file_part, _, anchor = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        assert linked.exists(), f"{page.name} links to missing {target}"
        if anchor and linked.suffix == ".md":
            assert anchor in _headings(linked), f"{page.name} links to missing {target}"
