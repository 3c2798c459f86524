"""The pipelined import (issue 35) killed with SIGKILL while a batch is being embedded: what
was committed is whole batches, and running the same import again ends with exact counts, for
a streamed PubMed XML file (resumed from its checkpoint) and for a JSONL file (records already
stored are skipped). The importing process uses a slow hashing embedder that marks each batch
it starts, so the kill lands in the middle of a batch's embedding, deterministically."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from deepcritical.corpus.index import LocalCorpus
from deepcritical.testing.embedders import HashingEmbedder

ROOT = Path(__file__).resolve().parents[2]
BATCH = 10
RECORDS = 60
SCRIPT = """
import sys, time
from pathlib import Path
from deepcritical.corpus.index import LocalCorpus
from deepcritical.testing.embedders import HashingEmbedder

class Slow(HashingEmbedder):
    started = 0
    def embed(self, texts):
        Slow.started += 1
        Path(sys.argv[3], f"started-{Slow.started}").touch()
        time.sleep(0.3)
        return super().embed(texts)

with LocalCorpus(Path(sys.argv[1]), Slow(), batch_size=int(sys.argv[4])) as corpus:
    result = corpus.add_file(Path(sys.argv[2]))
print(result.model_dump_json())
"""


def xml_file(path: Path) -> Path:
    records = "".join(
        f"<PubmedArticle><MedlineCitation><PMID Version='1'>{i}</PMID><Article>"
        f"<ArticleTitle>Record {i} about topic{i % 7}</ArticleTitle><Abstract>"
        f"<AbstractText>Abstract number {i} of the synthetic set.</AbstractText></Abstract>"
        "</Article></MedlineCitation></PubmedArticle>"
        for i in range(1, RECORDS + 1)
    )
    path.write_text(f"<PubmedArticleSet>{records}</PubmedArticleSet>", encoding="utf-8")
    return path


def jsonl_file(path: Path) -> Path:
    lines = (
        json.dumps(
            {
                "pmid": str(i),
                "title": f"Record {i} about topic{i % 7}",
                "abstract_sections": [{"label": "", "text": f"Abstract number {i}."}],
            }
        )
        for i in range(1, RECORDS + 1)
    )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_import(corpus: Path, source: Path, marks: Path) -> subprocess.Popen[str]:
    marks.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    env["ANONYMIZED_TELEMETRY"] = "False"
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(corpus), str(source), str(marks), str(BATCH)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def stored_rows(corpus: Path) -> tuple[int, int]:
    """``(documents, committed checkpoint items)`` in the corpus database."""
    with sqlite3.connect(corpus / "corpus.sqlite3") as conn:
        documents = int(conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0])
        row = conn.execute("SELECT MAX(items_done) FROM import_progress").fetchone()
    conn.close()
    return documents, int(row[0] or 0)


@pytest.mark.parametrize("kind", ["xml", "jsonl"])
def test_a_pipelined_import_killed_mid_batch_resumes_to_exact_counts(
    kind: str, tmp_path: Path
) -> None:
    source = (xml_file if kind == "xml" else jsonl_file)(tmp_path / f"source.{kind}")
    corpus, marks = tmp_path / "corpus", tmp_path / "marks"
    first = run_import(corpus, source, marks)
    deadline = time.monotonic() + 120
    while not (marks / "started-4").exists():  # batch 4 is being embedded: 2 or 3 written
        assert first.poll() is None, first.communicate()[1][-2000:]
        assert time.monotonic() < deadline, "the import did not reach its fourth batch"
        time.sleep(0.01)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=60)
    first.communicate()
    assert first.returncode == -signal.SIGKILL
    documents, checkpoint = stored_rows(corpus)
    assert documents in (2 * BATCH, 3 * BATCH)  # whole batches only, never batch 4
    if kind == "xml":
        assert checkpoint == documents  # the checkpoint went with each batch

    again = run_import(corpus, source, tmp_path / "marks-again")
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, err[-2000:]
    result = json.loads(out.strip().splitlines()[-1])
    if kind == "xml":
        assert result["resumed_from"] == documents
        assert (result["read"], result["added"]) == (RECORDS - documents,) * 2
    else:
        assert (result["read"], result["added"]) == (RECORDS, RECORDS - documents)
        assert result["skipped_existing"] == documents
    with LocalCorpus.open(corpus, HashingEmbedder()) as local:
        assert local.count() == RECORDS
        assert local._dense_index().count() == RECORDS
        assert local.search("Record 60 about topic4", 1)[0].article.pmid == "60"
