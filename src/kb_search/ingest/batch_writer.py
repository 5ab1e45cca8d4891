"""Writing parsed documents: text first, vectors after.

Each document is written in its own transaction as soon as it is parsed, with its chunks, FTS
rows and the vectors that exist without running the model (stored vectors of identical texts,
or vectors an executor computed next to the parser): it is keyword-searchable at once. The
chunks still without a vector are embedded afterwards by `embed_pending`, a batch per
transaction, also on a later run when this one was stopped: a crash at any point leaves whole
documents, and what lacks vectors is embedded by the next `kb add`, `kb sync` or `kb reindex`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from kb_search.errors import EndpointError
from kb_search.ingest.executor import VectorSource
from kb_search.parsed import ParsedDocument
from kb_search.progress import NoProgress, Progress
from kb_search.store.db import Connection, DatabaseError, explain
from kb_search.store.documents import (
    DocumentRecord,
    write_document,
)


def embed_pending(conn: Connection, vectors: VectorSource | None, progress: Progress) -> int:
    """The embedding phase: every chunk without a vector of the writing model gets one, a
    batch per transaction (also chunks an earlier, interrupted run left). Returns how many."""
    if vectors is None or vectors.pending(conn) == 0:
        return 0
    progress.current("embedding")
    try:
        return vectors.fill(conn, progress.embedding, progress.embedded)
    except EndpointError as exc:
        raise EndpointError(
            f"{exc} (every document is written and keyword-searchable; run the same command"
            " again to embed the rest)"
        ) from exc
    finally:
        progress.current("")


CALIBRATE_AFTER_S = 20.0  # a keyword phase this long measures the embedding speed early
CALIBRATION_CHUNKS = 64


class EmbedCalibration:
    """Once a keyword phase has run `CALIBRATE_AFTER_S`, embed one batch of the chunks written
    so far (kept: it is work the embedding phase then need not do) and give progress its rate,
    so that the ETA of a long job measures this machine's embedding speed in its first minute
    instead of assuming one."""

    def __init__(self, conn: Connection, vectors: VectorSource | None, progress: Progress):
        self.conn, self.vectors, self.progress = conn, vectors, progress
        self.started = time.monotonic()
        self.done = vectors is None
        self.embedded = 0

    def maybe(self) -> None:
        if self.done or time.monotonic() - self.started < CALIBRATE_AFTER_S:
            return
        self.done = True
        if self.vectors.pending(self.conn) < CALIBRATION_CHUNKS:
            return
        self.vectors.fill(self.conn, limit=0)  # the model loads outside the timed batch
        t0 = time.monotonic()
        n = self.vectors.fill(self.conn, limit=CALIBRATION_CHUNKS)
        self.embedded += n
        if n:
            self.progress.embed_sample(n, time.monotonic() - t0)


class BatchWriter:
    """Writes each parsed document in its own transaction as it arrives, with the vectors
    that need no model run (`VectorSource.stored_for`); the rest wait for `embed_pending`."""

    def __init__(
        self,
        conn: Connection,
        vectors: VectorSource | None = None,
        tags: Iterable[str] = (),
        doc_type: str | None = None,
        on_error: Callable[[DocumentRecord, str], None] | None = None,
        progress: Progress | None = None,
    ):
        self.progress = progress or NoProgress()
        self.on_error = on_error
        self.conn = conn
        self.vectors = vectors
        self.tags = list(tags)
        self.doc_type = doc_type

    def add(
        self,
        record: DocumentRecord,
        parsed: ParsedDocument,
        done: Callable[[ParsedDocument], None] | None = None,
        tags: list[str] | None = None,
        doc_type: str | None = None,
        work: float = 0.0,
    ) -> bool:
        """Write a document now; `tags`/`doc_type` replace the writer's for this one; its
        `work` and chunks go to the writer's progress. False when it could not be stored."""
        vecs = self.vectors.stored_for(self.conn, [parsed])[0] if self.vectors else {}
        try:
            written = write_document(
                self.conn,
                record,
                parsed,
                self.tags if tags is None else tags,
                doc_type or self.doc_type,
                vecs,
            )
        except (DatabaseError, ValueError, UnicodeError) as exc:
            # The document's transaction rolled back. A full disk, a read-only or damaged
            # file stops the run (every next document would fail the same way); any other
            # error fails this one document and the run goes on.
            stop = explain(exc) if isinstance(exc, DatabaseError) else None
            if stop is not None:
                raise stop from exc
            if self.on_error is None:
                raise
            self.on_error(record, f"cannot store: {type(exc).__name__}: {exc}")
            return False
        if written is None:  # its folder was removed meanwhile: nothing was written
            return True
        if self.vectors is not None:
            have = next(iter(vecs.values()), [])
            self.progress.await_embedding(len(parsed.chunks) - sum(v is not None for v in have))
        self.progress.advance(0, work=work, chunks=len(parsed.chunks))
        if done:
            done(parsed)
        return True

