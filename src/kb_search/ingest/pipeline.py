"""`kb add`: walk, skip what is unchanged, parse, write one document per transaction."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kb_search.ingest.batch_writer import BatchWriter, EmbedAlongside, embed_pending
from kb_search.ingest.changes import (
    KNOWN_EMPTY,
    KNOWN_FAILURE,
    UNCHANGED,
    check_file,
    chunking_fingerprint,
    remember_outcome,
)
from kb_search.ingest.executor import AddOptions, Candidate, Executor, LocalExecutor, VectorSource
from kb_search.ingest.left_out import left_out_now, remove_left_out
from kb_search.ingest.ocr_phase import read_queued_scans
from kb_search.ingest.roots import deepest_root, file_settings, remember_roots
from kb_search.ingest.sketches import update_copies
from kb_search.ingest.speeds import recall, remember_parse
from kb_search.ingest.summary import (
    AddSummary,
    ErrorLog,
    Failure,
    count_unsupported,
    counted_on_stop,
)
from kb_search.ingest.walk import IGNORE_FILE, Found, IgnoreRules, WalkError, walk
from kb_search.ingest.workers import Outcome
from kb_search.parsed import IngestError, ParsedDocument
from kb_search.progress import PDF_PAGE_WORK, NoProgress, Progress, work_units
from kb_search.sanitize import path_text
from kb_search.store.db import Connection
from kb_search.store.documents import (
    delete_document,
)
from kb_search.store.inventory import document_id_at, document_state, document_states
from kb_search.store.ocr_queue import QUEUED_KEY, queue_scan, queued_scans, unqueue
from kb_search.store.roots import load_roots
from kb_search.store.skipped import (
    EMPTY,
    FAILED,
    forget,
    load_root_settings,
    load_skipped,
)


@dataclass
class Candidates:
    """What a walk of the given paths found."""

    found: list[Found] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    unsupported: list[Path] = field(default_factory=list)
    unsupported_kinds: dict[Path, str] = field(default_factory=dict)  # binary, hidden...
    explicit: set[Path] = field(default_factory=set)  # files named on their own
    left_out: dict[str, int] = field(default_factory=dict)  # generated files, by reason
    walked: set[str] = field(default_factory=set)  # every file the walk yielded
    judged: dict[str, str] = field(default_factory=dict)  # of which left out: why
    not_walked: dict[str, int] = field(default_factory=dict)  # by `walk.passed_reason`


def candidates(
    paths: list[Path], options: AddOptions, roots: list[Path] | None = None
) -> Candidates:
    """Files to ingest, walk failures, the files of no type kb reads, and the generated ones
    (`registry.classify`: one decision, in a folder or named on the command line; a
    generated file named on its own is indexed).

    A file named on its own keeps the citation path of the added folder it lies in.
    """
    from kb_search.formats.registry import UNSUPPORTED, classify

    result = Candidates()
    result.explicit = {Path(p).expanduser().resolve() for p in paths if Path(p).is_file()}
    for item in walk(paths, follow_symlinks=options.follow_symlinks, passed=result.not_walked):
        if isinstance(item, WalkError):
            result.failures.append(Failure(path_text(item.path), item.reason))
            continue
        named = item.path in result.explicit
        verdict = classify(item.path, options.include_generated, named, item.root)
        result.walked.add(path_text(item.path))
        if verdict.left_out is not None:
            result.judged[path_text(item.path)] = verdict.left_out
        if verdict.format is None:
            result.unsupported.append(item.path)
            result.unsupported_kinds[item.path] = verdict.kind or UNSUPPORTED
            continue
        if verdict.left_out is not None:
            result.left_out[verdict.left_out] = result.left_out.get(verdict.left_out, 0) + 1
            continue
        if named and roots:
            item.root = deepest_root(item.path, roots) or item.root
            # `kb sync` would drop it again: say so now instead.
            if item.root != item.path.parent and IgnoreRules(item.root).ignored_path(item.path):
                result.failures.append(
                    Failure(path_text(item.path), f"ignored by {IGNORE_FILE} in {item.root}")
                )
                continue
        result.found.append(item)
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
    summary = AddSummary()
    with counted_on_stop(conn, summary, vectors):
        _add(conn, paths, options, summary, error_log, vectors, progress, executor)
    return summary


def _add(
    conn: Connection,
    paths: list[Path],
    options: AddOptions,
    summary: AddSummary,
    error_log: ErrorLog | None,
    vectors: VectorSource | None,
    progress: Progress | None,
    executor: Executor | None,
) -> None:
    started, began = time.perf_counter(), time.time()
    dirs = [p for p in paths if Path(p).expanduser().is_dir()]
    remember_roots(conn, dirs, options.tags, options.doc_type, named=paths)
    found = candidates(paths, options, load_roots(conn))
    leaving = _left_out_now(conn, dirs, found, chunking_fingerprint(options))
    remove_left_out(conn, leaving, summary.excluded)
    unsupported = [p for p in found.unsupported if path_text(p) not in leaving]
    for path in unsupported:
        count_unsupported(summary, str(path), found.unsupported_kinds[path])
    summary.left_out = found.left_out
    summary.not_walked = found.not_walked
    for _, reason in leaving.values():  # counted once: as leaving the index
        _count_off(summary.left_out, reason)
    for path, reason in found.judged.items():
        # indexed by an earlier `--include-generated`, it stays: already indexed, not left out
        if reason in summary.left_out and path not in leaving and document_id_at(conn, path):
            _count_off(summary.left_out, reason)
            summary.skipped += 1
    log = error_log or ErrorLog(None)
    for failure in found.failures:
        summary.failed.append(failure)
        log.write(failure)
    summary.notes += parser_notes(found.found)
    progress = progress or NoProgress()
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
    summary.keyword_seconds = time.perf_counter() - started
    read_queued_scans(conn, options, summary, log, vectors, progress, queued_since=began)
    update_copies(conn)
    embed_pending(conn, vectors, progress, summary)
    summary.seconds = time.perf_counter() - started


def _count_off(counts: dict[str, int], reason: str) -> None:
    if reason in counts:
        counts[reason] -= 1
        if not counts[reason]:
            del counts[reason]


def _left_out_now(
    conn: Connection, dirs: list[Path], found: Candidates, chunking: str
) -> dict[str, tuple[int, str]]:
    """The documents under the added folders whose files kb leaves out now, as `kb sync`
    judges them (`ingest/left_out.py`): a file ignored now, or one an older kb indexed that is
    generated or of no type kb reads today."""
    if not dirs:
        return {}
    folders = [path_text(Path(d).expanduser().resolve()) for d in dirs]
    rows = [(path, doc_id, chunked) for path, doc_id, *_, chunked in document_states(conn)]
    protected = [failure.path for failure in found.failures]
    return left_out_now(rows, folders, found.walked, found.judged, protected, chunking)


def parser_notes(found: list[Found]) -> list[str]:
    """Which PDF parser ran, when PDFs were added (JSON only: `kb doctor` says more)."""
    if not any(item.path.suffix.lower() == ".pdf" for item in found):
        return []
    from kb_search.formats.docling import docling_pdf_unavailable

    if docling_pdf_unavailable() is None:
        return ["PDFs parsed with Docling's layout models"]
    return ["PDFs parsed from their text layer with pypdfium2 (the default parser)"]




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
        self.units = 0.0  # the work of the documents written (`progress.work_units`)

    def fail(self, path: Path, reason: str, candidate: Candidate | None = None) -> None:
        if self.drop(path):
            reason += " (its indexed text was removed)"
        failure = Failure(path_text(path), reason)
        self.summary.failed.append(failure)
        self.log.write(failure)
        self.remember(path, FAILED, reason, candidate)
        self.leave_ocr_queue(path_text(path))
        if candidate is not None:
            self.progress.skip_work(candidate.work, pages=pdf_pages(candidate))
        self.progress.advance(1)

    def leave_ocr_queue(self, path: str) -> None:
        """A file read now (failed or empty): pages an earlier run queued wait no more."""
        unqueue(self.conn, [path])
        self.progress.await_ocr(0, path)

    def queue_ocr(self, candidate: Candidate, pages: int) -> None:
        """A PDF with no text layer: its pages wait for the OCR phase. An earlier reading of
        the same content (re-chunked after an upgrade) stays until the OCR phase rewrites it in
        place, with its id, tags and vectors; one of another content goes (its text is stale)."""
        state = document_state(self.conn, candidate.record.path)
        if state is None or state[1] != candidate.record.content_hash:
            self.drop(candidate.item.path)
        queue_scan(self.conn, candidate.record, pages)
        if candidate.forget:
            forget(self.conn, [candidate.record.path])
        self.progress.await_ocr(pages, candidate.record.path)
        self.progress.advance(1, work=candidate.work, pages=pdf_pages(candidate))

    def empty(self, candidate: Candidate, reason: str) -> None:
        self.summary.empty += 1
        self.drop(candidate.item.path)
        self.remember(candidate.item.path, EMPTY, reason, candidate)
        self.leave_ocr_queue(candidate.record.path)
        self.progress.skip_work(candidate.work, pages=pdf_pages(candidate))
        self.progress.advance(1)

    def drop(self, path: Path) -> bool:
        """Remove the document of a file that no longer gives text (emptied, unreadable,
        unparseable, too large now): its old text must not outlive it in search results."""
        doc_id = document_id_at(self.conn, path_text(path))
        if doc_id is None or not delete_document(self.conn, doc_id):
            return False
        self.summary.dropped += 1
        return True

    def remember(self, path: Path, kind: str, reason: str, candidate: Candidate | None) -> None:
        """Remember a failure or an empty file, so that reruns skip it until it changes."""
        record = candidate.record if candidate else None
        remember_outcome(self.conn, path, kind, reason, self.options, record)

    def settings_for(self, item: Found) -> tuple[list[str], str | None]:
        """Tags and type for a file: the command's, plus what its root was added with."""
        return file_settings(
            self.roots, item.path, item.root, self.options.tags, self.options.doc_type
        )


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
    renamed: set[Path] | frozenset[Path] = frozenset(),
) -> None:
    """Check, parse (in workers, or on `executor`) and write files, each keyword-searchable
    as soon as it is written; counts go into `summary`. The chunks that need the model wait
    for `batch_writer.embed_pending`, which the caller runs after this keyword phase. Each
    file is one step of `progress` (the caller starts it); its expected text is the work.

    Files named in `explicit` were given by name: a file removed with `kb remove` comes back.
    Files in `renamed` were moved in place by the caller (and counted there): their re-ingest
    is neither an addition nor an update.
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
        elif checked == KNOWN_EMPTY:
            summary.empty += 1
            run.drop(item.path)
        elif checked == KNOWN_FAILURE:
            summary.known_failures += 1
            run.drop(item.path)  # indexed by an older kb that kept text of failed files
        else:
            summary.removed += 1
        progress.read(1)
        progress.advance(1)
    progress.measured_before(*recall(conn, getattr(vectors, "model", None)))
    progress.add_work(
        sum(c.work for c in todo.values()),
        pages=sum(pdf_pages(c) for c in todo.values()),
    )
    started = time.monotonic()
    if vectors is not None:
        progress.await_embedding(vectors.pending(conn))  # left by an interrupted run
    for scan in queued_scans(conn):  # left by an interrupted run
        progress.await_ocr(scan.pages, scan.record.path)

    in_flight: dict[int, Path] = {}

    def dispatched(key: int) -> None:
        in_flight[key] = todo[key].item.path
        progress.current(next(iter(in_flight.values())).name)

    # While worker processes parse a long file, this one embeds in the time it would wait.
    alongside = EmbedAlongside(conn, writer.vectors, progress)
    if isinstance(executor, LocalExecutor) and options.workers > 0:
        outcomes = executor.parse(todo, dispatched, idle=alongside)
    else:
        outcomes = executor.parse(todo, dispatched)
    try:
        _write_outcomes(outcomes, todo, in_flight, writer, run, renamed)
        remember_parse(conn, run.units, time.monotonic() - started)
    finally:
        summary.embedded += alongside.embedded
        outcomes.close()  # stops the parser processes now, also on Ctrl-C


def pdf_pages(candidate: Candidate) -> int:
    """The PDF pages a candidate's work stands for (they cost more to parse than text)."""
    if candidate.item.path.suffix.lower() != ".pdf":
        return 0
    return int(candidate.work // PDF_PAGE_WORK)


def _write_outcomes(
    outcomes: Iterator[Outcome],
    todo: dict[int, Candidate],
    in_flight: dict[int, Path],
    writer: BatchWriter,
    run: _Ingest,
    renamed: set[Path] | frozenset[Path] = frozenset(),
) -> None:
    progress = run.progress
    for outcome in outcomes:
        progress.read(1)
        in_flight.pop(outcome.key, None)
        progress.current(next(iter(in_flight.values())).name if in_flight else "")
        candidate = todo.pop(outcome.key)
        if outcome.status == "empty":
            run.empty(candidate, outcome.reason)
        elif outcome.status == "ocr":
            run.queue_ocr(candidate, outcome.ocr_pages)
        elif outcome.status == "error":
            run.fail(candidate.item.path, outcome.reason, candidate)
        else:
            _write_one(candidate, outcome.document, writer, run, renamed)


def _write_one(
    candidate: Candidate,
    parsed: ParsedDocument,
    writer: BatchWriter,
    run: _Ingest,
    renamed: set[Path] | frozenset[Path],
) -> None:
    summary, progress = run.summary, run.progress

    def done(parsed: ParsedDocument) -> None:
        if candidate.item.path in renamed:
            pass  # a rename whose title was its file name: counted as renamed
        elif candidate.rechunk:
            summary.rechunked += 1
        elif candidate.existed:
            summary.updated += 1
        else:
            summary.added += 1
        summary.chunks += len(parsed.chunks)
        if candidate.forget:
            forget(run.conn, [candidate.record.path])
        progress.await_ocr(len(parsed.metadata.get(QUEUED_KEY) or ()), candidate.record.path)
        progress.advance(1)  # its work and chunks: reported by the writer

    tags, doc_type = run.settings_for(candidate.item)
    work, pages = candidate.work, pdf_pages(candidate)
    run.units += work_units(work, pages)
    writer.add(candidate.record, parsed, done, tags, doc_type, work, pages)
