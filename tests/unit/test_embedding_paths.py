"""The choice of an embedding path is a pure function of the machine: a fake CUDA GPU (with
and without bf16), a CPU with AMX, one with AVX512_BF16 only, one with neither; the settings
override it; a corpus made before paths reads as its original one."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest

from deepcritical.config import EmbeddingBackend
from deepcritical.evidence import embedding_paths
from deepcritical.evidence.embedding_paths import (
    PATHS,
    MachineCapabilities,
    PathName,
    choose_paths,
    detect_capabilities,
    parse_cpuinfo,
    requested_paths,
    stored_path,
)

HASWELL = frozenset({"fpu", "sse2", "avx", "avx2", "fma"})
ICE_LAKE = HASWELL | {"avx512f", "avx512bw", "avx512_vnni"}
ZEN4 = ICE_LAKE | {"avx512_bf16"}
SAPPHIRE_RAPIDS = ZEN4 | {"amx_bf16", "amx_tile", "amx_int8"}


def cpu(flags: frozenset[str]) -> MachineCapabilities:
    return MachineCapabilities("test CPU", flags)


def test_a_cuda_gpu_gets_bf16_or_fp16_at_256_word_pieces_for_imports_and_runs() -> None:
    a100 = MachineCapabilities("host", HASWELL, cuda=True, cuda_name="A100", cuda_bf16=True)
    t4 = MachineCapabilities("host", SAPPHIRE_RAPIDS, cuda=True, cuda_name="T4", cuda_bf16=False)
    assert (choose_paths(a100).corpus, choose_paths(a100).run) == ("torch-bf16", "torch-bf16")
    assert (choose_paths(t4).corpus, choose_paths(t4).run) == ("torch-fp16", "torch-fp16")
    assert PATHS["torch-bf16"].max_tokens == PATHS["torch-fp16"].max_tokens == 256
    assert "CUDA" in choose_paths(t4).reason
    assert "CUDA T4" in t4.describe()


@pytest.mark.parametrize("flags", [SAPPHIRE_RAPIDS, ZEN4], ids=["amx", "avx512_bf16"])
def test_a_cpu_with_bf16_in_hardware_gets_bf16(flags: frozenset[str]) -> None:
    choice = choose_paths(cpu(flags))
    assert (choice.corpus, choice.run) == ("torch-bf16-128", "torch-bf16")
    assert "avx512_bf16" in choice.reason


@pytest.mark.parametrize("flags", [ICE_LAKE, HASWELL, frozenset()], ids=["vnni", "avx2", "none"])
def test_a_cpu_without_bf16_gets_int8_imports_and_torch_fp32_runs(flags: frozenset[str]) -> None:
    choice = choose_paths(cpu(flags))
    assert (choice.corpus, choice.run) == ("onnx-int8", "torch-fp32")


def test_runs_always_get_an_exact_path_at_256_word_pieces() -> None:
    machines = [cpu(f) for f in (SAPPHIRE_RAPIDS, ZEN4, ICE_LAKE, HASWELL)] + [
        MachineCapabilities("h", HASWELL, cuda=True, cuda_bf16=b) for b in (True, False)
    ]
    backends: tuple[EmbeddingBackend, ...] = get_args(EmbeddingBackend)
    for machine in machines:
        for backend in backends:
            run = PATHS[requested_paths(backend, choose_paths(machine)).run]
            assert run.exact, (machine, backend)
            assert run.max_tokens == 256, (machine, backend)


def test_the_setting_overrides_the_machine() -> None:
    amx = choose_paths(cpu(SAPPHIRE_RAPIDS))
    assert requested_paths("auto", amx) == amx
    torch = requested_paths("torch", amx)
    assert (torch.corpus, torch.run) == ("torch-fp32", "torch-fp32")
    int8 = requested_paths("onnx-int8", amx)
    assert (int8.corpus, int8.run) == ("onnx-int8", "torch-bf16")  # int8 is never a run path
    short = requested_paths("torch-bf16-128", choose_paths(cpu(HASWELL)))
    assert (short.corpus, short.run) == ("torch-bf16-128", "torch-bf16")
    onnx = requested_paths("onnx-fp32", amx)
    assert (onnx.corpus, onnx.run) == ("onnx-fp32", "onnx-fp32")


def test_every_path_name_has_a_spec_and_every_backend_is_a_path_or_alias() -> None:
    names: tuple[PathName, ...] = get_args(PathName)
    assert set(names) == set(PATHS)
    assert all(PATHS[n].name == n for n in names)
    assert set(get_args(EmbeddingBackend)) == {*names, "auto", "torch"}
    assert [n for n in names if not PATHS[n].exact] == ["onnx-int8"]


def test_a_corpus_made_before_paths_reads_as_its_original_path() -> None:
    model = "sentence-transformers/all-MiniLM-L6-v2"
    assert stored_path(None, model + "#onnx-int8") == "onnx-int8"
    assert stored_path(None, model) == "torch-fp32"
    assert stored_path("", model) == "torch-fp32"
    assert stored_path("torch-bf16-128", model) == "torch-bf16-128"
    assert stored_path(None, None) is None  # nothing embedded yet
    assert stored_path(None, "") is None


def test_cpuinfo_is_parsed_for_model_and_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (
        "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n"
        "flags\t\t: fpu avx2 AVX512_BF16 amx_bf16\n\nprocessor\t: 1\n"
        "model name\t: other\nflags\t\t: fpu\n"
    )
    assert parse_cpuinfo(text) == (
        "Intel(R) Xeon(R) Platinum 8480+",
        frozenset({"fpu", "avx2", "avx512_bf16", "amx_bf16"}),
    )
    assert parse_cpuinfo("Features\t: fp asimd bf16\n") == ("", frozenset({"fp", "asimd", "bf16"}))
    info = tmp_path / "cpuinfo"
    info.write_text(text, encoding="utf-8")
    monkeypatch.setattr(embedding_paths, "_cuda", lambda: (False, None, False))
    monkeypatch.delenv("DEEPCRITICAL_CPU_FLAGS", raising=False)
    found = detect_capabilities(info)
    assert found.cpu_bf16
    assert not found.cuda
    assert "flags avx2 amx_bf16 avx512_bf16" in found.describe()
    monkeypatch.setenv("DEEPCRITICAL_CPU_FLAGS", "avx2 fma")  # another machine's flags
    assert not detect_capabilities(info).cpu_bf16
    assert detect_capabilities(tmp_path / "missing").cpu_flags == frozenset({"avx2", "fma"})


def test_torch_is_not_imported_to_look_for_cuda_without_an_nvidia_device() -> None:
    assert embedding_paths._nvidia_present(()) is False
    assert embedding_paths._nvidia_present(("/nonexistent/nvidia0",)) is False
