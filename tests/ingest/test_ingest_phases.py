"""Text first, vectors after: every document of a run is written (keyword-searchable) before
the first chunk is embedded; chunks left without vectors are embedded by the next add or sync
even when no file changed; search says how much of the index the vector leg covers."""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

import jsonschema

from kb_search.config import load_config
from kb_search.knowledge_base import KnowledgeBase
from kb_testing import HashEmbedder

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample"


class WatchingEmbedder(HashEmbedder):
    """Records, at each call, how many documents the DB already holds."""

    def __init__(self) -> None:
        self.kb: KnowledgeBase | None = None
        self.documents_at_call: list[int] = []

    def embed_passages(self, texts):
        conn = self.kb.reader()
        self.documents_at_call.append(conn.execute("SELECT count(*) FROM documents").fetchone()[0])
        return super().embed_passages(texts)


def make_kb(tmp_path: Path, embedder=None) -> KnowledgeBase:
    config = load_config(env={"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"})
    return KnowledgeBase(config, embedder=embedder or HashEmbedder(), cwd=tmp_path)


def drop_vectors(kb: KnowledgeBase, count: int) -> None:
    conn = kb.writer()
    table = conn.execute("SELECT table_name FROM vector_tables").fetchone()[0]
    conn.execute(
        f"DELETE FROM {table} WHERE rowid IN (SELECT id FROM chunks ORDER BY id DESC LIMIT ?)",
        (count,),
    )


def test_every_document_is_written_before_the_first_chunk_is_embedded(tmp_path):
    shutil.copytree(SAMPLE, tmp_path / "notes")
    embedder = WatchingEmbedder()
    with make_kb(tmp_path, embedder) as kb:
        embedder.kb = kb
        summary = kb.add([tmp_path / "notes"])
        assert summary.added == 9 and summary.embedded == summary.chunks > 0
        assert embedder.documents_at_call and set(embedder.documents_at_call) == {9}
        assert 0 < summary.keyword_seconds <= summary.seconds


def test_add_and_sync_embed_chunks_left_without_vectors_when_no_file_changed(tmp_path):
    shutil.copytree(SAMPLE, tmp_path / "notes")
    with make_kb(tmp_path) as kb:
        kb.add([tmp_path / "notes"])
        drop_vectors(kb, 3)  # what a run killed in its embedding phase leaves
        again = kb.add([tmp_path / "notes"])
        assert (again.added, again.skipped, again.embedded) == (0, 9, 3)
        drop_vectors(kb, 2)
        synced = kb.sync()
        assert (synced.changed, synced.embedded) == (0, 2)
        assert synced.to_dict()["embedded"] == 2
        assert kb.sync().embedded == 0


def test_search_says_how_much_of_the_index_the_vector_leg_covers(tmp_path):
    shutil.copytree(SAMPLE, tmp_path / "notes")
    schema = json.loads(
        resources.files("kb_search.schemas").joinpath("search_response.schema.json").read_text()
    )
    with make_kb(tmp_path) as kb:
        kb.add([tmp_path / "notes"])
        total = kb.reads.stats()["chunks"]
        full = kb.search("install git from source", kb.search_options()).to_dict()
        assert "embedding" not in full  # said only while part of the index lacks vectors
        assert not any(n.startswith("vector leg") for n in full["notes"])
        drop_vectors(kb, 4)
        partial = kb.search("install git from source", kb.search_options()).to_dict()
        jsonschema.validate(partial, schema)
        assert partial["embedding"] == {"chunks": total, "embedded": total - 4}
        assert f"vector leg: {total - 4:,} of {total:,} chunks embedded" in partial["notes"][-1]
        lexical = kb.search("install git", kb.search_options(mode="lexical")).to_dict()
        assert "embedding" not in lexical


class CountingSource:
    """A VectorSource over `pending` chunks that gives `limit` of them a vector per fill."""

    def __init__(self, pending: int) -> None:
        self.waiting = pending
        self.fills: list[int | None] = []

    def pending(self, conn) -> int:
        return self.waiting

    def fill(self, conn, on_more=None, on_embedded=None, limit=None) -> int:
        self.fills.append(limit)
        n = min(self.waiting, self.waiting if limit is None else limit)
        self.waiting -= n
        return n


def test_embedding_alongside_runs_only_while_a_long_file_is_parsed(monkeypatch):
    """While a worker parses, the writer embeds one batch at a time: not while the file in
    hand is short (Markdown: every document is written first), batches while it is long (a
    PDF) and a core is spare, each batch's speed reported to progress; never fewer chunks
    than a batch. Without a spare core only the first batch runs (the speed measurement)."""
    from kb_search.ingest import batch_writer
    from kb_search.ingest.batch_writer import ALONGSIDE_BATCH, LONG_PARSE_S, EmbedAlongside
    from kb_search.progress import Tally

    monkeypatch.setattr(batch_writer, "spare_core", lambda: False)
    busy = CountingSource(pending=3 * ALONGSIDE_BATCH)
    alone = EmbedAlongside(None, busy, Tally())
    assert alone(LONG_PARSE_S) is True and alone(LONG_PARSE_S + 9) is False
    assert busy.waiting == 2 * ALONGSIDE_BATCH
    monkeypatch.setattr(batch_writer, "spare_core", lambda: True)

    source, tally = CountingSource(pending=3 * ALONGSIDE_BATCH + 5), Tally()
    alongside = EmbedAlongside(None, source, tally)
    assert alongside(0.05) is False and source.fills == []  # a short file: nothing
    assert alongside(LONG_PARSE_S) is True
    assert source.fills == [0, ALONGSIDE_BATCH]  # the model loads outside the timed batch
    assert tally.sampled == ALONGSIDE_BATCH and alongside.batch_s is not None
    while alongside(LONG_PARSE_S + 1):
        pass
    assert alongside.embedded == tally.sampled == 3 * ALONGSIDE_BATCH
    assert source.waiting == 5  # fewer than a batch: left to the embedding phase
    assert EmbedAlongside(None, None, tally)(99.0) is False  # no model
