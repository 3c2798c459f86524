"""The evidence store: identifier dedup, near-duplicate dedup, ids, embeddings, retrieval."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.store import EMBED_MAX_CHARS, EvidenceStore, embedding_text
from deepcritical.models import Citation, Evidence

# --------------------------------------------------------------------------- helpers

BRCA_ABSTRACT = (
    "Germline mutations in BRCA1 predispose to breast and ovarian cancer. We analysed 117 "
    "missense variants in the BRCT domain of BRCA1 by structural modelling and a transcriptional "
    "activation assay. Variants that destabilise the fold abolish function, whereas surface "
    "variants outside the phosphopeptide-binding groove are largely neutral."
)


def make(
    content: str,
    *,
    source: str = "pubmed",
    native_id: str = "",
    title: str = "",
    relevance: float = 0.5,
    **citation: Any,
) -> Evidence:
    return Evidence(
        content=content,
        citation=Citation(source=source, id=native_id, title=title, **citation),
        relevance=relevance,
    )


def pubmed_record() -> Evidence:
    """How the PubMed source reports the paper: PMID only, full abstract, MeSH terms."""
    ev = make(
        BRCA_ABSTRACT,
        source="pubmed",
        native_id="20516115",
        pmid="20516115",
        title="Comprehensive analysis of missense variations in the BRCT domain of BRCA1.",
        authors=["Lee MS", "Green R", "Marsillac SM"],
        journal="Cancer Res",
        year=2010,
        url="https://pubmed.ncbi.nlm.nih.gov/20516115/",
        relevance=0.4,
    )
    ev.mesh_terms = ["BRCA1 Protein", "Mutation, Missense"]
    return ev


def europepmc_record() -> Evidence:
    """How Europe PMC reports it: PMID + DOI + PMCID, a shorter text, more authors, a date."""
    ev = make(
        "BRCA1 BRCT missense variants assessed by structural and functional assays.",
        source="europepmc",
        native_id="20516115",
        pmid="20516115",
        doi="10.1158/0008-5472.CAN-09-4563",
        pmcid="PMC3040717",
        title="Comprehensive analysis of missense variations in the BRCT domain of BRCA1 by "
        "structural and functional assays.",
        authors=["Lee MS", "Green R", "Marsillac SM", "Coquelle N", "Williams RS"],
        journal="Cancer Res",
        year=2010,
        date="2010-06-01",
        url="https://europepmc.org/article/MED/20516115",
        relevance=0.9,
    )
    ev.publication_types = ["research-article", "journal article"]
    return ev


def openalex_record() -> Evidence:
    """How OpenAlex reports it: DOI URL only, no abstract text beyond the title."""
    return make(
        "",
        source="openalex",
        native_id="https://openalex.org/W2023271753",
        doi="https://doi.org/10.1158/0008-5472.can-09-4563",
        title="Comprehensive Analysis of Missense Variations in the BRCT Domain of BRCA1",
        url="https://openalex.org/W2023271753",
        relevance=0.7,
    )


TOPICS = [
    "metformin activates AMPK in hepatocytes and lowers glucose output",
    "amyloid beta plaques accumulate in the hippocampus of transgenic mice",
    "statin therapy reduces LDL cholesterol and cardiovascular events",
    "aspirin irreversibly inhibits platelet cyclooxygenase",
    "tau hyperphosphorylation precedes neurofibrillary tangle formation",
    "insulin resistance in the brain impairs synaptic plasticity",
    "SGLT2 inhibitors lower heart failure hospitalisation",
    "GLP-1 receptor agonists reduce body weight in obesity trials",
]


def distinct_items(n: int, *, with_ids: bool = True) -> list[Evidence]:
    """``n`` items about different things (distinct words, so the hashing embedder agrees)."""
    items = []
    for i in range(n):
        words = " ".join(f"term{i}x{j}" for j in range(12))
        text = f"{TOPICS[i % len(TOPICS)]} study {i} {words}"
        if with_ids:
            items.append(make(text, native_id=str(1000 + i), title=f"Paper {i}"))
        else:
            items.append(make(text, source="web", native_id=f"w{i}", url=f"https://site{i}.org/a"))
    return items


class RecordingEmbedder:
    """Wraps an embedder and records every call's texts."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.dimension = inner.dimension
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.calls.append(list(texts))
        return self.inner.embed(texts)


# --------------------------------------------------------------------------- identifier dedup


def test_pubmed_and_europepmc_records_become_one_item(hashing_embedder: Embedder) -> None:
    store = EvidenceStore(hashing_embedder)
    first = store.add([pubmed_record()])
    second = store.add([europepmc_record()])

    assert [e.id for e in first.added] == ["E1"]
    assert second.added == []
    assert second.merged == ["E1"]
    assert len(store) == 1
    item = store.require("E1")
    c = item.citation
    assert item.sources == ["pubmed", "europepmc"]
    assert item.content == BRCA_ABSTRACT  # the longer text
    assert c.title.startswith("Comprehensive analysis")
    assert len(c.authors) == 5
    assert (c.pmid, c.doi, c.pmcid) == ("20516115", "10.1158/0008-5472.can-09-4563", "PMC3040717")
    assert c.date == "2010-06-01"
    assert c.url == "https://pubmed.ncbi.nlm.nih.gov/20516115/"
    assert item.relevance == 0.9
    assert item.mesh_terms == ["BRCA1 Protein", "Mutation, Missense"]
    assert item.publication_types == ["research-article", "journal article"]
    # the new identifiers are indexed: a later DOI-only record lands on the same item
    assert store.find_by_identifier("doi:10.1158/0008-5472.CAN-09-4563") is item
    assert store.find_by_identifier("pmcid:PMC3040717") is item
    third = store.add([openalex_record()])
    assert third.added == []
    assert third.merged == ["E1"]
    assert store.require("E1").sources == ["pubmed", "europepmc", "openalex"]


def test_doi_only_record_and_doi_plus_pmid_record_become_one(hashing_embedder: Embedder) -> None:
    store = EvidenceStore(hashing_embedder)
    store.add([openalex_record()])
    result = store.add([europepmc_record()])
    assert result.added == []
    assert result.merged == ["E1"]
    item = store.require("E1")
    assert item.sources == ["openalex", "europepmc"]
    assert item.citation.pmid == "20516115"
    assert item.content.startswith("BRCA1 BRCT")  # non-empty content won over the empty one
    # PubMed (PMID only) now finds the item through the PMID learnt from Europe PMC
    assert store.add([pubmed_record()]).merged == ["E1"]
    assert len(store) == 1
    assert store.require("E1").content == BRCA_ABSTRACT


def test_one_batch_bridges_pmid_only_and_doi_only_records(hashing_embedder: Embedder) -> None:
    # PubMed (PMID) and OpenAlex (DOI) share no key; Europe PMC (both) links them.
    store = EvidenceStore(hashing_embedder, near_duplicate_threshold=0.999)
    result = store.add([pubmed_record(), openalex_record(), europepmc_record()])
    assert [e.id for e in result.added] == ["E1"]
    assert result.merged == ["E1"]
    item = store.require("E1")
    assert item.sources == ["pubmed", "openalex", "europepmc"]
    assert result.added[0] is item  # AddResult holds the final merged object
    for key in ("pmid:20516115", "doi:10.1158/0008-5472.can-09-4563", "pmcid:PMC3040717"):
        assert store.find_by_identifier(key) is item
    assert store.find_by_identifier("url:https://openalex.org/W2023271753") is item


def test_batch_item_bridges_an_earlier_batch_item_to_a_stored_one(
    hashing_embedder: Embedder,
) -> None:
    # Stored: PubMed (PMID). Batch: OpenAlex (DOI only), then Europe PMC (PMID + DOI). The
    # Europe PMC record links the OpenAlex record to the stored item: nothing new is added.
    store = EvidenceStore(hashing_embedder, near_duplicate_threshold=0.999)
    store.add([pubmed_record()])
    result = store.add([openalex_record(), europepmc_record()])
    assert result.added == []
    assert result.merged == ["E1"]
    assert store.ids() == ["E1"]
    assert store.require("E1").sources == ["pubmed", "openalex", "europepmc"]
    assert store.find_by_identifier("url:https://openalex.org/W2023271753") is store.get("E1")


def test_different_papers_stay_separate(hashing_embedder: Embedder) -> None:
    store = EvidenceStore(hashing_embedder)
    result = store.add(distinct_items(5))
    assert [e.id for e in result.added] == ["E1", "E2", "E3", "E4", "E5"]
    assert result.merged == []
    assert result.near_duplicates == []
    assert len({e.citation.pmid or e.citation.id for e in store}) == 5


def test_batch_with_internal_duplicates(hashing_embedder: Embedder) -> None:
    a, b = distinct_items(2)
    a_again = a.model_copy(update={"sources": ["europepmc"], "relevance": 0.95})
    a_again.citation = a.citation.model_copy(
        update={"source": "europepmc", "pmid": "1000", "doi": "10.9/a"}
    )
    result = EvidenceStore(hashing_embedder).add([a, b, a_again])
    assert [e.id for e in result.added] == ["E1", "E2"]
    assert result.merged == ["E1"]
    merged = result.added[0]
    assert merged.sources == ["pubmed", "europepmc"]
    assert merged.relevance == 0.95
    assert merged.citation.doi == "10.9/a"


def test_readding_the_same_items_adds_nothing(hashing_embedder: Embedder) -> None:
    store = EvidenceStore(hashing_embedder)
    items = [pubmed_record(), *distinct_items(3)]
    store.add(items)
    before = [e.model_copy(deep=True) for e in store.all()]
    vectors = store.embeddings()
    again = store.add(items)
    assert again.added == []
    assert again.merged == ["E1", "E2", "E3", "E4"]
    assert again.near_duplicates == []
    assert store.all() == before
    np.testing.assert_array_equal(store.embeddings(), vectors)


def test_add_does_not_modify_the_incoming_items(hashing_embedder: Embedder) -> None:
    item = pubmed_record()
    item.id = "E99"
    snapshot = item.model_copy(deep=True)
    store = EvidenceStore(hashing_embedder)
    stored = store.add([item]).added[0]
    store.add([europepmc_record()])
    assert item == snapshot
    assert stored is not item
    assert stored.id == "E1"  # the store's id, not the incoming one


def test_items_without_identifiers_dedup_by_title_and_content(
    hashing_embedder: Embedder,
) -> None:
    # near-duplicate detection off (threshold 1.0 only catches exact vectors, but the hash key
    # must catch this before embedding)
    recorder = RecordingEmbedder(hashing_embedder)
    store = EvidenceStore(recorder, near_duplicate_threshold=1.0)
    one = make("Metformin  and AMPK.\nA note.", source="local", native_id="doc-a", title="Note")
    two = make("metformin and ampk a note", source="local", native_id="doc-b", title="NOTE")
    other = make("Something else entirely", source="local", native_id="doc-c", title="Note")
    result = store.add([one, two, other])
    assert [e.id for e in result.added] == ["E1", "E2"]
    assert result.merged == ["E1"]
    assert result.near_duplicates == []
    assert len(recorder.calls) == 1
    assert len(recorder.calls[0]) == 2  # the duplicate was never embedded
    assert store.find_by_identifier(one.citation) is None  # no identifier keys at all


def test_stored_items_are_never_merged_together(hashing_embedder: Embedder) -> None:
    # PMID-only and DOI-only records of one paper arrive in separate rounds: two items. A later
    # record carrying both folds into the first (PMID priority) and removes nothing.
    store = EvidenceStore(hashing_embedder, near_duplicate_threshold=0.999)
    store.add([pubmed_record()])
    store.add([openalex_record()])
    assert store.ids() == ["E1", "E2"]
    result = store.add([europepmc_record()])
    assert result.merged == ["E1"]
    assert store.ids() == ["E1", "E2"]
    assert store.find_by_identifier("doi:10.1158/0008-5472.can-09-4563") is store.get("E2")


# --------------------------------------------------------------------------- ids


def test_ids_are_sequential_and_never_reused(hashing_embedder: Embedder) -> None:
    store = EvidenceStore(hashing_embedder)
    items = distinct_items(6)
    assert [e.id for e in store.add(items[:3]).added] == ["E1", "E2", "E3"]
    # a duplicate of E2 and two new items: the duplicate consumes no id
    result = store.add([items[1], items[3], items[4]])
    assert [e.id for e in result.added] == ["E4", "E5"]
    assert store.ids() == ["E1", "E2", "E3", "E4", "E5"]
    assert [e.id for e in store.all()] == store.ids()
    assert [e.id for e in store] == store.ids()
    assert "E5" in store
    assert "E6" not in store
    assert store.add([items[5]]).added[0].id == "E6"


def test_require_and_get(hashing_embedder: Embedder) -> None:
    store = EvidenceStore(hashing_embedder)
    store.add(distinct_items(1))
    assert store.get("E1") is store.require("E1")
    assert store.get("E2") is None
    with pytest.raises(KeyError, match="'E2' is not in this run's evidence store"):
        store.require("E2")


def test_stores_are_independent(hashing_embedder: Embedder) -> None:
    one, two = EvidenceStore(hashing_embedder), EvidenceStore(hashing_embedder)
    one.add(distinct_items(2))
    assert len(two) == 0
    assert two.add(distinct_items(1)).added[0].id == "E1"


def test_threshold_is_validated(hashing_embedder: Embedder) -> None:
    with pytest.raises(ValueError, match="near_duplicate_threshold"):
        EvidenceStore(hashing_embedder, near_duplicate_threshold=0.0)
    with pytest.raises(ValueError, match="near_duplicate_threshold"):
        EvidenceStore(hashing_embedder, near_duplicate_threshold=1.5)


# --------------------------------------------------------------------------- near duplicates


def test_near_duplicate_by_embedding_in_one_batch(hashing_embedder: Embedder) -> None:
    store = EvidenceStore(hashing_embedder, near_duplicate_threshold=0.97)
    text = " ".join(f"word{i}" for i in range(60))
    a = make(text, source="web", native_id="a", url="https://a.org/x")
    b = make(text + " extra", source="web", native_id="b", url="https://b.org/y")
    result = store.add([a, b])
    assert [e.id for e in result.added] == ["E1"]
    assert result.near_duplicates == ["E1"]
    assert result.merged == []
    assert store.require("E1").content == text + " extra"  # the richer text kept
    # the absorbed record's URL now identifies E1
    assert store.find_by_identifier("url:https://b.org/y") is store.get("E1")


def test_near_duplicates_with_conflicting_pmids_stay_apart(hashing_embedder: Embedder) -> None:
    # Two title-only "Erratum" notices: identical text, different PubMed records.
    store = EvidenceStore(hashing_embedder, near_duplicate_threshold=0.9)
    one = make("", native_id="111", pmid="111", title="Erratum.")
    two = make("", native_id="222", pmid="222", title="Erratum.")
    assert [e.id for e in store.add([one]).added] == ["E1"]
    result = store.add([two])
    assert [e.id for e in result.added] == ["E2"]
    assert result.near_duplicates == []


def test_many_stored_items_are_never_removed(hashing_embedder: Embedder) -> None:
    # DESIGN trap 7: near-duplicate detection must compare only new items with the store.
    store = EvidenceStore(hashing_embedder, near_duplicate_threshold=0.97)
    items = distinct_items(51, with_ids=False)
    assert len(store.add(items[:50]).added) == 50
    result = store.add([items[50]])
    assert [e.id for e in result.added] == ["E51"]
    assert len(store) == 51
    # the same texts again under new URLs: all near duplicates, nothing removed or added
    moved = [
        e.model_copy(
            update={"citation": e.citation.model_copy(update={"url": f"https://m{i}.org"})}
        )
        for i, e in enumerate(items[:50])
    ]
    again = store.add(moved)
    assert again.added == []
    assert len(again.near_duplicates) == 50
    assert len(store) == 51


@pytest.mark.slow
def test_near_duplicate_with_real_embeddings(minilm_embedder: Embedder) -> None:
    store = EvidenceStore(minilm_embedder, near_duplicate_threshold=0.97)
    original = make(
        BRCA_ABSTRACT,
        source="web",
        native_id="https://lab.example.org/brca1-brct",
        url="https://lab.example.org/brca1-brct",
        title="BRCT missense variants",
    )
    edited = BRCA_ABSTRACT.replace("We analysed", "We analyzed").replace("117", "one hundred")
    copy = make(
        edited + " ",
        source="web",
        native_id="https://mirror.example.net/papers/brca1",
        url="https://mirror.example.net/papers/brca1",
        title="BRCT missense variants.",
    )
    unrelated = make(
        "Metformin activates AMP-activated protein kinase in hepatocytes and reduces hepatic "
        "glucose production in patients with type 2 diabetes.",
        source="web",
        native_id="https://other.example.com/metformin",
        url="https://other.example.com/metformin",
        title="Metformin and AMPK",
    )
    assert [e.id for e in store.add([original]).added] == ["E1"]
    result = store.add([copy, unrelated])
    assert [e.id for e in result.added] == ["E2"]
    assert result.added[0].citation.title == "Metformin and AMPK"
    assert result.near_duplicates == ["E1"]
    assert store.find_by_identifier("url:https://mirror.example.net/papers/brca1") is store.get(
        "E1"
    )
    sim = store.similarity(embedding_text(copy), ["E1", "E2"])
    assert sim["E1"] >= 0.97 > sim["E2"]


@pytest.mark.slow
def test_pubmedqa_abstracts_are_kept_then_one_more_is_added(
    minilm_embedder: Embedder, pubmedqa_dir: Path
) -> None:
    records = []
    with (pubmedqa_dir / "corpus.jsonl").open() as fh:
        for line in fh:
            records.append(json.loads(line))
            if len(records) == 51:
                break
    items = [
        make(
            "\n".join(f"{s['label']}: {s['text']}" for s in r["abstract_sections"]),
            source="local",
            native_id=r["pmid"],
            pmid=r["pmid"],
            year=r.get("year"),
        )
        for r in records
    ]
    store = EvidenceStore(minilm_embedder)
    assert len(store.add(items[:50]).added) == 50
    assert [e.id for e in store.add(items[50:]).added] == ["E51"]
    assert len(store) == 51
    # the same abstracts under other ids (e.g. a web copy): near duplicates, nothing removed
    web = [
        make(e.content, source="web", native_id=f"w{i}", url=f"https://copy{i}.example.org/a")
        for i, e in enumerate(items[:5])
    ]
    result = store.add(web)
    assert result.added == []
    assert result.near_duplicates == ["E1", "E2", "E3", "E4", "E5"]
    assert len(store) == 51


# --------------------------------------------------------------------------- embeddings


def test_embeddings_are_batched_and_use_title_and_content(hashing_embedder: Embedder) -> None:
    recorder = RecordingEmbedder(hashing_embedder)
    store = EvidenceStore(recorder)
    long_item = make("x " * 3000, native_id="1", title="Long")
    store.add([long_item, *distinct_items(3)])
    assert len(recorder.calls) == 1  # one batch for the new items
    texts = recorder.calls[0]
    assert len(texts) == 4
    assert texts[0].startswith("Long\nx x")
    assert len(texts[0]) == EMBED_MAX_CHARS
    emb = store.embeddings()
    assert emb.shape == (4, hashing_embedder.dimension)
    assert emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, rtol=1e-5)


def test_embeddings_follow_the_order_of_ids(hashing_embedder: Embedder) -> None:
    store = EvidenceStore(hashing_embedder)
    store.add(distinct_items(3))
    everything = store.embeddings()
    np.testing.assert_array_equal(store.embeddings(["E3", "E1"]), everything[[2, 0]])
    assert store.embeddings([]).shape == (0, hashing_embedder.dimension)
    with pytest.raises(KeyError, match="E9"):
        store.embeddings(["E1", "E9"])
    # a copy: writing to it does not corrupt the store
    everything[:] = 0
    assert np.abs(store.embeddings()).sum() > 0


def test_empty_store(hashing_embedder: Embedder) -> None:
    store = EvidenceStore(hashing_embedder)
    assert len(store) == 0
    assert store.all() == []
    assert store.embeddings().shape == (0, hashing_embedder.dimension)
    assert store.search("anything", 5) == []
    assert store.select_diverse("anything", 5) == []
    assert store.find_by_identifier("pmid:1") is None


def test_store_grows_past_its_initial_buffer(hashing_embedder: Embedder) -> None:
    store = EvidenceStore(hashing_embedder)
    items = distinct_items(150)
    for start in range(0, 150, 40):
        store.add(items[start : start + 40])
    assert len(store) == 150
    expected = hashing_embedder.embed([embedding_text(e) for e in store.all()])
    np.testing.assert_allclose(store.embeddings(), expected, atol=1e-6)


def test_merge_that_changes_content_reembeds(hashing_embedder: Embedder) -> None:
    store = EvidenceStore(hashing_embedder)
    store.add([openalex_record()])  # title only
    before = store.embeddings(["E1"])[0].copy()
    store.add([europepmc_record()])  # brings an abstract
    after = store.embeddings(["E1"])[0]
    expected = hashing_embedder.embed([embedding_text(store.require("E1"))])[0]
    assert not np.allclose(before, after)
    np.testing.assert_allclose(after, expected, atol=1e-6)


# --------------------------------------------------------------------------- retrieval


def test_search_ranks_by_cosine(hashing_embedder: Embedder) -> None:
    store = EvidenceStore(hashing_embedder)
    store.add(distinct_items(8))
    hits = store.search("metformin activates AMPK in hepatocytes", 3)
    assert len(hits) == 3
    assert hits[0][0].id == "E1"  # TOPICS[0]
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)
    q = hashing_embedder.embed(["metformin activates AMPK in hepatocytes"])[0]
    assert scores[0] == pytest.approx(float(store.embeddings(["E1"])[0] @ q), abs=1e-6)
    assert len(store.search("x", 100)) == 8
    assert store.search("x", 0) == []


def test_similarity(hashing_embedder: Embedder) -> None:
    store = EvidenceStore(hashing_embedder)
    store.add(distinct_items(3))
    sims = store.similarity("statin therapy reduces LDL cholesterol", ["E3", "E1"])
    assert list(sims) == ["E3", "E1"]
    assert sims["E3"] > sims["E1"]
    assert store.similarity("x", []) == {}
    with pytest.raises(KeyError):
        store.similarity("x", ["E7"])


def twins_and_other() -> list[Evidence]:
    twin = (
        "Metformin reduced amyloid beta deposition and improved memory in APP/PS1 mice through "
        "AMPK activation in the hippocampus."
    )
    return [
        make(twin, source="web", native_id="t1", url="https://a.org/1", title="Metformin in AD"),
        make(
            twin.replace("improved", "enhanced"),
            source="web",
            native_id="t2",
            url="https://b.org/2",
            title="Metformin in AD mice",
        ),
        make(
            "In a cohort of older adults with diabetes, metformin use was associated with a lower "
            "incidence of dementia compared with sulfonylureas.",
            source="web",
            native_id="o",
            url="https://c.org/3",
            title="Metformin and dementia risk",
        ),
        make(
            "Proton pump inhibitors and the risk of hip fracture in postmenopausal women.",
            source="web",
            native_id="n",
            url="https://d.org/4",
            title="PPIs and fracture",
        ),
    ]


@pytest.mark.slow
def test_select_diverse_skips_the_twin(minilm_embedder: Embedder) -> None:
    # threshold 1.0: keep the twins as separate items so MMR has to deal with them
    store = EvidenceStore(minilm_embedder, near_duplicate_threshold=1.0)
    store.add(twins_and_other())
    query = "Does metformin improve memory and reduce amyloid in Alzheimer's disease?"
    by_relevance = [e.id for e, _ in store.search(query, 4)]
    # the twins are the two most relevant items, the cohort study third, PPIs last
    assert set(by_relevance[:2]) == {"E1", "E2"}
    assert by_relevance[2:] == ["E3", "E4"]
    picked = [e.id for e in store.select_diverse(query, 2, lambda_=0.7)]
    assert picked[0] == by_relevance[0]
    assert picked[1] == "E3"  # the second twin adds nothing new
    # lambda 1: pure relevance, the same order as search()
    assert [e.id for e in store.select_diverse(query, 4, lambda_=1.0)] == by_relevance
    assert [e.id for e in store.select_diverse(query, 2, lambda_=1.0)] == by_relevance[:2]


def test_select_diverse_logic(hashing_embedder: Embedder) -> None:
    store = EvidenceStore(hashing_embedder, near_duplicate_threshold=1.0)
    store.add(twins_and_other())
    query = "metformin amyloid memory dementia"
    assert len(store.select_diverse(query, 10)) == 4
    assert store.select_diverse(query, 0) == []
    only = store.select_diverse(query, 3, candidate_ids=["E4", "E3", "E3"])
    assert sorted(e.id for e in only) == ["E3", "E4"]
    relevance = [e.id for e, _ in store.search(query, 4)]
    assert [e.id for e in store.select_diverse(query, 4, lambda_=1.0)] == relevance
    with pytest.raises(KeyError, match="E9"):
        store.select_diverse(query, 2, candidate_ids=["E1", "E9"])
    with pytest.raises(ValueError, match="lambda_"):
        store.select_diverse(query, 2, lambda_=1.5)


# --------------------------------------------------------------------------- update / lookup


def test_update_replaces_fields_and_reindexes(hashing_embedder: Embedder) -> None:
    store = EvidenceStore(hashing_embedder)
    store.add(distinct_items(2))
    item = store.require("E1")
    vector = store.embeddings(["E1"])[0].copy()

    tagged = item.model_copy(update={"checklist_keys": ["mechanism"]})
    store.update(tagged)
    assert store.require("E1").checklist_keys == ["mechanism"]
    np.testing.assert_array_equal(store.embeddings(["E1"])[0], vector)  # text unchanged

    richer = tagged.model_copy(
        update={
            "content": "a new abstract about lithium and GSK3 beta",
            "citation": tagged.citation.model_copy(update={"doi": "10.77/New"}),
        }
    )
    store.update(richer)
    assert store.find_by_identifier("doi:10.77/new") is richer
    assert store.find_by_identifier("pmid:1000") is richer  # old keys still find it
    assert store.search("lithium GSK3 beta", 1)[0][0].id == "E1"
    assert not np.allclose(store.embeddings(["E1"])[0], vector)
    assert store.ids() == ["E1", "E2"]


def test_update_unknown_id_raises(hashing_embedder: Embedder) -> None:
    store = EvidenceStore(hashing_embedder)
    with pytest.raises(KeyError, match="E1"):
        store.update(make("x", native_id="1").model_copy(update={"id": "E1"}))


def test_find_by_identifier_normalises_and_accepts_citations(hashing_embedder: Embedder) -> None:
    store = EvidenceStore(hashing_embedder)
    store.add([europepmc_record(), *distinct_items(1)])
    item = store.require("E1")
    assert store.find_by_identifier("doi:https://doi.org/10.1158/0008-5472.CAN-09-4563") is item
    assert store.find_by_identifier("PMID:PMID: 20516115") is item
    assert store.find_by_identifier("pmcid:pmc3040717") is item
    assert store.find_by_identifier("url:https://EUROPEPMC.org/article/MED/20516115/") is item
    assert store.find_by_identifier(Citation(source="pubmed", id="20516115")) is item
    assert store.find_by_identifier("pmid:1") is None
    assert store.find_by_identifier("nonsense") is None
