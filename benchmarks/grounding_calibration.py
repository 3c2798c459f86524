"""``bench_pubmedqa --calibrate``: the similarities behind the default grounding threshold.

:func:`calibrate` measures, on all 500 PubMedQA dev questions, the cosine similarities that
set :data:`deepcritical.report.grounding.DEFAULT_THRESHOLD` (takes a few minutes): a verbatim
quote against its abstract; a paraphrase written by the authors (the question turned into a
claim) against its own abstract and against the most similar other abstract (a real but
irrelevant source); the first sentence of the conclusions against the rest of its own
abstract (results and methods) and against the most similar other abstract. It prints their
percentiles, then the share of right and of irrelevant citations each threshold keeps.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.pubmedqa_data import read_dev_questions
from benchmarks.pubmedqa_figures import mean

PARAPHRASE = "A: author paraphrase (question as claim)"
CONCLUSION = "B: conclusion sentence vs rest of abstract"
VERBATIM = "V: verbatim quote (marker removed)"

SimilaritySets = dict[str, tuple[list[float], list[float]]]
"""Per kind of claim: best-passage similarities to its own abstract, and to the most similar
other abstract."""


def pubmedqa_evidence(row: dict[str, Any], lines: Sequence[str] | None = None) -> Any:
    """A corpus row as the local source gives it (labelled paragraphs, MeSH terms)."""
    from deepcritical.models import Citation, Evidence

    pmid = str(row["pmid"])
    content = "\n".join(
        lines
        if lines is not None
        else [
            f"{s['label']}: {s['text']}" if s.get("label") else s["text"]
            for s in row["abstract_sections"]
        ]
    )
    return Evidence(
        id=pmid,
        content=content,
        citation=Citation(source="local", id=pmid, pmid=pmid),
        mesh_terms=row.get("mesh_terms", []),
    )


@dataclass
class PassageIndex:
    """The embedded passages of every abstract (by line, as grounding splits them) and the
    embedded abstracts, in corpus order.

    Args:
        vectors: one unit vector per passage (rows).
        owners: the index of each passage's abstract.
        conclusion: whether each passage comes from the abstract's conclusions.
        abstracts: one unit vector per abstract (as the store embeds it).
    """

    vectors: Any
    owners: Any
    conclusion: Any
    abstracts: Any

    def best(self, i: int, v: Any, mask: Any = None) -> float:
        """The best similarity of ``v`` to a passage of abstract ``i`` (those in ``mask``
        only, when given); NaN when it has none."""
        rows_ = self.owners == i if mask is None else (self.owners == i) & mask
        return float((self.vectors[rows_] @ v).max()) if rows_.any() else float("nan")

    def nearest_other(self, v: Any, gold: int) -> int:
        """The abstract most similar to ``v`` other than ``gold``."""
        order = np.argsort(-(self.abstracts @ v))
        return int(next(j for j in order if j != gold))


def passage_index(rows: dict[str, Any], pmids: list[str], embedder: Any) -> PassageIndex:
    """Split and embed the passages of the abstracts ``pmids`` of the corpus ``rows``."""
    from deepcritical.evidence.store import embedding_text
    from deepcritical.report.grounding import source_passages

    passages: list[str] = []
    owner: list[int] = []
    is_conclusion: list[bool] = []
    for i, pmid in enumerate(pmids):
        for section in rows[pmid]["abstract_sections"]:
            label = section.get("label") or ""
            line = f"{label}: {section['text']}" if label else section["text"]
            found = source_passages(pubmedqa_evidence(rows[pmid], [line]))
            passages += found
            owner += [i] * len(found)
            is_conclusion += [label.upper().startswith("CONCLUSION")] * len(found)
    print(f"embedding {len(passages)} passages of {len(pmids)} abstracts ...")
    vectors = embedder.embed(passages)
    owners = np.asarray(owner)
    concl = np.asarray(is_conclusion)
    abstracts = embedder.embed([embedding_text(pubmedqa_evidence(rows[p])) for p in pmids])
    return PassageIndex(vectors, owners, concl, abstracts)


def claim_of(question: str) -> str:
    """The question as the authors' claim (the question itself, as a sentence, when it has
    no affirmative form)."""
    from deepcritical.text.question_claim import question_to_claim

    statement = question_to_claim(question).statement
    if statement.startswith("Affirmative answer"):
        return question.rstrip("?").strip() + "."
    return statement


def first_conclusion_sentences(
    questions: Sequence[dict[str, str]], rows: dict[str, Any]
) -> list[str]:
    """The first sentence of each question's gold abstract's conclusions ("" without any)."""
    from deepcritical.text.sentences import split_sentences

    firsts = []
    for q in questions:
        concl_text = [
            s["text"]
            for s in rows[q["pmid"]]["abstract_sections"]
            if (s.get("label") or "").upper().startswith("CONCLUSION")
        ]
        firsts.append(split_sentences(concl_text[0])[0] if concl_text else "")
    return firsts


def similarity_sets(
    questions: Sequence[dict[str, str]],
    rows: dict[str, Any],
    index: PassageIndex,
    position: dict[str, int],
    embedder: Any,
) -> SimilaritySets:
    """The similarities of each kind of claim (:data:`PARAPHRASE`, :data:`CONCLUSION`,
    :data:`VERBATIM`) to its own abstract and to the most similar other one (``position``:
    each PMID's index in ``index``)."""
    from deepcritical.report.citation_markers import add_marker
    from deepcritical.report.grounding import claim_text

    paraphrases = [claim_of(q["question"]) for q in questions]
    firsts = first_conclusion_sentences(questions, rows)
    verbatim = [claim_text(add_marker(s, "E1")) for s in firsts]
    para_v = embedder.embed(paraphrases)
    first_v = embedder.embed([s or "-" for s in firsts])
    verb_v = embedder.embed([s or "-" for s in verbatim])
    sets: SimilaritySets = {PARAPHRASE: ([], []), CONCLUSION: ([], []), VERBATIM: ([], [])}
    for k, q in enumerate(questions):
        gold = position[q["pmid"]]
        other = index.nearest_other(para_v[k], gold)
        sets[PARAPHRASE][0].append(index.best(gold, para_v[k]))
        sets[PARAPHRASE][1].append(index.best(other, para_v[k]))
        if firsts[k]:
            other_b = index.nearest_other(first_v[k], gold)
            sets[CONCLUSION][0].append(index.best(gold, first_v[k], ~index.conclusion))
            sets[CONCLUSION][1].append(index.best(other_b, first_v[k]))
            sets[VERBATIM][0].append(index.best(gold, verb_v[k]))
            sets[VERBATIM][1].append(index.best(other_b, verb_v[k]))
    return sets


def print_distributions(sets: SimilaritySets) -> None:
    """Print each kind's percentiles (p10 / p50 / p90), own abstract and other."""
    print("\nbest-passage cosine similarity: own abstract (right source) vs most similar other")
    print("abstract (real but irrelevant source); percentiles p10 / p50 / p90")
    for name, (pos, neg) in sets.items():
        p, n_ = np.asarray(pos), np.asarray([x for x in neg if x == x])
        print(
            f"   {name:<44} own {np.percentile(p, 10):.3f} / {np.median(p):.3f} / "
            f"{np.percentile(p, 90):.3f}   other {np.percentile(n_, 10):.3f} / "
            f"{np.median(n_):.3f} / {np.percentile(n_, 90):.3f}"
        )


def print_thresholds(sets: SimilaritySets) -> None:
    """Print, for each threshold from 0.50 to 0.75, the share of right citations kept (TPR)
    and of irrelevant ones kept (FPR), and their mean difference (Youden's J)."""
    from deepcritical.report.grounding import DEFAULT_THRESHOLD

    print("\nthreshold: share of right citations kept (TPR) and of irrelevant ones kept (FPR)")
    print(
        f"   {'t':>5}  {'A TPR':>6} {'A FPR':>6}  {'B TPR':>6} {'B FPR':>6}  {'V TPR':>6}  mean J"
    )
    names = list(sets)
    for t in np.round(np.arange(0.50, 0.76, 0.01), 2):
        cells = []
        js = []
        for name in names[:2]:
            right, wrong = (np.asarray(x) for x in sets[name])
            tpr, fpr = float(np.mean(right >= t)), float(np.mean(wrong >= t))
            cells.append(f"{tpr:>6.3f} {fpr:>6.3f}")
            js.append(tpr - fpr)
        v_tpr = float(np.mean(np.asarray(sets[names[2]][0]) >= t))
        mark = "  <- default" if abs(t - DEFAULT_THRESHOLD) < 1e-9 else ""
        print(f"   {t:>5.2f}  {cells[0]}  {cells[1]}  {v_tpr:>6.3f}  {mean(js):.3f}{mark}")


def calibrate(data: Path) -> None:
    """Print the similarity distributions behind the default grounding threshold (``data``:
    the PubMedQA directory, :mod:`benchmarks.pubmedqa_data`)."""
    from deepcritical.evidence.onnx_embeddings import run_embedder

    start = time.perf_counter()
    rows = {
        json.loads(line)["pmid"]: json.loads(line)
        for line in (data / "corpus.jsonl").read_text(encoding="utf-8").split("\n")
        if line.strip()
    }
    questions = read_dev_questions(data / "dev_questions.jsonl", None)
    embedder = run_embedder()
    pmids = list(rows)
    index = passage_index(rows, pmids, embedder)
    position = {p: i for i, p in enumerate(pmids)}
    sets = similarity_sets(questions, rows, index, position, embedder)
    print(
        f"done in {time.perf_counter() - start:.0f} s; all-MiniLM-L6-v2, {len(questions)} questions"
    )
    print_distributions(sets)
    print_thresholds(sets)
