"""The OCR phase: scanned PDF pages are read after every file's text is written.

In the keyword phase a PDF's text layer is parsed, chunked and written at once (keyword-
searchable) and its pages that need OCR are queued in the database (`store.ocr_queue`, in the
document's own transaction; a PDF with no text layer at all is queued, and an earlier reading of
the same content stays until this phase rewrites it in place, tags and id kept).
After the keyword phase of the run, before the embedding phase (so that a chunk is embedded
once, with its OCR text), this reads the queue: each file is parsed again, whole, with OCR, and
its document rewritten in one transaction that also takes it off the queue, so its chunks and
pages come out as a parse in one go would give them, unchanged chunk texts keep their vectors,
and a crash or Ctrl-C leaves the files not yet read on the queue for the next `kb add` or
`kb sync`. A file that changed or went away since it was queued leaves the queue: the run
that sees the change reads it again.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from kb_search.formats.pdf import ocr
from kb_search.ingest.batch_writer import BatchWriter
from kb_search.ingest.changes import remember_outcome
from kb_search.ingest.executor import AddOptions, Candidate, LocalExecutor, VectorSource
from kb_search.ingest.roots import file_settings
from kb_search.ingest.summary import AddSummary, ErrorLog, Failure
from kb_search.ingest.walk import Found
from kb_search.parsed import ParsedDocument
from kb_search.progress import NoProgress, Progress
from kb_search.sanitize import path_text
from kb_search.store.db import Connection
from kb_search.store.inventory import document_id_at
from kb_search.store.ocr_queue import QueuedScan, queued_scans, unqueue
from kb_search.store.roots import removed_folder_holds
from kb_search.store.skipped import (
    FAILED,
    load_root_settings,
)


def read_queued_scans(
    conn: Connection,
    options: AddOptions,
    summary: AddSummary,
    log: ErrorLog,
    vectors: VectorSource | None = None,
    progress: Progress | None = None,
    queued_since: float | None = None,
) -> None:
    """OCR every queued file and write its document; counts go into `summary` (`ocr_pages`;
    a file written for the first time is `added`). Nothing happens without an OCR engine or
    with `ocr=never`: the queue waits (`kb doctor` counts it). `queued_since`: when this run
    began; the command's tags and type go to the files it queued (None: to every file)."""
    if options.ocr == "never" or ocr.engine_installed() is None:
        return
    progress = progress or NoProgress()
    queued = {scan.record.path: scan for scan in queued_scans(conn)}
    # changed or gone since (the run that sees the change reads it again), or in a folder
    # `kb remove` forgot meanwhile
    stale = [
        path
        for path, scan in queued.items()
        if not _unchanged(scan) or removed_folder_holds(conn, path)
    ]
    if stale:
        unqueue(conn, stale)
    todo = {
        key: _candidate(conn, scan)
        for key, scan in enumerate(s for p, s in queued.items() if p not in stale)
    }
    if not todo:
        return
    pages = {key: queued[c.record.path].pages for key, c in todo.items()}
    queued_at = {key: queued[c.record.path].queued_at for key, c in todo.items()}
    progress.ocr(sum(pages.values()))
    writer = BatchWriter(conn, vectors)
    roots = load_root_settings(conn)
    executor = LocalExecutor(replace(options, ocr_later=False))
    outcomes = executor.parse(todo, lambda key: progress.current(todo[key].item.path.name))
    try:
        for outcome in outcomes:
            candidate = todo[outcome.key]
            if outcome.status == "ok" and outcome.document is not None:
                # the tags and type its folder was added with, and the command's when this
                # run queued it (a scan left by a stopped run is no file this command named)
                path = candidate.item.path
                named_now = queued_since is None or queued_at[outcome.key] >= queued_since
                command = (options.tags, options.doc_type) if named_now else ((), None)
                tags, doc_type = file_settings(roots, path, path.parent, *command)
                written = _write(
                    writer, candidate, outcome.document, summary, progress, tags, doc_type
                )
            else:
                reason = outcome.reason or outcome.status
                _failed(conn, options, candidate, reason, summary, log)
                written = False
            unqueue(conn, [candidate.record.path])  # read (or tried): never again
            summary.ocr_pages += pages[outcome.key] if written else 0
            progress.ocr_read(pages[outcome.key])
    finally:
        outcomes.close()  # stops the parser processes now, also on Ctrl-C
        progress.current("")


def _unchanged(scan: QueuedScan) -> bool:
    try:
        stat = Path(scan.record.path).stat()
    except OSError:
        return False
    return stat.st_size == scan.record.size and stat.st_mtime == scan.record.mtime


def _candidate(conn: Connection, scan: QueuedScan) -> Candidate:
    path = Path(scan.record.path)
    existed = document_id_at(conn, scan.record.path) is not None
    return Candidate(Found(path, path.parent), scan.record, existed)


def _write(
    writer: BatchWriter,
    candidate: Candidate,
    parsed: ParsedDocument,
    summary: AddSummary,
    progress: Progress,
    tags: list[str],
    doc_type: str | None,
) -> bool:
    """Write the document read with OCR (which takes it off the queue)."""
    failures: list[str] = []
    writer.on_error = lambda _record, reason: failures.append(reason)
    if not writer.add(candidate.record, parsed, tags=tags, doc_type=doc_type):
        summary.failed.append(Failure(path_text(candidate.item.path), failures[-1]))
        return False
    if document_id_at(writer.conn, candidate.record.path) is None:
        return False  # `kb remove` forgot its folder meanwhile: nothing was written
    if not candidate.existed:
        summary.added += 1
        summary.chunks += len(parsed.chunks)
    if writer.vectors is not None:
        progress.await_embedding(len(parsed.chunks))
    return True


def _failed(
    conn: Connection,
    options: AddOptions,
    candidate: Candidate,
    reason: str,
    summary: AddSummary,
    log: ErrorLog,
) -> None:
    """OCR failed (a time limit, a crash, nothing recognised). A document of the text layer
    stays as it is; a file with no text layer is remembered as failed, as the keyword phase
    remembers its failures, so that reruns skip it until it changes."""
    path = candidate.item.path
    if candidate.existed:
        reason = f"OCR of its scanned pages failed: {reason} (its text layer is indexed)"
    else:
        remember_outcome(conn, path, FAILED, reason, options, candidate.record)
    failure = Failure(path_text(path), reason)
    summary.failed.append(failure)
    log.write(failure)
