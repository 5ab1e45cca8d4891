"""Vectors for chunks: reuse stored vectors of identical texts (the content hash of what the
model sees decides), embed what is missing.

An ingest writes a document's text first (keyword-searchable at once) with only the vectors
it can reuse; `ChunkEmbedder.fill` embeds the chunks still without one afterwards, a batch per
transaction, so a crash at any point leaves text that a later run embeds. `kb reindex` uses
the same `embed_chunks`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

from kb_search.embedding import TextEmbedder
from kb_search.parsed import ParsedDocument
from kb_search.store.db import Connection, DatabaseError, transaction
from kb_search.store.documents import content_hash, embedding_text, embedding_texts
from kb_search.store.inventory import set_chunk_hashes
from kb_search.store.vectors import (
    missing_chunk_ids,
    replace_vectors,
    to_blob,
    vectors_by_hash,
)

# Chunks embedded together: the embedder sorts them by length, so a bigger group pads less
# (measured on 2,176 doc and code chunks: 26% padding tokens at 64, 4% at 256 in batches of 16).
FILL_BATCH = 256


def stored_vectors(
    conn: Connection, table: str | None, docs: list[ParsedDocument]
) -> list[dict[str, list[bytes | None]]]:
    """The vectors these documents' chunks can have without running the model: stored ones of
    identical texts (None where there is none)."""
    if table is None:
        return [{} for _ in docs]
    texts = [[embedding_text(d.title, c) for c in d.chunks] for d in docs]
    hashes = [[content_hash(t) for t in doc_texts] for doc_texts in texts]
    try:
        known = vectors_by_hash(conn, table, sorted({h for doc in hashes for h in doc}))
    except DatabaseError:  # sqlite-vec did not load: nothing to reuse, the model embeds
        known = {}
    return [{table: [known.get(h) for h in doc]} for doc in hashes]


def embed_chunks(
    conn: Connection,
    embedder: TextEmbedder,
    table: str,
    ids: list[int],
    on_embedded: Callable[[int], None] | None = None,
) -> int:
    """Give these chunks their vectors in one transaction: identical texts embedded once,
    stored vectors of identical texts reused. The model runs outside the lock; only chunks
    whose text is still what was embedded are written (a re-ingest in between may have reused
    their ids). Returns how many chunks got a vector."""
    batch = embedding_texts(conn, ids)
    if not batch:
        return 0
    counted = _Counted(on_embedded)
    try:
        return _embed_batch(conn, embedder, table, batch, counted)
    except BaseException:
        # Stopped (Ctrl-C, an error) before the batch's transaction committed: none of its
        # vectors is kept, so the chunks it counted as embedded are taken back.
        counted.take_back()
        raise


def _embed_batch(
    conn: Connection,
    embedder: TextEmbedder,
    table: str,
    batch: list[tuple[int, str]],
    counted: _Counted,
) -> int:
    hashes = {text: content_hash(text) for _, text in batch}
    known = vectors_by_hash(conn, table, sorted(set(hashes.values())))
    todo = sorted({text for text, digest in hashes.items() if digest not in known})
    if todo:
        fresh = _embed(embedder, todo, counted.report if counted.callback else None)
        for text, vector in zip(todo, fresh):
            known[hashes[text]] = to_blob(vector)
    counted.report(len(batch) - len(todo))  # the reused ones
    with transaction(conn):
        current = dict(embedding_texts(conn, [cid for cid, _ in batch]))
        rows = [(cid, text) for cid, text in batch if current.get(cid) == text]
        if not rows:
            return 0
        replace_vectors(conn, table, [(cid, known[hashes[text]]) for cid, text in rows])
        # keep the hash in step with what was embedded (title/heading may have moved)
        set_chunk_hashes(conn, [(hashes[text], cid) for cid, text in rows])
    return len(rows)


@dataclass
class _Counted:
    """A batch's progress callback and how much of the batch it has reported."""

    callback: Callable[[int], None] | None
    reported: int = 0

    def report(self, n: int) -> None:
        if self.callback is not None and n:
            self.reported += n
            self.callback(n)

    def take_back(self) -> None:
        if self.callback is not None and self.reported:
            self.callback(-self.reported)
            self.reported = 0


def _embed(
    embedder: TextEmbedder, texts: list[str], on_embedded: Callable[[int], None] | None
) -> list:
    if on_embedded is not None and _takes_progress(embedder):
        return embedder.embed_passages(texts, progress=on_embedded)
    vectors = embedder.embed_passages(texts)
    if on_embedded is not None:
        on_embedded(len(texts))
    return vectors


@dataclass
class ChunkEmbedder:
    """The writing model and its vector table: what an ingest embeds with (its `fill`)."""

    embedder: TextEmbedder
    table: str
    batch_chunks: int = FILL_BATCH

    def stored_for(
        self, conn: Connection, docs: list[ParsedDocument]
    ) -> list[dict[str, list[bytes | None]]]:
        return stored_vectors(conn, self.table, docs)

    def pending(self, conn: Connection) -> int:
        return len(missing_chunk_ids(conn, self.table))

    def fill(
        self,
        conn: Connection,
        on_more: Callable[[int], None] | None = None,
        on_embedded: Callable[[int], None] | None = None,
        limit: int | None = None,
    ) -> int:
        """Embed every chunk of the DB that has no vector in this model's table (the first
        `limit` of them), a batch per transaction (a crash loses one batch); chunks written
        meanwhile are picked up by the next pass (`on_more(n)`: n more chunks to embed).
        Returns how many got a vector."""
        if limit is not None:
            part = missing_chunk_ids(conn, self.table)[:limit]
            return embed_chunks(conn, self.embedder, self.table, part, on_embedded)
        done = 0
        while todo := missing_chunk_ids(conn, self.table):
            if on_more is not None:
                on_more(len(todo))
            written = 0
            for start in range(0, len(todo), self.batch_chunks):
                part = todo[start : start + self.batch_chunks]
                written += embed_chunks(conn, self.embedder, self.table, part, on_embedded)
            done += written
            if not written:
                break  # every chunk changed under us: the next run catches up
        return done


def _takes_progress(embedder: TextEmbedder) -> bool:
    try:
        return "progress" in inspect.signature(embedder.embed_passages).parameters
    except (TypeError, ValueError):
        return False
