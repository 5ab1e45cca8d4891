"""Writing parsed documents in batches: embed the new chunk texts once per batch (the model
loaded on the first chunk to embed), then one transaction per document."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from kb_search.errors import EndpointError
from kb_search.ingest.executor import VectorSource
from kb_search.parsed import ParsedDocument
from kb_search.progress import NoProgress, Progress
from kb_search.store.db import Connection, DatabaseError, explain
from kb_search.store.documents import (
    DocumentRecord,
    write_document,
)
from kb_search.text import plural


@dataclass
class Pending:
    record: DocumentRecord
    parsed: ParsedDocument
    done: Callable[[ParsedDocument], None] | None = None
    tags: list[str] | None = None  # None: the writer's
    doc_type: str | None = None
    work: float = 0.0  # its share of the job's work (progress)


class LazyVectors:
    """A VectorSource made on first use: a run with nothing to embed (a no-op `kb add` or
    `kb sync`, files that failed before) never loads the embedding model."""

    batch_chunks = 256  # ChunkEmbedder's, until the model loads

    def __init__(self, make: Callable[[], VectorSource | None]):
        self._make = make
        self._source: VectorSource | None = None
        self.loaded = False

    @property
    def model_loaded(self) -> bool:
        """Whether a model was actually loaded (not only tried)."""
        return self._source is not None

    def load(self) -> VectorSource | None:
        if not self.loaded:
            self.loaded = True
            self._source = self._make()
            if self._source is not None:
                self.batch_chunks = self._source.batch_chunks
        return self._source

    def vectors_for(
        self,
        conn: Connection,
        docs: list[ParsedDocument],
        on_embedded: Callable[[int], None] | None = None,
    ) -> list[dict[str, list[bytes | None]]]:
        source = self.load()
        if source is None:
            return [{} for _ in docs]
        return source.vectors_for(conn, docs, on_embedded)


class _FlushProgress:
    """Reports a flush as it embeds: its documents' work and chunks in proportion to the
    chunks embedded so far, the rest (reused vectors, no model) once it is written."""

    def __init__(self, progress: Progress, batch: list[Pending]):
        self.progress = progress
        self.work = sum(p.work for p in batch)
        self.chunks = sum(len(p.parsed.chunks) for p in batch)
        self.work_done = 0.0
        self.chunks_done = 0
        biggest = max(batch, key=lambda p: len(p.parsed.chunks))
        others = f" and {plural(len(batch) - 1, 'more file')}" if len(batch) > 1 else ""
        progress.current(f"embedding {Path(biggest.record.path).name}{others}")

    def embedded(self, n: int) -> None:
        n = min(n, self.chunks - self.chunks_done)
        work = self.work * n / self.chunks if self.chunks else 0.0
        self.work_done += work
        self.chunks_done += n
        self.progress.advance(0, work=work, chunks=n)

    def finish(self) -> None:
        self.progress.advance(
            0, work=max(0.0, self.work - self.work_done), chunks=self.chunks - self.chunks_done
        )
        self.progress.current("")


class BatchWriter:
    """Embeds several documents' chunks in one model call, then writes each document in its
    own transaction: batching for throughput, per-document atomicity for crash safety."""

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
        self.pending: list[Pending] = []

    def add(
        self,
        record: DocumentRecord,
        parsed: ParsedDocument,
        done: Callable[[ParsedDocument], None] | None = None,
        tags: list[str] | None = None,
        doc_type: str | None = None,
        work: float = 0.0,
    ) -> None:
        """Queue a document; `tags`/`doc_type` replace the writer's for this one; its `work`
        and chunks are reported to the writer's progress as the batch is embedded."""
        self.pending.append(Pending(record, parsed, done, tags, doc_type, work))
        if self.vectors is None or (
            sum(len(p.parsed.chunks) for p in self.pending) >= self.vectors.batch_chunks
        ):
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        batch, self.pending = self.pending, []
        tracker = _FlushProgress(self.progress, batch)
        if self.vectors is not None:
            docs = [p.parsed for p in batch]
            try:
                vectors = self.vectors.vectors_for(self.conn, docs, tracker.embedded)
            except EndpointError as exc:
                # Nothing of this batch is written; every document before it is, whole.
                raise EndpointError(
                    f"{exc} (documents written before this batch are kept: run the same"
                    " command again to go on)"
                ) from exc
        else:
            vectors = [None] * len(batch)
        for item, vecs in zip(batch, vectors):
            try:
                tags = self.tags if item.tags is None else item.tags
                written = write_document(
                    self.conn, item.record, item.parsed, tags, item.doc_type or self.doc_type, vecs
                )
            except (DatabaseError, ValueError, UnicodeError) as exc:
                # The document's transaction rolled back. A full disk, a read-only or damaged
                # file stops the batch (every next document would fail the same way); any
                # other error fails this one document and the batch goes on.
                stop = explain(exc) if isinstance(exc, DatabaseError) else None
                if stop is not None:
                    raise stop from exc
                if self.on_error is None:
                    raise
                self.on_error(item.record, f"cannot store: {type(exc).__name__}: {exc}")
                continue
            if item.done and written is not None:  # None: its folder was removed meanwhile
                item.done(item.parsed)
        tracker.finish()
