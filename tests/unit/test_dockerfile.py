"""The Dockerfile builds from the lock: ``uv sync --frozen`` after copying ``uv.lock``, no other
package installs but the pinned uv and the CPU build of the locked torch; the image runs as a
non-root user, keeps its data on a volume at DEEPCRITICAL_DATA_DIR and serves the web app by
default. (``make check`` lints it with hadolint; building it needs a Docker daemon.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def instructions() -> list[tuple[str, str]]:
    """The Dockerfile's instructions in order, as (KEYWORD, arguments), continuation lines
    joined and comments left out."""
    logical: list[str] = []
    pending = ""
    for line in (ROOT / "Dockerfile").read_text(encoding="utf-8").splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip().removesuffix("\\") + " "
        if not line.rstrip().endswith("\\"):
            logical.append(" ".join(pending.split()))
            pending = ""
    assert not pending, "the Dockerfile ends in a continuation line"
    return [(k.upper(), rest) for k, _, rest in (s.partition(" ") for s in logical)]


def commands() -> list[str]:
    """Every shell command of every RUN instruction (``&&`` chains split)."""
    return [c.strip() for k, args in instructions() if k == "RUN" for c in args.split("&&")]


def final_stage() -> list[tuple[str, str]]:
    """The instructions of the last stage (from its FROM)."""
    steps = instructions()
    start = max(i for i, (k, _) in enumerate(steps) if k == "FROM")
    return steps[start:]


def test_dependencies_come_from_the_lock_only() -> None:
    steps = instructions()
    copy_lock = steps.index(("COPY", "pyproject.toml uv.lock ./"))
    first_sync = next(i for i, (k, a) in enumerate(steps) if k == "RUN" and "uv sync" in a)
    assert copy_lock < first_sync, "uv sync must run on the copied uv.lock"
    syncs = [c for c in commands() if c.startswith("uv sync")]
    assert len(syncs) == 2
    assert all("--frozen" in c and "--no-install-package torch" in c for c in syncs), syncs
    assert not any("--extra" in c for c in syncs), "no dev tools in the image"
    installs = [c for c in commands() if re.search(r"\bpip install\b|\buv add\b|\buv lock\b", c)]
    assert installs == [
        'pip install --no-cache-dir "uv==${UV_VERSION}"',
        'uv pip install --python /opt/venv/bin/python --no-deps --index-url "${TORCH_INDEX}"'
        ' "torch==${TORCH_VERSION}+cpu"',
    ]


def test_the_image_installs_the_project_itself_not_editable_and_checks_the_model() -> None:
    syncs = [c for c in commands() if c.startswith("uv sync")]
    assert "--no-install-project" in syncs[0]
    assert "--no-editable" in syncs[1]
    assert any("SentenceTransformerEmbedder" in c and "HF_HUB_OFFLINE=1" in c for c in commands())


def test_the_image_runs_as_a_user_keeps_its_data_on_a_volume_and_serves_the_app() -> None:
    stage = final_stage()
    users = [a for k, a in stage if k == "USER"]
    assert users, "the image runs as root"
    assert users[-1].split(":")[0] not in {"root", "0"}
    env = " ".join(a for k, a in stage if k == "ENV")
    data_dir = re.search(r"DEEPCRITICAL_DATA_DIR=(\S+)", env)
    assert data_dir is not None
    volumes = [v for k, a in stage if k == "VOLUME" for v in json.loads(a)]
    assert volumes == [data_dir.group(1)]
    assert ("ENTRYPOINT", '["deepcritical"]') in stage
    cmd = json.loads(next(a for k, a in stage if k == "CMD"))
    assert cmd[:3] == ["serve", "--host", "0.0.0.0"]
    assert ("COPY", "--from=build /opt/venv /opt/venv") in stage
    assert "DEEPCRITICAL_GIT_COMMIT=${GIT_COMMIT}" in env


def test_the_build_context_holds_the_lock_and_the_sources_only() -> None:
    ignore = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    kept = {line.removeprefix("!") for line in ignore if line.startswith("!")}
    assert "*" in ignore
    assert kept == {"pyproject.toml", "uv.lock", "README.md", "src/"}
