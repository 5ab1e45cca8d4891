"""`kb add`: walk, skip what is unchanged, parse, write one document per transaction."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

from kb_search.ingest.walk import IGNORE_FILE, Found, IgnoreRules, WalkError, rel_path_for, walk
from kb_search.ingest.workers import Outcome, ParseJob, ParserPool, make_counter, parse_one
from kb_search.models import ChunkSettings, IngestError, ParsedDocument
from kb_search.store.db import Connection, DatabaseError, set_meta, transaction
from kb_search.store.documents import DocumentRecord, content_hash, touch_document, write_document

ERROR_LOG = "ingest-errors.log"


@dataclass
class AddOptions:
    settings: ChunkSettings = field(default_factory=ChunkSettings)
    tags: list[str] = field(default_factory=list)
    doc_type: str | None = None
    max_file_bytes: int = 20_000_000
    follow_symlinks: bool = False
    ocr: str = "auto"
    tokenizer_path: str | None = None  # the model's tokenizer.json: exact chunk sizes
    workers: int = 1  # parser processes; 0 parses in this process
    timeout_s: float = 120.0  # per file
    memory_mb: int = 4096  # per parser process; 0 = no cap


@dataclass
class Failure:
    path: str
    reason: str


@dataclass
class AddSummary:
    added: int = 0  # new documents
    updated: int = 0  # changed documents re-ingested
    skipped: int = 0  # unchanged, already indexed
    unsupported: int = 0  # files of a type kb does not read, found while walking
    empty: int = 0  # files with nothing to index
    failed: list[Failure] = field(default_factory=list)
    chunks: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)  # said once per run, e.g. the PDF path

    def line(self) -> str:
        text = (
            f"Added {self.added + self.updated} documents. {len(self.failed)} failed. "
            f"{self.skipped} skipped (already indexed)."
        )
        if self.empty:
            text += f" {self.empty} empty files ignored."
        if self.unsupported:
            text += f" {self.unsupported} files of unsupported types ignored."
        return text

    def to_dict(self) -> dict:
        return {
            "added": self.added,
            "updated": self.updated,
            "skipped": self.skipped,
            "unsupported": self.unsupported,
            "empty": self.empty,
            "failed": [f.__dict__ for f in self.failed],
            "chunks": self.chunks,
            "seconds": round(self.seconds, 3),
            "notes": self.notes,
        }


class ErrorLog:
    """Appends one tab-separated line per failure to <data_dir>/ingest-errors.log."""

    def __init__(self, path: Path | None):
        self.path = path

    def write(self, failure: Failure) -> None:
        if self.path is None:
            return
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        reason = " ".join(failure.reason.split())
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(f"{stamp}\t{failure.path}\t{reason}\n")


class VectorSource(Protocol):
    """Computes the vectors of a batch of parsed documents (see vectors.ChunkEmbedder)."""

    batch_chunks: int

    def vectors_for(
        self, conn: Connection, docs: list[ParsedDocument]
    ) -> list[dict[str, list[bytes | None]]]: ...


@dataclass
class Pending:
    record: DocumentRecord
    parsed: ParsedDocument
    done: Callable[[ParsedDocument], None] | None = None


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
    ):
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
    ) -> None:
        self.pending.append(Pending(record, parsed, done))
        if self.vectors is None or (
            sum(len(p.parsed.chunks) for p in self.pending) >= self.vectors.batch_chunks
        ):
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        batch, self.pending = self.pending, []
        if self.vectors is not None:
            vectors = self.vectors.vectors_for(self.conn, [p.parsed for p in batch])
        else:
            vectors = [None] * len(batch)
        for item, vecs in zip(batch, vectors):
            try:
                write_document(self.conn, item.record, item.parsed, self.tags, self.doc_type, vecs)
            except (DatabaseError, ValueError, UnicodeError) as exc:
                # The document's transaction rolled back; the batch goes on without it.
                if self.on_error is None:
                    raise
                self.on_error(item.record, f"cannot store: {type(exc).__name__}: {exc}")
                continue
            if item.done:
                item.done(item.parsed)


def remember_roots(conn: Connection, paths: Iterable[Path]) -> None:
    with transaction(conn):
        set_meta(conn, "chunker_version", str(CHUNKER_VERSION))
        for path in paths:
            conn.execute(
                "INSERT OR IGNORE INTO roots(path, added_at) VALUES (?, ?)",
                (str(Path(path).expanduser().resolve()), time.time()),
            )


def load_roots(conn: Connection) -> list[Path]:
    return [Path(r[0]) for r in conn.execute("SELECT path FROM roots ORDER BY path")]


def deepest_root(path: Path, roots: list[Path]) -> Path | None:
    inside = [r for r in roots if r == path or r in path.parents]
    return max(inside, key=lambda r: len(r.parts), default=None)


def candidates(
    paths: list[Path], options: AddOptions, roots: list[Path] | None = None
) -> tuple[list[Found], list[Failure], int]:
    """Files to ingest, walk failures, and how many walked files were of unknown types.

    A file named on its own keeps the citation path of the added folder it lies in.
    """
    from kb_search.ingest import detect_type

    found: list[Found] = []
    failures: list[Failure] = []
    unsupported = 0
    explicit = {Path(p).expanduser().resolve() for p in paths if Path(p).is_file()}
    for item in walk(paths, follow_symlinks=options.follow_symlinks):
        if isinstance(item, WalkError):
            failures.append(Failure(str(item.path), item.reason))
        elif item.path in explicit or detect_type(item.path) is not None:
            if item.path in explicit and roots:
                item.root = deepest_root(item.path, roots) or item.root
                # `kb sync` would drop it again: say so now instead.
                if item.root != item.path.parent and IgnoreRules(item.root).ignored_path(item.path):
                    failures.append(
                        Failure(str(item.path), f"ignored by {IGNORE_FILE} in {item.root}")
                    )
                    continue
            found.append(item)
        else:
            unsupported += 1
    return found, failures, unsupported


def add_paths(
    conn: Connection,
    paths: list[Path],
    options: AddOptions,
    error_log: ErrorLog | None = None,
    vectors: VectorSource | None = None,
    on_start: Callable[[int], None] | None = None,
    on_file: Callable[[Path], None] | None = None,
) -> AddSummary:
    """Ingest files and directories. Each file commits on its own, so a rerun resumes."""
    started = time.perf_counter()
    summary = AddSummary()
    remember_roots(conn, [p for p in paths if Path(p).expanduser().is_dir()])
    found, failures, summary.unsupported = candidates(paths, options, load_roots(conn))
    log = error_log or ErrorLog(None)
    for failure in failures:
        summary.failed.append(failure)
        log.write(failure)
    summary.notes += parser_notes(found)
    if on_start:
        on_start(len(found))
    ingest_files(conn, found, options, summary, log, vectors, on_file)
    summary.seconds = time.perf_counter() - started
    return summary


def parser_notes(found: list[Found]) -> list[str]:
    """One line when PDFs will take the default path because Docling cannot be used."""
    if not any(item.path.suffix.lower() == ".pdf" for item in found):
        return []
    from kb_search.ingest.formats.docling import docling_pdf_unavailable

    reason = docling_pdf_unavailable()
    if reason is None:
        return []
    return [f"PDFs use the pypdfium2 text layer ({reason})"]


@dataclass
class Candidate:
    """A file that changed (or is new) and must be parsed."""

    item: Found
    record: DocumentRecord
    existed: bool


def ingest_files(
    conn: Connection,
    found: list[Found],
    options: AddOptions,
    summary: AddSummary,
    log: ErrorLog,
    vectors: VectorSource | None = None,
    on_file: Callable[[Path], None] | None = None,
) -> None:
    """Check, parse (in workers) and write files; counts go into `summary`."""
    writer = BatchWriter(
        conn,
        vectors,
        options.tags,
        options.doc_type,
        on_error=lambda record, reason: fail(Path(record.path), reason),
    )

    def tick(path: Path) -> None:
        if on_file:
            on_file(path)

    def fail(path: Path, reason: str) -> None:
        failure = Failure(str(path), reason)
        summary.failed.append(failure)
        log.write(failure)
        tick(path)

    todo: dict[int, Candidate] = {}
    for item in found:
        try:
            candidate = check_file(conn, item, options)
        except IngestError as exc:
            fail(item.path, str(exc) or type(exc).__name__)
            continue
        if candidate is None:
            summary.skipped += 1
            tick(item.path)
        else:
            todo[len(todo)] = candidate

    for outcome in parse_outcomes(todo, options):
        candidate = todo.pop(outcome.key)
        path = candidate.item.path
        if outcome.status == "empty":
            summary.empty += 1
            tick(path)
            continue
        if outcome.status == "error":
            fail(path, outcome.reason)
            continue

        def done(parsed: ParsedDocument, existed: bool = candidate.existed, path=path) -> None:
            if existed:
                summary.updated += 1
            else:
                summary.added += 1
            summary.chunks += len(parsed.chunks)
            tick(path)

        writer.add(candidate.record, outcome.document, done)
    writer.flush()


def parse_outcomes(todo: dict[int, Candidate], options: AddOptions) -> Iterator[Outcome]:
    """Parse in worker processes (time limit, memory cap), or in-process with workers=0."""
    job = ParseJob(
        settings=options.settings,
        max_bytes=options.max_file_bytes,
        ocr=options.ocr,
        tokenizer_path=options.tokenizer_path,
        memory_mb=options.memory_mb,
    )
    items = [(key, c.item.path) for key, c in todo.items()]
    if not items:
        return
    if options.workers <= 0:
        count = make_counter(job.tokenizer_path)
        for key, path in items:
            outcome = parse_one(path, job, count)
            outcome.key = key
            yield outcome
        return
    with ParserPool(
        job, workers=min(options.workers, len(items)), timeout_s=options.timeout_s
    ) as pool:
        yield from pool.parse(items)


CHUNKER_VERSION = 2  # bump when an ingester changes how it splits documents


def chunking_fingerprint(options: AddOptions) -> str:
    counter = "model" if options.tokenizer_path else "heuristic"
    s = options.settings
    return f"v{CHUNKER_VERSION}:{s.max_tokens}:{s.min_tokens}:{counter}"


def check_file(conn: Connection, item: Found, options: AddOptions) -> Candidate | None:
    """None when the file is unchanged; else what to parse. Raises IngestError."""
    path = item.path
    try:
        stat = path.stat()
    except OSError as exc:
        raise IngestError(f"cannot stat file: {exc.strerror or exc}") from exc
    key = str(path)
    row = conn.execute(
        "SELECT id, content_hash, size, mtime, chunking FROM documents WHERE path = ?", (key,)
    ).fetchone()
    chunking = chunking_fingerprint(options)
    same_chunking = row is not None and row[4] == chunking
    if same_chunking and row[2] == stat.st_size and row[3] == stat.st_mtime:
        return None
    if stat.st_size > options.max_file_bytes:
        cap = options.max_file_bytes / 1e6
        raise IngestError(f"file too large: {stat.st_size / 1e6:.1f} MB > cap {cap:.0f} MB")
    try:
        digest = content_hash(path.read_bytes())
    except OSError as exc:
        raise IngestError(f"cannot read file: {exc.strerror or exc}") from exc
    if same_chunking and row[1] == digest:
        touch_document(conn, row[0], stat.st_size, stat.st_mtime)
        return None
    record = DocumentRecord(
        path=key,
        rel_path=rel_path_for(path, item.root),
        content_hash=digest,
        size=stat.st_size,
        mtime=stat.st_mtime,
        chunking=chunking,
    )
    return Candidate(item, record, row is not None)
