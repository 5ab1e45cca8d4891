"""Vectors for chunks: reuse stored vectors of identical texts (the content hash of what the
model sees decides), embed what is missing.

An ingest writes a document's text first (keyword-searchable at once) with only the vectors
it can reuse; `ChunkEmbedder.fill` embeds the chunks still without one afterwards, saving what
the model hands over every few seconds, so a crash at any point leaves text that a later run
embeds and loses at most those seconds of vectors. `kb reindex` uses the same `embed_chunks`.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

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
# Their vectors are saved in smaller parts as they come (`SAVE_CHUNKS`, `SAVE_S`).
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
    """Give these chunks their vectors: identical texts embedded once, stored vectors of
    identical texts reused. The model runs outside the lock, and what it has embedded is saved
    as it goes, a transaction each `SAVE_CHUNKS` chunks or `SAVE_S` seconds, whichever first,
    at most every `SAVE_GAP_S` (an embedder that cannot hand over part of its work saves all
    of it at the end); only
    chunks whose text is still what was embedded are written (a re-ingest in between may have
    reused their ids). Returns how many chunks got a vector."""
    batch = embedding_texts(conn, ids)
    if not batch:
        return 0
    counted = _Counted(on_embedded)
    try:
        return _embed_batch(conn, embedder, table, batch, counted)
    except BaseException:
        # Stopped (Ctrl-C, an error) before the last part's transaction committed: its
        # vectors are not kept, so the chunks it counted as embedded are taken back.
        counted.take_back()
        raise


# What a stop (Ctrl-C, kill -9, a crash) while embedding loses at most: the vectors embedded
# since the last commit, held for at most `SAVE_S` seconds, and on a CPU (a batch of 16 takes
# ~1 s) at most `SAVE_CHUNKS` chunks. A model that embeds 64 chunks in less than
# `SAVE_GAP_S` (a GPU) saves at most that often, so commits never cost it more than a few
# milliseconds a second. The model still sorts `FILL_BATCH` chunks by length at a time, so
# batches pad no more than before.
SAVE_CHUNKS = 64
SAVE_S = 2.0
SAVE_GAP_S = 0.5


def _embed_batch(
    conn: Connection,
    embedder: TextEmbedder,
    table: str,
    batch: list[tuple[int, str]],
    counted: _Counted,
) -> int:
    hashes = {text: content_hash(text) for _, text in batch}
    known = vectors_by_hash(conn, table, sorted(set(hashes.values())))
    ids_of: dict[str, list[int]] = {}
    for cid, text in batch:
        ids_of.setdefault(text, []).append(cid)
    saver = _Saver(conn, table, hashes, counted)
    reused = [(cid, text, known[hashes[text]]) for cid, text in batch if hashes[text] in known]
    saver.hold(reused, len(reused))
    todo = sorted(text for text in ids_of if hashes[text] not in known)
    for texts, vectors, reported in _embedded(embedder, todo, counted):
        rows = [(cid, text, to_blob(v)) for text, v in zip(texts, vectors) for cid in ids_of[text]]
        saver.hold(rows, len(rows) - reported)
        if saver.due():
            saver.save()
    saver.save()
    return saver.written


class _Saver:
    """Vectors embedded and not yet saved, and when to save them (`SAVE_CHUNKS`, `SAVE_S`,
    `SAVE_GAP_S`)."""

    def __init__(
        self, conn: Connection, table: str, hashes: dict[str, str], counted: _Counted
    ) -> None:
        self.conn, self.table, self.hashes, self.counted = conn, table, hashes, counted
        self.rows: list[tuple[int, str, bytes]] = []
        self.written = 0
        self.since = time.monotonic()

    def hold(self, rows: list[tuple[int, str, bytes]], report: int) -> None:
        """These chunks have their vectors now (`report` of them not counted yet)."""
        self.rows += rows
        self.counted.report(report)

    def due(self) -> bool:
        held = time.monotonic() - self.since
        return held >= SAVE_S or (len(self.rows) >= SAVE_CHUNKS and held >= SAVE_GAP_S)

    def save(self) -> None:
        rows, self.rows = self.rows, []
        self.since = time.monotonic()
        if rows:
            with transaction(self.conn):
                current = dict(embedding_texts(self.conn, [cid for cid, _, _ in rows]))
                rows = [row for row in rows if current.get(row[0]) == row[1]]
                replace_vectors(self.conn, self.table, [(cid, blob) for cid, _, blob in rows])
                # keep the hash in step with what was embedded (title/heading may have moved)
                set_chunk_hashes(self.conn, [(self.hashes[text], cid) for cid, text, _ in rows])
            self.written += len(rows)
        self.counted.saved()


@dataclass
class _Counted:
    """A batch's progress callback, how much of the batch it has reported, and how much of
    that is saved."""

    callback: Callable[[int], None] | None
    reported: int = 0
    kept: int = 0

    def report(self, n: int) -> None:
        if self.callback is not None and n:
            self.reported += n
            self.callback(n)

    def saved(self) -> None:
        self.kept = self.reported

    def take_back(self) -> None:
        if self.callback is not None and self.reported > self.kept:
            self.callback(self.kept - self.reported)
            self.reported = self.kept


def _embedded(
    embedder: TextEmbedder, texts: list[str], counted: _Counted
) -> Iterator[tuple[list[str], Any, int]]:
    """`texts`' vectors as the embedder hands them over: (texts, their vectors, how many of
    them its progress reported already). The local model gives them a batch at a time
    (`passage_batches`); another embedder all at once."""
    if not texts:
        return
    batches = getattr(embedder, "passage_batches", None)
    if batches is not None:
        for idx, vectors in batches(texts):
            yield [texts[i] for i in idx], vectors, 0
        return
    yield texts, _embed(embedder, texts, counted.report if counted.callback else None), len(texts)


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
        `limit` of them), saved as they come (a crash loses at most `SAVE_CHUNKS` chunks or
        `SAVE_S` seconds of vectors, and the batch in hand); chunks written
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


def _embed(
    embedder: TextEmbedder, texts: list[str], on_embedded: Callable[[int], None] | None
) -> Any:
    if on_embedded is not None and _takes_progress(embedder):
        return embedder.embed_passages(texts, progress=on_embedded)
    vectors = embedder.embed_passages(texts)
    if on_embedded is not None:
        on_embedded(len(texts))
    return vectors


def _takes_progress(embedder: TextEmbedder) -> bool:
    try:
        return "progress" in inspect.signature(embedder.embed_passages).parameters
    except (TypeError, ValueError):
        return False
