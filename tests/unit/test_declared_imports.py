"""Every third-party package the code imports is declared in ``pyproject.toml`` by name
(issue 31, item 7): ``src`` (and the Space's root ``app.py``) among the runtime dependencies,
``tests``, ``benchmarks`` and ``scripts`` among those or the ``dev`` and ``local-llm`` extras.
A package that only arrives with another one (a dependency of a dependency, or an extra of
it) is not declared: it would go when that one stops bringing it.

Imports are read from the syntax tree (every ``import`` and absolute ``from ... import``,
guarded or not) and mapped to the installed distributions that provide them by
:func:`importlib.metadata.packages_distributions`; the standard library
(:data:`sys.stdlib_module_names`) and the project's own packages are left out."""

from __future__ import annotations

import ast
import sys
import tomllib
from collections import defaultdict
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
FIRST_PARTY = {"deepcritical", "tests", "benchmarks", "scripts", "app"}
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def declared(*extras: str) -> set[str]:
    """The canonical names of the runtime dependencies and of ``extras``' requirements."""
    lines = list(PROJECT["dependencies"])
    for extra in extras:
        lines += PROJECT["optional-dependencies"][extra]
    return {canonicalize_name(Requirement(line).name) for line in lines}


def imported(paths: list[Path]) -> dict[str, set[str]]:
    """Top-level module name -> the files (relative to the checkout) that import it."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found[name.split(".")[0]].add(str(path.relative_to(ROOT)))
    return found


def undeclared(paths: list[Path], allowed: set[str]) -> dict[str, str]:
    """Each third-party module imported by ``paths`` whose distribution is not in
    ``allowed``: module -> which distributions provide it and which files import it."""
    providers = packages_distributions()
    problems: dict[str, str] = {}
    for module, files in sorted(imported(paths).items()):
        if module in sys.stdlib_module_names or module in FIRST_PARTY or module == "__future__":
            continue
        dists = {canonicalize_name(d) for d in providers.get(module, [])}
        if not dists & allowed:
            what = ", ".join(sorted(dists)) or "no installed distribution"
            problems[module] = f"{what}; imported by {', '.join(sorted(files)[:3])}"
    return problems


def python_files(*folders: str) -> list[Path]:
    return [path for folder in folders for path in sorted((ROOT / folder).rglob("*.py"))]


def test_every_package_src_imports_is_a_runtime_dependency() -> None:
    paths = [*python_files("src"), ROOT / "app.py"]
    assert len(paths) > 100  # the whole package was read
    assert undeclared(paths, declared()) == {}


@pytest.mark.parametrize("folder", ["tests", "benchmarks", "scripts"])
def test_every_package_the_tests_and_tools_import_is_declared(folder: str) -> None:
    paths = python_files(folder)
    assert paths
    assert undeclared(paths, declared("dev", "local-llm")) == {}


def test_a_package_that_only_comes_with_another_is_reported() -> None:
    """The check itself: without their own lines, gradio-client (which gradio brings) and
    numpy (which pandas, chromadb and more bring) are reported."""
    client = ROOT / "tests" / "e2e" / "test_api_clients.py"
    problems = undeclared([client], declared("dev", "local-llm") - {"gradio-client"})
    assert problems.keys() == {"gradio_client"}
    assert problems["gradio_client"].startswith("gradio-client; imported by tests/e2e/")
    evidence = python_files("src/deepcritical/evidence")
    assert undeclared(evidence, declared() - {"numpy"}).keys() == {"numpy"}
