"""The Hugging Face Space files agree with pyproject.toml (one source of truth)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from deepcritical.ui.space import main, requirements_text

ROOT = Path(__file__).resolve().parents[2]


def front_matter() -> dict[str, str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n"), "the Space front matter must open README.md"
    block = text.split("---\n", 2)[1]
    return {
        k.strip(): v.strip().strip('"')
        for k, v in (line.split(":", 1) for line in block.splitlines() if re.match(r"^\w", line))
    }


def test_requirements_txt_is_generated_from_pyproject() -> None:
    expected = requirements_text(ROOT / "pyproject.toml")
    assert (ROOT / "requirements.txt").read_text(encoding="utf-8") == expected, (
        "requirements.txt is out of date: run `make requirements`"
    )
    assert main(["--root", str(ROOT), "--check"]) == 0


def test_check_detects_drift(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["gradio==6.31.0"]\n', encoding="utf-8"
    )
    (tmp_path / "requirements.txt").write_text("gradio==5.0\n", encoding="utf-8")
    assert main(["--root", str(tmp_path), "--check"]) == 1


def test_front_matter_matches_the_gradio_pin() -> None:
    meta = front_matter()
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "dependencies"
    ]
    pin = next(d for d in deps if d.startswith("gradio=="))
    assert meta["sdk"] == "gradio"
    assert meta["sdk_version"] == pin.removeprefix("gradio==")
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
