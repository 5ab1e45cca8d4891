"""`kb add`: walk, skip what is unchanged, parse, write one document per transaction."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from kb_search.errors import EndpointError
from kb_search.formats.reader import open_user_file, read_user_file
from kb_search.ingest.executor import AddOptions, Candidate, Executor, LocalExecutor, VectorSource
from kb_search.ingest.walk import IGNORE_FILE, Found, IgnoreRules, WalkError, rel_path_for, walk
from kb_search.ingest.workers import Outcome
from kb_search.parsed import IngestError, ParsedDocument
from kb_search.progress import PDF_PAGE_WORK, NoProgress, Progress
from kb_search.sanitize import log_field, path_text
from kb_search.store.db import Connection, DatabaseError, explain, set_meta, transaction
from kb_search.store.documents import (
    DocumentRecord,
    content_hash,
    delete_document,
    touch_document,
    write_document,
)
from kb_search.store.inventory import document_id_at, document_state
from kb_search.store.roots import add_roots, load_roots
from kb_search.store.skipped import (
    EMPTY,
    FAILED,
    REMOVED,
    RootSettings,
    Skipped,
    forget,
    load_root_settings,
    load_skipped,
    remember_root_settings,
    remember_skipped,
    touch_skipped,
)
from kb_search.text import plural

ERROR_LOG = "ingest-errors.log"


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
    known_failures: int = 0  # failed (or empty) before and unchanged since: not read again
    removed: int = 0  # removed with `kb remove`: left out until added by name
    dropped: int = 0  # documents whose file now has no text, or none kb can read: removed
    chunks: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)  # said once per run
    unsupported_files: list[str] = field(default_factory=list)  # the first few, by path
    model_loaded: bool = False  # whether this run loaded the embedding model

    def line(self, show: Callable[[str], str] = str) -> str:
        """One line for a person; `show` turns a stored path into the one to print."""
        parts = [f"Added {plural(self.added + self.updated, 'document')}"]
        if self.chunks:
            parts[0] += f" ({plural(self.chunks, 'chunk')})"
        parts.append(_failed_part(self.failed, show))
        parts.append(f"{self.skipped} skipped (already indexed)")
        parts += _left_out_parts(self.known_failures, self.removed, "--retry-failed")
        parts += _dropped_parts(self.dropped)
        if self.empty:
            parts.append(f"{plural(self.empty, 'empty file')} ignored")
        if self.unsupported:
            first = self.unsupported_files[0] if self.unsupported_files else ""
            named = f" (first: {show(first)})" if first else ""
            parts.append(f"{plural(self.unsupported, 'file')} of unsupported types ignored{named}")
        return ". ".join(parts) + "."

    def to_dict(self) -> dict:
        return {
            "added": self.added,
            "updated": self.updated,
            "skipped": self.skipped,
            "unsupported": self.unsupported,
            "unsupported_files": self.unsupported_files,
            "empty": self.empty,
            "failed": [f.__dict__ for f in self.failed],
            "known_failures": self.known_failures,
            "removed": self.removed,
            "dropped": self.dropped,
            "chunks": self.chunks,
            "seconds": round(self.seconds, 3),
            "model_loaded": self.model_loaded,
            "notes": self.notes,
        }


UNSUPPORTED_LISTED = 10  # unsupported file names kept for the summary


def _failed_part(failed: list[Failure], show: Callable[[str], str]) -> str:
    if not failed:
        return "0 failed"
    first = failed[0]
    return f"{len(failed)} failed (first: {show(first.path)}: {first.reason})"


def _dropped_parts(dropped: int) -> list[str]:
    if not dropped:
        return []
    return [
        f"{plural(dropped, 'document')} removed from the index: the file is empty now, or"
        " unreadable or unparseable (its old text is no longer searchable)"
    ]


def _left_out_parts(known_failures: int, removed: int, retry_flag: str) -> list[str]:
    parts = []
    if known_failures:
        parts.append(
            f"{plural(known_failures, 'file')} that failed before and did not change skipped"
            f" ({retry_flag} tries again)"
        )
    if removed:
        parts.append(
            f"{plural(removed, 'file')} removed with `kb remove` left out (add by name to index)"
        )
    return parts


class ErrorLog:
    """Appends one tab-separated line per failure to <data_dir>/ingest-errors.log.

    Fields are escaped (one failure is always one line). A log that cannot be written (read-only,
    disk full) never stops the batch: the failures stay in the summary, and `problem` says why
    the log has not got them."""

    def __init__(self, path: Path | None):
        self.path = path
        self.problem: str | None = None

    def write(self, failure: Failure) -> None:
        if self.path is None or self.problem is not None:
            return
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        reason = " ".join(failure.reason.split())
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(f"{stamp}\t{log_field(failure.path)}\t{log_field(reason)}\n")
        except OSError as exc:
            self.problem = f"cannot write {self.path}: {exc.strerror or exc}"


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
                write_document(
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
            if item.done:
                item.done(item.parsed)
        tracker.finish()


def remember_roots(
    conn: Connection,
    paths: Iterable[Path],
    tags: Iterable[str] = (),
    doc_type: str | None = None,
) -> None:
    """Remember the directories added, with the tags and type files under them get."""
    roots = [Path(path).expanduser().resolve() for path in paths]
    with transaction(conn):
        set_meta(conn, "chunker_version", str(CHUNKER_VERSION))
        add_roots(conn, roots)
    remember_root_settings(conn, roots, tags, doc_type)


def root_change(root: Path) -> str | None:
    """Why a remembered root is no longer the folder the user added, or None. Roots are
    stored as real paths, so one that resolves elsewhere now is a symlink, or sits below a
    folder that became one (a `git pull` that replaced `docs/` with `docs -> ../secret`)."""
    real = Path(os.path.realpath(root))
    if real == root:
        return None
    if os.path.islink(root):
        return f"now a symlink to {path_text(real)}"
    return f"a folder above it changed: the path leads to {path_text(real)} now"


def deepest_root(path: Path, roots: Iterable[Path]) -> Path | None:
    inside = [r for r in roots if r == path or r in path.parents]
    return max(inside, key=lambda r: len(r.parts), default=None)


@dataclass
class Candidates:
    """What a walk of the given paths found."""

    found: list[Found] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    unsupported: list[Path] = field(default_factory=list)
    explicit: set[Path] = field(default_factory=set)  # files named on their own


def candidates(
    paths: list[Path], options: AddOptions, roots: list[Path] | None = None
) -> Candidates:
    """Files to ingest, walk failures, and the walked files of unknown types.

    A file named on its own keeps the citation path of the added folder it lies in.
    """
    from kb_search.ingest import detect_type

    result = Candidates()
    result.explicit = {Path(p).expanduser().resolve() for p in paths if Path(p).is_file()}
    for item in walk(paths, follow_symlinks=options.follow_symlinks):
        if isinstance(item, WalkError):
            result.failures.append(Failure(path_text(item.path), item.reason))
        elif item.path in result.explicit or detect_type(item.path) is not None:
            if item.path in result.explicit and roots:
                item.root = deepest_root(item.path, roots) or item.root
                # `kb sync` would drop it again: say so now instead.
                if item.root != item.path.parent and IgnoreRules(item.root).ignored_path(item.path):
                    result.failures.append(
                        Failure(path_text(item.path), f"ignored by {IGNORE_FILE} in {item.root}")
                    )
                    continue
            result.found.append(item)
        else:
            result.unsupported.append(item.path)
    return result


def add_paths(
    conn: Connection,
    paths: list[Path],
    options: AddOptions,
    error_log: ErrorLog | None = None,
    vectors: VectorSource | None = None,
    progress: Progress | None = None,
    executor: Executor | None = None,
) -> AddSummary:
    """Ingest files and directories. Each file commits on its own, so a rerun resumes.
    `executor` parses (and may embed); the local process pool by default."""
    started = time.perf_counter()
    summary = AddSummary()
    dirs = [p for p in paths if Path(p).expanduser().is_dir()]
    remember_roots(conn, dirs, options.tags, options.doc_type)
    found = candidates(paths, options, load_roots(conn))
    summary.unsupported = len(found.unsupported)
    summary.unsupported_files = [str(p) for p in found.unsupported[:UNSUPPORTED_LISTED]]
    log = error_log or ErrorLog(None)
    for failure in found.failures:
        summary.failed.append(failure)
        log.write(failure)
    summary.notes += parser_notes(found.found)
    if progress is not None:
        progress.start(len(found.found), "files")
    ingest_files(
        conn,
        found.found,
        options,
        summary,
        log,
        vectors,
        progress,
        explicit=found.explicit,
        executor=executor,
    )
    summary.seconds = time.perf_counter() - started
    return summary


def parser_notes(found: list[Found]) -> list[str]:
    """Which PDF parser ran, when PDFs were added (JSON only: `kb doctor` says more)."""
    if not any(item.path.suffix.lower() == ".pdf" for item in found):
        return []
    from kb_search.formats.docling import docling_pdf_unavailable

    if docling_pdf_unavailable() is None:
        return ["PDFs parsed with Docling's layout models"]
    return ["PDFs parsed from their text layer with pypdfium2 (the default parser)"]


UNCHANGED, KNOWN_FAILURE, LEFT_OUT = "unchanged", "known failure", "removed"


class _Ingest:
    """One `ingest_files` run: counts, the error log, what to remember, progress."""

    def __init__(
        self,
        conn: Connection,
        options: AddOptions,
        summary: AddSummary,
        log: ErrorLog,
        progress: Progress,
    ):
        self.conn, self.options, self.summary, self.log = conn, options, summary, log
        self.progress = progress
        self.roots = load_root_settings(conn)

    def fail(self, path: Path, reason: str, candidate: Candidate | None = None) -> None:
        if self.drop(path):
            reason += " (its indexed text was removed)"
        failure = Failure(path_text(path), reason)
        self.summary.failed.append(failure)
        self.log.write(failure)
        self.remember(path, FAILED, reason, candidate)
        self.progress.advance(1, work=candidate.work if candidate else 0.0)

    def empty(self, candidate: Candidate, reason: str) -> None:
        self.summary.empty += 1
        self.drop(candidate.item.path)
        self.remember(candidate.item.path, EMPTY, reason, candidate)
        self.progress.advance(1, work=candidate.work)

    def drop(self, path: Path) -> bool:
        """Remove the document of a file that no longer gives text (emptied, unreadable,
        unparseable, too large now): its old text must not outlive it in search results."""
        doc_id = document_id_at(self.conn, path_text(path))
        if doc_id is None or not delete_document(self.conn, doc_id):
            return False
        self.summary.dropped += 1
        return True

    def remember(self, path: Path, kind: str, reason: str, candidate: Candidate | None) -> None:
        """Remember a failure or an empty file with what it looked like, so that reruns skip it
        until it changes."""
        record = candidate.record if candidate else None
        if record is None:
            try:
                stat = path.stat()
            except OSError:
                return
            size, mtime, digest = stat.st_size, stat.st_mtime, None
        else:
            size, mtime, digest = record.size, record.mtime, record.content_hash
        entry = Skipped(kind, reason, size, mtime, digest, outcome_fingerprint(self.options))
        try:
            remember_skipped(self.conn, path_text(path), entry)
        except DatabaseError:
            pass  # memory is an optimisation: the failure itself is logged

    def settings_for(self, item: Found) -> tuple[list[str], str | None]:
        """Tags and type for a file: the command's, plus what its root was added with."""
        root = self.roots.get(deepest_root(item.path, self.roots) or item.root, RootSettings())
        tags = sorted(set(self.options.tags) | set(root.tags))
        return tags, self.options.doc_type or root.doc_type


def ingest_files(
    conn: Connection,
    found: list[Found],
    options: AddOptions,
    summary: AddSummary,
    log: ErrorLog,
    vectors: VectorSource | None = None,
    progress: Progress | None = None,
    explicit: set[Path] | frozenset[Path] = frozenset(),
    executor: Executor | None = None,
) -> None:
    """Check, parse (in workers, or on `executor`) and write files; counts go into `summary`.
    Each file is one step of `progress` (the caller starts it); its expected text is the work.

    Files named in `explicit` were given by name: a file removed with `kb remove` comes back.
    """
    executor = executor or LocalExecutor(options)
    progress = progress or NoProgress()
    run = _Ingest(conn, options, summary, log, progress)
    writer = BatchWriter(
        conn,
        executor.vectors(vectors),
        options.tags,
        options.doc_type,
        on_error=lambda record, reason: run.fail(Path(record.path), reason),
        progress=progress,
    )
    memory = load_skipped(conn)
    todo: dict[int, Candidate] = {}
    for item in found:
        try:
            checked = check_file(conn, item, options, memory.get(path_text(item.path)), explicit)
        except IngestError as exc:
            run.fail(item.path, str(exc) or type(exc).__name__)
            continue
        if isinstance(checked, Candidate):
            todo[len(todo)] = checked
            continue
        if checked == UNCHANGED:
            summary.skipped += 1
        elif checked == KNOWN_FAILURE:
            summary.known_failures += 1
            run.drop(item.path)  # indexed by an older kb that kept text of failed files
        else:
            summary.removed += 1
        progress.read(1)
        progress.advance(1)
    progress.add_work(sum(c.work for c in todo.values()))

    in_flight: dict[int, Path] = {}

    def dispatched(key: int) -> None:
        in_flight[key] = todo[key].item.path
        progress.current(next(iter(in_flight.values())).name)

    outcomes = executor.parse(todo, dispatched)
    try:
        _write_outcomes(outcomes, todo, in_flight, writer, run)
    finally:
        outcomes.close()  # stops the parser processes now, also on Ctrl-C


def _write_outcomes(
    outcomes: Iterator[Outcome],
    todo: dict[int, Candidate],
    in_flight: dict[int, Path],
    writer: BatchWriter,
    run: _Ingest,
) -> None:
    summary, progress = run.summary, run.progress
    for outcome in outcomes:
        progress.read(1)
        in_flight.pop(outcome.key, None)
        progress.current(next(iter(in_flight.values())).name if in_flight else "")
        candidate = todo.pop(outcome.key)
        path = candidate.item.path
        if outcome.status == "empty":
            run.empty(candidate, outcome.reason)
            continue
        if outcome.status == "error":
            run.fail(path, outcome.reason, candidate)
            continue

        def done(parsed: ParsedDocument, candidate: Candidate = candidate) -> None:
            if candidate.existed:
                summary.updated += 1
            else:
                summary.added += 1
            summary.chunks += len(parsed.chunks)
            if candidate.forget:
                forget(run.conn, [candidate.record.path])
            progress.advance(1)  # its work and chunks: as the writer embeds them

        tags, doc_type = run.settings_for(candidate.item)
        writer.add(candidate.record, outcome.document, done, tags, doc_type, candidate.work)
    writer.flush()


CHUNKER_VERSION = 3  # bump when an ingester changes how it splits documents


def chunking_fingerprint(options: AddOptions) -> str:
    counter = "model" if options.tokenizer_path else "heuristic"
    s = options.settings
    return f"v{CHUNKER_VERSION}:{s.max_tokens}:{s.min_tokens}:{counter}"


def outcome_fingerprint(options: AddOptions) -> str:
    """What else decides whether a file fails: a new kb, another size cap, OCR setting or OCR
    engine (one installed since) retries the files that failed under the old ones."""
    from kb_search import __version__
    from kb_search.formats.ocr import engine_installed

    cap = options.max_file_bytes
    ocr = f"{options.ocr}+{engine_installed() or 'no-engine'}"
    return f"{chunking_fingerprint(options)}:{cap}:{ocr}:{__version__}"


def expected_work(path: Path, size: int) -> float:
    """Bytes of text a file is expected to hold: its size, or its pages for a PDF."""
    if path.suffix.lower() != ".pdf":
        return float(size)
    try:
        import pypdfium2

        document = pypdfium2.PdfDocument(open_user_file(path), autoclose=True)
        try:
            return float(len(document) * PDF_PAGE_WORK)
        finally:
            document.close()
    except Exception:  # noqa: BLE001 - a broken PDF fails later, in its parser
        return float(size)


def check_file(
    conn: Connection,
    item: Found,
    options: AddOptions,
    skipped: Skipped | None = None,
    explicit: set[Path] | frozenset[Path] = frozenset(),
) -> Candidate | str:
    """What to parse, or why not: UNCHANGED, KNOWN_FAILURE (failed before, same file) or
    LEFT_OUT (removed by the user). Raises IngestError."""
    path = item.path
    try:
        stat = path.stat()
    except OSError as exc:
        raise IngestError(f"cannot stat file: {exc.strerror or exc}") from exc
    key = path_text(path)
    row = document_state(conn, key)
    chunking = chunking_fingerprint(options)
    same_chunking = row is not None and row[4] == chunking
    if same_chunking and row[2] == stat.st_size and row[3] == stat.st_mtime:
        return UNCHANGED
    if skipped is not None:
        verdict = _still_skipped(conn, key, skipped, stat, options, path in explicit)
        if verdict is not None:
            return verdict
    _check_size(stat.st_size, options)
    try:
        with open_user_file(path) as handle:
            stat = os.fstat(handle.fileno())  # the bytes hashed are the ones recorded
            _check_size(stat.st_size, options)
            digest = content_hash(handle.read())
    except OSError as exc:
        raise IngestError(f"cannot read file: {exc.strerror or exc}") from exc
    if same_chunking and row[1] == digest:
        touch_document(conn, row[0], stat.st_size, stat.st_mtime)
        return UNCHANGED
    record = DocumentRecord(
        path=key,
        rel_path=rel_path_for(path, item.root),
        content_hash=digest,
        size=stat.st_size,
        mtime=stat.st_mtime,
        chunking=chunking,
    )
    work = expected_work(path, stat.st_size)
    return Candidate(item, record, row is not None, work, forget=skipped is not None)


def _check_size(size: int, options: AddOptions) -> None:
    if size > options.max_file_bytes:
        cap = options.max_file_bytes / 1e6
        raise IngestError(f"file too large: {size / 1e6:.1f} MB > cap {cap:.0f} MB")


def _still_skipped(
    conn: Connection,
    key: str,
    skipped: Skipped,
    stat: os.stat_result,
    options: AddOptions,
    explicit: bool,
) -> str | None:
    """LEFT_OUT or KNOWN_FAILURE while what the user said or the file's outcome still holds.
    A file named on its own (`kb add FILE`) is always tried again."""
    if explicit:
        return None
    if skipped.kind == REMOVED:
        return LEFT_OUT
    if options.retry_failed or skipped.chunking != outcome_fingerprint(options):
        return None
    if skipped.size == stat.st_size and skipped.mtime == stat.st_mtime:
        return KNOWN_FAILURE
    if skipped.content_hash and skipped.size == stat.st_size:
        try:
            same = content_hash(read_user_file(Path(key))) == skipped.content_hash
        except OSError:
            return None
        if same:
            touch_skipped(conn, key, stat.st_size, stat.st_mtime)
            return KNOWN_FAILURE
    return None
