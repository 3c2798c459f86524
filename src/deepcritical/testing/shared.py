"""Where the project's shared real data lies: ``../shared`` beside a source checkout (the
PubMedQA corpus and questions, recorded API answers, open-access JATS full texts). Nothing
here is shipped in the package; the tests and benchmarks that need the data skip or exit
cleanly when it is absent."""

from __future__ import annotations

from pathlib import Path

__all__ = ["SHARED_DIR"]

SHARED_DIR = Path(__file__).resolve().parents[3].parent / "shared"
"""``../shared`` of the checkout this module was imported from (src/deepcritical/testing ->
the repository -> its parent)."""
