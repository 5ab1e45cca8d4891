"""The executor seam without a cluster: the local pool stays the default, and the writer's
vector source under Ray takes stored vectors first, then the ones the actors computed, and
embeds locally only what is still missing."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kb_search.config import load_config
from kb_search.embedding.provision import ModelInfo
from kb_search.executor_choice import ExecutorChoice
from kb_search.ingest.executor import AddOptions, LocalExecutor
from kb_search.ingest.ray_executor import RayExecutor, ShippedModel, embed_new
from kb_search.parsed import ParsedChunk, ParsedDocument
from kb_search.store.documents import DocumentRecord, content_hash, embedding_text, write_document
from kb_search.store.vectors import to_blob
from kb_search.vectors.binding import bind
from kb_search.vectors.writer import ChunkEmbedder
from kb_testing import HashEmbedder


class CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        self.embedded: list[str] = []

    def embed_passages(self, texts):
        self.embedded += list(texts)
        return super().embed_passages(texts)


def doc(*texts: str, title: str = "T") -> ParsedDocument:
    return ParsedDocument(title=title, doc_type="text", chunks=[ParsedChunk(text=t) for t in texts])


def test_executor_comes_from_config_flags_and_environment(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "KB_EXECUTOR": "ray", "KB_RAY_ADDRESS": "ray://head:10001"}
    config = load_config(env=env, cwd=tmp_path)
    assert config["ingestion.executor"] == "ray"
    assert config["ingestion.ray_address"] == "ray://head:10001"
    config = load_config(env={"HOME": str(tmp_path)}, cwd=tmp_path)
    assert config["ingestion.executor"] == "local" and config["ingestion.ray_address"] is None
    local = ChunkEmbedder(HashEmbedder(), "vec_test")
    assert LocalExecutor(AddOptions()).vectors(local) is local  # the writer embeds, as before


def test_remote_vectors_reuse_stored_then_computed_then_the_local_model_fills(conn) -> None:
    hasher = HashEmbedder()
    table = bind(conn, hasher).name
    stored = doc("alpha text stored before", title="Old")
    write_document(
        conn,
        DocumentRecord("/old.txt", "old.txt", "h-old"),
        stored,
        vectors={table: [to_blob(v) for v in hasher.embed_passages(["sentinel"])]},
    )
    info = ModelInfo(hasher.name, Path("/nowhere"), hasher.dim, hasher.max_tokens, "mean", True)
    options = AddOptions(executor=ExecutorChoice("ray"))
    executor = RayExecutor(conn, options, lambda: ShippedModel(info))
    executor.shipped = ShippedModel(info)
    local_embedder = CountingEmbedder()
    source = executor.vectors(ChunkEmbedder(local_embedder, table))

    reused = ParsedDocument(title="Old", doc_type="text", chunks=stored.chunks)
    computed_text = embedding_text("New", ParsedChunk(text="beta computed on a worker"))
    remote = np.full(hasher.dim, 0.5, dtype=np.float32)
    executor.computed[content_hash(computed_text)] = to_blob(remote)
    fresh = doc("beta computed on a worker", title="New")
    missing = doc("gamma nobody embedded", title="Lost")

    got = source.stored_for(conn, [reused, fresh, missing])

    sentinel = to_blob(hasher.embed_passages(["sentinel"])[0])
    assert got[0] == {table: [sentinel]}  # the stored vector, not a new one
    assert got[1] == {table: [to_blob(remote)]}  # the actor's vector
    assert got[2] == {table: [None]} and local_embedder.embedded == []  # written without
    assert executor.computed == {}  # handed over: not kept for the rest of the run
    for n, (parsed, vectors) in enumerate(zip([reused, fresh, missing], got)):
        write_document(conn, DocumentRecord(f"/{n}.txt", f"{n}.txt", f"h{n}"), parsed, (), None,
                       vectors)  # fmt: skip
    assert source.pending(conn) == 1
    assert source.fill(conn) == 1  # the embedding phase: the local model, after the text
    assert local_embedder.embedded == [embedding_text("Lost", missing.chunks[0])]
    assert source.pending(conn) == 0


def test_worker_embeds_only_texts_without_a_stored_vector() -> None:
    document = doc("one", "two", "one")
    known = {content_hash(embedding_text("T", document.chunks[0]))}
    embedder = CountingEmbedder()
    vectors = embed_new(embedder, document, known)
    two = embedding_text("T", document.chunks[1])
    assert embedder.embedded == [two]
    assert vectors == {content_hash(two): to_blob(HashEmbedder().embed_passages([two])[0])}


def test_ray_executor_without_ray_is_a_one_line_error(kb, sample, monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    result = kb("add", str(sample), "--executor", "ray", ok=False)
    assert result.exit_code == 1
    assert "pip install 'kb-search[ray]'" in result.stderr
    assert "Traceback" not in result.stderr
