"""The ONNX embedders: length-bucketed batches, provider choice, export cache and fallback,
and (slow: exports and loads the real model) agreement with the torch embedder: int8 close,
fp32 (the runs' embedder) the same vectors under the same name."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import pytest
import tokenizers
from numpy.typing import NDArray

from deepcritical.evidence import onnx_embeddings
from deepcritical.evidence.embedding_paths import MachineCapabilities
from deepcritical.evidence.embeddings import (
    DEFAULT_MODEL,
    SentenceTransformerEmbedder,
    length_batches,
    resolve_model_path,
    shared_embedder,
)
from deepcritical.evidence.onnx_embeddings import (
    CPU_PROVIDER,
    CUDA_PROVIDER,
    MODEL_FILES,
    EmbedderFallbackWarning,
    OnnxEmbedder,
    backend_embedder,
    execution_providers,
    export_dir,
    load_onnx,
    onnx_int8_name,
    run_embedder,
)
from deepcritical.evidence.torch_embeddings import TorchPathEmbedder
from tests.conftest import PUBMEDQA


def test_length_batches_sort_by_length_and_cover_every_index() -> None:
    batches = length_batches([50, 3, 20, 3, 90, 7], 2)
    assert batches == [[1, 3], [5, 2], [0, 4]]
    assert sorted(i for b in batches for i in b) == list(range(6))
    assert length_batches([], 4) == []
    with pytest.raises(ValueError, match="at least 1"):
        length_batches([1], 0)


def test_execution_providers_put_cuda_first_when_offered() -> None:
    assert execution_providers([CUDA_PROVIDER, CPU_PROVIDER]) == [CUDA_PROVIDER, CPU_PROVIDER]
    assert execution_providers(["AzureExecutionProvider", CPU_PROVIDER]) == [CPU_PROVIDER]


@dataclass
class FakeEncoding:
    ids: list[int]


class FakeTokenizer:
    """One token per word, each token id the text's length in characters."""

    def enable_truncation(self, max_length: int) -> None:
        self.max_length = max_length

    def no_padding(self) -> None:
        pass

    def encode_batch(self, texts: Sequence[str]) -> list[FakeEncoding]:
        return [FakeEncoding([len(t)] * len(t.split())) for t in texts]


class FakeSession:
    """Returns, per row, ``[first token id, tokens in the row, batch width]``."""

    widths: list[int]

    def __init__(self, path: str, options: Any, providers: list[str]) -> None:
        self.providers = providers
        self.widths = []
        FakeSession.last = self

    last: FakeSession

    @dataclass
    class Output:
        shape: tuple[str, int]

    def get_outputs(self) -> list[FakeSession.Output]:
        return [FakeSession.Output(("batch", 3))]

    def run(self, names: None, feed: dict[str, NDArray[np.int64]]) -> list[NDArray[np.float32]]:
        ids, mask = feed["input_ids"], feed["attention_mask"]
        self.widths.append(ids.shape[1])
        width = np.full(len(ids), ids.shape[1])
        return [np.stack([ids[:, 0], mask.sum(1), width], axis=1).astype(np.float32)]


@pytest.fixture
def fake_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(onnxruntime, "InferenceSession", FakeSession)
    monkeypatch.setattr(onnxruntime, "disable_telemetry_events", lambda: None)
    monkeypatch.setattr(tokenizers.Tokenizer, "from_file", staticmethod(lambda _p: FakeTokenizer()))


def fake_embedder(tmp_path: Path, **kwargs: Any) -> OnnxEmbedder:
    return OnnxEmbedder("org/model", tmp_path / "m.onnx", tmp_path, batch_size=2, **kwargs)


@pytest.mark.usefixtures("fake_runtime")
def test_embed_keeps_input_order_and_pads_each_batch_to_its_own_longest(tmp_path: Path) -> None:
    texts = ["a b c d e f", "x", "p q r", "s t", "u v w x y z g h"]
    vectors = fake_embedder(tmp_path, available_providers=[CPU_PROVIDER]).embed(texts)
    assert vectors.shape == (5, 3)
    assert vectors[:, 0].tolist() == [len(t) for t in texts]  # row i is text i
    assert vectors[:, 1].tolist() == [len(t.split()) for t in texts]
    # batches by length: ["x", "s t"], ["p q r", "a b c d e f"], ["u v w x y z g h"]
    assert FakeSession.last.widths == [2, 6, 8]
    assert fake_embedder(tmp_path).embed([]).shape == (0, 3)


@pytest.mark.usefixtures("fake_runtime")
def test_int8_reads_128_word_pieces_under_its_own_name_fp32_the_models_length_under_its_name(
    tmp_path: Path,
) -> None:
    (tmp_path / "sentence_bert_config.json").write_text('{"max_seq_length": 256}', "utf-8")
    int8 = fake_embedder(tmp_path)
    assert (int8.model_name, int8.max_tokens) == ("org/model#onnx-int8", 128)
    fp32 = fake_embedder(tmp_path, precision="fp32")
    assert (fp32.model_name, fp32.max_tokens) == ("org/model", 256)


@pytest.mark.usefixtures("fake_runtime")
def test_gpu_provider_is_used_when_onnx_runtime_offers_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        onnxruntime, "get_available_providers", lambda: [CUDA_PROVIDER, CPU_PROVIDER]
    )
    embedder = fake_embedder(tmp_path)
    assert FakeSession.last.providers == [CUDA_PROVIDER, CPU_PROVIDER]
    assert embedder.providers[0] == CUDA_PROVIDER
    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: [CPU_PROVIDER])
    fake_embedder(tmp_path)
    assert FakeSession.last.providers == [CPU_PROVIDER]


def test_onnx_vectors_have_a_name_of_their_own(tmp_path: Path) -> None:
    assert onnx_int8_name(DEFAULT_MODEL) == DEFAULT_MODEL + "#onnx-int8"
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"v1")
    first = export_dir(model, tmp_path / "cache")
    assert first == export_dir(model, tmp_path / "cache")
    (model / "model.safetensors").write_bytes(b"v2 changed")
    assert export_dir(model, tmp_path / "cache") != first


@pytest.fixture
def no_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(onnx_embeddings, "_SHARED", {})


@pytest.mark.usefixtures("no_shared")
def test_unwritable_cache_falls_back_to_torch_with_a_warning(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x", encoding="utf-8")  # the cache directory cannot be created
    with pytest.warns(EmbedderFallbackWarning, match=r"\(\w+Error: .*\); using torch"):
        embedder = backend_embedder(DEFAULT_MODEL, "onnx-int8", cache_dir=blocker / "onnx")
    assert embedder is shared_embedder(DEFAULT_MODEL)
    assert isinstance(embedder, SentenceTransformerEmbedder)


@pytest.mark.usefixtures("no_shared")
def test_missing_onnx_packages_fall_back_to_torch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing(_model: Path, _target: Path) -> Path:
        raise ImportError("No module named 'onnx'")

    monkeypatch.setattr(onnx_embeddings, "export_onnx", missing)
    with pytest.warns(EmbedderFallbackWarning, match="No module named 'onnx'"):
        embedder = backend_embedder(DEFAULT_MODEL, "onnx-int8", cache_dir=tmp_path)
    assert embedder is shared_embedder(DEFAULT_MODEL)
    assert backend_embedder(DEFAULT_MODEL, "torch") is embedder
    with pytest.warns(EmbedderFallbackWarning, match=r"fp32 ONNX .*No module named 'onnx'"):
        assert run_embedder(DEFAULT_MODEL, "onnx-fp32", cache_dir=tmp_path) is embedder


@pytest.mark.usefixtures("no_shared")
def test_runs_embed_on_the_exact_path_of_the_machine_or_of_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded: list[tuple[str, str]] = []

    made: dict[str, Any] = {"fp32": object(), "int8": object()}

    def load(model_name: str, precision: str, _cache: Path | None) -> Any:
        loaded.append((model_name, precision))
        return made[precision]

    monkeypatch.setattr(onnx_embeddings, "load_onnx", load)
    monkeypatch.setattr(onnx_embeddings, "_SHARED_TORCH", {})
    plain = MachineCapabilities("a CPU without bf16", frozenset({"avx2", "avx512f"}))
    monkeypatch.setattr(onnx_embeddings, "detect_capabilities", lambda: plain)
    assert run_embedder("org/m", "torch") is shared_embedder("org/m")
    assert run_embedder("org/m", "auto") is shared_embedder("org/m")  # torch fp32, never slower
    assert run_embedder("org/m", "onnx-int8") is shared_embedder("org/m")
    assert run_embedder("org/m", "onnx-fp32") is made["fp32"]
    assert backend_embedder("org/m", "onnx-int8") is made["int8"]
    assert backend_embedder("org/m", "auto") is made["int8"]
    assert loaded == [("org/m", "fp32"), ("org/m", "int8")]  # one load each per process
    amx = MachineCapabilities("a CPU with AMX", frozenset({"avx512f", "amx_bf16", "amx_tile"}))
    monkeypatch.setattr(onnx_embeddings, "detect_capabilities", lambda: amx)
    runs, corpus = run_embedder("org/m", "auto"), backend_embedder("org/m", "auto")
    assert isinstance(runs, TorchPathEmbedder)
    assert isinstance(corpus, TorchPathEmbedder)
    assert (runs.path, runs.spec.max_tokens) == ("torch-bf16", 256)
    assert (corpus.path, corpus.spec.max_tokens) == ("torch-bf16-128", 128)
    assert runs.model_name == corpus.model_name == "org/m"  # one vector space: exact paths
    assert run_embedder("org/m", "auto") is runs  # one per path per process
    with pytest.warns(EmbedderFallbackWarning, match="needs a CUDA GPU"):
        fp16 = backend_embedder("org/m", "torch-fp16")
    assert fp16 is runs  # fp16 on a CPU: bf16 instead


SENTENCES = [
    "Metformin lowers fasting glucose in adults with type 2 diabetes.",
    "Statins reduce LDL cholesterol and the risk of myocardial infarction.",
    "Does vitamin D supplementation prevent fractures in older women?",
    "The randomised trial enrolled 412 patients with chronic kidney disease; the primary "
    "outcome was the time to dialysis, and secondary outcomes included all-cause mortality.",
]


def long_abstracts(count: int) -> list[str]:
    """The ``count`` longest PubMedQA abstracts (over 256 word pieces), or none when the data
    is absent."""
    corpus = PUBMEDQA / "corpus.jsonl"
    if not corpus.is_file():
        return []
    texts = []
    with corpus.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            sections = record.get("abstract_sections") or []
            texts.append(" ".join(str(s.get("text", "")) for s in sections))
    return sorted(texts, key=len)[-count:]


@pytest.mark.slow
def test_onnx_vectors_match_torch_int8_closely_fp32_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, minilm_embedder: SentenceTransformerEmbedder
) -> None:
    texts = SENTENCES + long_abstracts(8)
    reference = minilm_embedder.embed(texts)
    int8 = load_onnx(DEFAULT_MODEL, "int8", cache_dir=tmp_path)
    assert int8.model_name == onnx_int8_name(DEFAULT_MODEL)
    fast = int8.embed(SENTENCES)
    assert fast.shape == (len(SENTENCES), 384)
    np.testing.assert_allclose(np.linalg.norm(fast, axis=1), 1.0, atol=1e-4)
    assert float((fast * reference[: len(SENTENCES)]).sum(1).min()) > 0.99
    # one export wrote both graphs: the fp32 one loads without exporting again
    model_dir = Path(resolve_model_path(DEFAULT_MODEL))
    files = {p.name for p in export_dir(model_dir, tmp_path).iterdir()}
    assert files == set(MODEL_FILES.values())

    def no_export(_model: Path, _directory: Path) -> Path:
        raise AssertionError("exported again")

    monkeypatch.setattr(onnx_embeddings, "export_onnx", no_export)
    fp32 = load_onnx(DEFAULT_MODEL, "fp32", cache_dir=tmp_path)
    assert fp32.model_name == minilm_embedder.model_name  # the calibrated thresholds apply
    np.testing.assert_allclose(fp32.embed(texts), reference, atol=1e-5)  # long texts: 256 pieces
    again = load_onnx(DEFAULT_MODEL, "int8", cache_dir=tmp_path)
    np.testing.assert_allclose(again.embed(SENTENCES), fast, atol=1e-6)


def test_torch_embedder_uses_cuda_when_torch_sees_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    import sentence_transformers
    import torch

    devices: list[str] = []

    class FakeModel:
        def __init__(self, path: str, device: str) -> None:
            devices.append(device)

        def get_embedding_dimension(self) -> int:
            return 384

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", FakeModel)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    SentenceTransformerEmbedder(DEFAULT_MODEL)._load()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    SentenceTransformerEmbedder(DEFAULT_MODEL)._load()
    assert devices == ["cuda", "cpu"]
