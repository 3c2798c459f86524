"""Issue 17 end to end, with the real embedding model in ``deepcritical corpus add``
subprocesses: an import killed with SIGKILL after its first committed batch resumes and ends
with exactly the right count and a working search; and a corpus whose vectors live on a
``chroma run`` server (127.0.0.1, free port, temporary directory) is imported by one process
and searched from another."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from xml.sax.saxutils import escape

import httpx
import pytest

from deepcritical.config import Settings
from deepcritical.corpus import lexical
from deepcritical.corpus.embedding import corpus_embedder
from deepcritical.corpus.index import LocalCorpus
from deepcritical.corpus.readers import read_jsonl
from deepcritical.formats.pubmed_xml import PubmedArticle
from scripts.postgres_local import free_port

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pubmed"
TIMEOUT = 600  # seconds; a hung import fails the test instead of hanging the suite


def cli(*args: str) -> list[str]:
    """``deepcritical ARGS`` run by this interpreter (the worktree's code on PYTHONPATH)."""
    return [sys.executable, "-m", "deepcritical.cli", *args]


def user_env(**extra: str) -> dict[str, str]:
    """The test's environment without DEEPCRITICAL_ settings, offline models, wide output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEEPCRITICAL_")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", COLUMNS="200", NO_COLOR="1")
    env.update(ANONYMIZED_TELEMETRY="False", **extra)
    return env


def pubmedqa_as_xml(corpus_jsonl: Path, target: Path, n: int) -> list[PubmedArticle]:
    """The first ``n`` PubMedQA abstracts written as a PubMed XML file; returns them."""
    articles = list(islice(read_jsonl(corpus_jsonl), n))
    parts = ["<PubmedArticleSet>"]
    for article in articles:
        sections = "".join(
            f'<AbstractText Label="{escape(s.label or "")}">{escape(s.text)}</AbstractText>'
            for s in article.abstract_sections
        )
        parts.append(
            f"<PubmedArticle><MedlineCitation><PMID Version='1'>{article.pmid}</PMID><Article>"
            f"<ArticleTitle/><Abstract>{sections}</Abstract></Article></MedlineCitation>"
            "</PubmedArticle>"
        )
    parts.append("</PubmedArticleSet>")
    target.write_text("".join(parts), encoding="utf-8")
    return articles


def committed_items(db: Path) -> int:
    """Items of the running import committed so far (0 before the first batch)."""
    if not db.exists():
        return 0
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=1)
    except sqlite3.Error:
        return 0
    try:
        row = conn.execute("SELECT MAX(items_done) FROM import_progress").fetchone()
    except sqlite3.Error:
        return 0  # the schema is not there yet
    finally:
        conn.close()
    return int(row[0] or 0)


def test_an_import_killed_with_sigkill_resumes_to_the_exact_count(
    pubmedqa_dir: Path, tmp_path: Path
) -> None:
    source = tmp_path / "pubmedqa_600.xml"
    rows = pubmedqa_as_xml(pubmedqa_dir / "corpus.jsonl", source, 600)
    data = tmp_path / "data"
    db = data / "corpus" / "corpus.sqlite3"
    args = cli("--data-dir", str(data), "corpus", "add", str(source))
    first = subprocess.Popen(args, env=user_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + TIMEOUT
        while committed_items(db) == 0:  # poll the checkpoint, not the clock
            assert first.poll() is None, first.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "no batch committed in time"
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
    finally:
        first.wait(timeout=60)
        first.communicate()
    assert first.returncode == -signal.SIGKILL
    killed_at = committed_items(db)
    assert 0 < killed_at < len(rows)

    again = subprocess.run(args, env=user_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert again.returncode == 0, again.stderr[-2000:]
    output = " ".join(again.stderr.split())
    assert f"resumed after {killed_at:,} items" in output
    assert f"{len(rows) - killed_at} records read, {len(rows) - killed_at} added" in output

    with LocalCorpus.open(data / "corpus", corpus_embedder(Settings(), data / "corpus")) as local:
        assert local.count() == len(rows)
        assert local._dense_index().count() == len(rows)
        text = rows[-1].abstract_sections[0].text
        assert local.search(text[:300], 3)[0].article.pmid == rows[-1].pmid
    with sqlite3.connect(db) as conn:
        assert lexical.indexed_count(conn) == len(rows)
    conn.close()


@pytest.fixture
def chroma_server(tmp_path: Path) -> Iterator[str]:
    """A ``chroma run`` server on 127.0.0.1 (free port, temporary directory); its URL."""
    chroma = Path(sys.executable).parent / "chroma"
    if not chroma.exists():
        pytest.skip("the chroma command (chromadb package) is not installed")
    port = free_port()
    log = (tmp_path / "chroma.log").open("wb")
    server = subprocess.Popen(
        [
            str(chroma),
            "run",
            "--path",
            str(tmp_path / "chroma-server"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, (tmp_path / "chroma.log").read_text()[-2000:]
            try:
                if httpx.get(f"{url}/api/v2/heartbeat", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "chroma run did not start"
            time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def test_a_corpus_on_a_chroma_server_is_imported_by_one_process_and_searched_by_another(
    chroma_server: str, tmp_path: Path
) -> None:
    token = "s3cret-corpus-token"
    url = chroma_server.replace("http://", f"http://:{token}@")
    data = tmp_path / "data"
    pattern = str(FIXTURES / "pubmed_*_small.xml")  # quoted glob: baseline, then update
    added = subprocess.run(
        cli("--data-dir", str(data), "corpus", "add", pattern),
        env=user_env(DEEPCRITICAL_CORPUS_URL=url),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert added.returncode == 0, added.stderr[-2000:]
    output = " ".join(added.stderr.split())
    assert "pubmed_baseline_small.xml: 3 records read, 3 added" in output
    assert "2 replaced by a newer version, 1 deleted" in output
    assert token not in added.stdout + added.stderr
    assert not (data / "corpus" / "chroma").exists()  # the vectors are on the server

    embedder = corpus_embedder(Settings(), data / "corpus")  # the backend it was imported with
    with LocalCorpus.open(data / "corpus", embedder, server_url=chroma_server) as local:
        assert local.count() == 3
        assert local._dense_index().count() == 3
        hits = local.search("zinc lozenges for the common cold", 3)
        assert hits[0].article.pmid == "90000004"
        assert hits[0].dense_rank == 1
        assert all(h.article.pmid != "90000001" for h in hits)  # deleted
