"""Writing parsed documents: text first, vectors after.

Each document is written in its own transaction as soon as it is parsed, with its chunks, FTS
rows and the vectors that exist without running the model (stored vectors of identical texts,
or vectors an executor computed next to the parser): it is keyword-searchable at once. The
chunks still without a vector are embedded afterwards by `embed_pending`, a batch per
transaction, also on a later run when this one was stopped: a crash at any point leaves whole
documents, and what lacks vectors is embedded by the next `kb add`, `kb sync` or `kb reindex`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from kb_search.errors import EndpointError
from kb_search.ingest.executor import VectorSource
from kb_search.ingest.speeds import remember_embed
from kb_search.parsed import ParsedDocument
from kb_search.progress import NoProgress, Progress
from kb_search.store.db import Connection, DatabaseError, explain
from kb_search.store.documents import (
    DocumentRecord,
    write_document,
)


def embed_pending(
    conn: Connection, vectors: VectorSource | None, progress: Progress, summary: Any
) -> None:
    """The embedding phase: every chunk without a vector of the writing model gets one,
    saved as the model hands them over (also chunks an earlier, interrupted run left), counted
    into `summary.embedded` as they are (an interrupted run's summary says how many). Its
    speed is remembered for the next run's estimate (`ingest/speeds.py`)."""
    if vectors is None or vectors.pending(conn) == 0:
        return

    def embedded(n: int) -> None:  # n < 0: chunks counted of a part not saved after all
        summary.embedded += n
        progress.embedded(n)

    progress.current("embedding")
    try:
        vectors.fill(conn, limit=0)  # loads the model: not part of the embedding speed
        started = time.monotonic()
        done = vectors.fill(conn, progress.embedding, embedded)
        remember_embed(conn, getattr(vectors, "model", None), done, time.monotonic() - started)
    except EndpointError as exc:
        raise EndpointError(
            f"{exc} (every document is written and keyword-searchable; run the same command"
            " again to embed the rest)"
        ) from exc
    finally:
        progress.current("")


ALONGSIDE_BATCH = 32  # chunks per transaction embedded while files are being parsed
# A file in hand this long is a long one: a batch embedded meanwhile delays no parse (until
# one batch was timed; then that batch's time). The model loads only for a file this long.
LONG_PARSE_S = 2.0


def spare_core() -> bool:
    """Whether a core is idle besides the parser's: else embedding alongside only takes CPU
    from the parse (on two busy cores, two alternated runs: keyword phase +45% and -5%)."""
    try:
        return os.getloadavg()[0] + 1 < (os.cpu_count() or 1)
    except OSError:
        return False


class EmbedAlongside:
    """While a worker process parses a long file and no parsed document waits to be written,
    the writer would only wait: it embeds one batch of the chunks already written instead (a
    transaction, as the embedding phase does), then looks again. A document that arrives
    meanwhile waits at most one batch; files parsed faster than a batch embeds (Markdown) are
    never held up. The first batch is a measurement (its chunks and seconds go to progress,
    `embed_sample`: the ETA's embedding speed before the embedding phase); the next ones run
    only while the machine has a core to spare."""

    def __init__(self, conn: Connection, vectors: VectorSource | None, progress: Progress):
        self.conn, self.vectors, self.progress = conn, vectors, progress
        self.embedded = 0
        self.batch_s: float | None = None  # the last batch's seconds

    def __call__(self, parsing: float) -> bool:
        """The file in hand has been parsed for `parsing` seconds: embed a batch if that is
        long enough. True if it did some work."""
        if self.vectors is None or parsing < max(LONG_PARSE_S, self.batch_s or 0.0):
            return False
        if self.batch_s is not None and not spare_core():
            return False
        if self.vectors.pending(self.conn) < ALONGSIDE_BATCH:
            return False
        if self.batch_s is None:
            self.vectors.fill(self.conn, limit=0)  # loads the model: not a batch's time
        started = time.monotonic()
        n = self.vectors.fill(self.conn, limit=ALONGSIDE_BATCH)
        self.batch_s = time.monotonic() - started
        if n:
            self.embedded += n
            self.progress.embed_sample(n, self.batch_s)
        return n > 0


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
        pages: int = 0,
    ) -> bool:
        """Write a document now; `tags`/`doc_type` replace the writer's for this one; its
        `work` (`pages` of it PDF pages) and chunks go to the writer's progress. False when
        it could not be stored."""
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
        self.progress.advance(0, work=work, chunks=len(parsed.chunks), pages=pages)
        if done:
            done(parsed)
        return True

