"""``requirements.txt`` of the Hugging Face Space, generated from ``pyproject.toml`` (the one
source of truth): the project's runtime dependencies, with PyTorch from the CPU wheel index.

``python -m deepcritical.ui.space [--root DIR] [--check]`` prints it (``make requirements``
writes it); ``--check`` exits 1 when the checked-in file differs. A test asserts they agree.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

HEADER = (
    "# Generated from pyproject.toml by `make requirements` (python -m deepcritical.ui.space);\n"
    "# do not edit. The Space installs these, then runs app.py from the source tree.\n"
    "# PyTorch CPU wheels (the Space has no GPU; the default index pulls CUDA packages):\n"
    "--extra-index-url https://download.pytorch.org/whl/cpu\n"
)


def requirements_text(pyproject: Path) -> str:
    """The Space's ``requirements.txt`` for ``pyproject`` (a ``pyproject.toml`` path): the
    header, then ``[project].dependencies`` one per line, in their order.

    Raises:
        KeyError: ``pyproject`` has no ``[project].dependencies``.
    """
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    deps: list[str] = data["project"]["dependencies"]
    return HEADER + "".join(f"{d}\n" for d in deps)


def main(argv: list[str] | None = None) -> int:
    """Print the requirements, or with ``--check`` compare them with ``ROOT/requirements.txt``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="Project root.")
    parser.add_argument("--check", action="store_true", help="Fail if requirements.txt differs.")
    args = parser.parse_args(argv)
    text = requirements_text(args.root / "pyproject.toml")
    if args.check:
        current = args.root / "requirements.txt"
        if not current.exists() or current.read_text(encoding="utf-8") != text:
            print("requirements.txt is out of date: run `make requirements`", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
