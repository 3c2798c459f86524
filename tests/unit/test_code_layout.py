"""The code's layout rules that a newcomer relies on (issue 31): a module's name says what it
holds, so no two modules of ``src/deepcritical`` share a name (``__init__`` and
``__main__`` apart)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "deepcritical"


def test_no_two_modules_share_a_name() -> None:
    homes: dict[str, list[str]] = defaultdict(list)
    for path in SRC.rglob("*.py"):
        if path.stem not in {"__init__", "__main__"}:
            homes[path.name].append(str(path.relative_to(SRC)))
    assert len(homes) > 100  # the whole package was read
    shared = {name: sorted(paths) for name, paths in homes.items() if len(paths) > 1}
    assert shared == {}
