"""What an add or sync run reports: the summary, its failures, the error log."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb_search.errors import RunInterrupted
from kb_search.sanitize import log_field
from kb_search.text import plural

if TYPE_CHECKING:
    from kb_search.ingest.executor import VectorSource
    from kb_search.store.db import Connection

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
    # Unchanged files read again only because an older kb (or other chunking settings)
    # chunked them: neither added nor updated
    rechunked: int = 0
    unsupported: int = 0  # files of a type kb does not read, found while walking
    empty: int = 0  # files with nothing to index (found so now, or before and unchanged since)
    failed: list[Failure] = field(default_factory=list)
    known_failures: int = 0  # failed before and unchanged since: not read again
    removed: int = 0  # removed with `kb remove`: left out until added by name
    dropped: int = 0  # documents whose file now has no text, or none kb can read: removed
    chunks: int = 0
    embedded: int = 0  # chunks that got a vector in this run (also ones an earlier run left)
    keyword_seconds: float = 0.0  # until every document was written: keyword-searchable
    ocr_pages: int = 0  # scanned PDF pages read by OCR after the keyword phase
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)  # said once per run
    unsupported_files: list[str] = field(default_factory=list)  # the first few, by path
    # The unsupported files by kind (`registry.BINARY`, `HIDDEN`, `NO_DOCUMENT`)
    unsupported_kinds: dict[str, int] = field(default_factory=dict)
    model_loaded: bool = False  # whether this run loaded the embedding model
    # Generated files left out, by reason (`formats/generated.py`): "minified", "lock file"...
    left_out: dict[str, int] = field(default_factory=dict)
    # Files and folders the walk passed by, by reason (`walk.passed_reason`): "hidden folder",
    # "build, cache or vendor folder", "VCS folder", "ignore rules"...
    not_walked: dict[str, int] = field(default_factory=dict)
    # Documents an earlier run indexed whose files are left out now, by reason: removed
    # (`ingest/left_out.py`, as `kb sync` does)
    excluded: dict[str, int] = field(default_factory=dict)

    def line(self, show: Callable[[str], str] = str) -> str:
        """One line for a person; `show` turns a stored path into the one to print."""
        parts = [f"Added {plural(self.added + self.updated, 'document')}"]
        if self.chunks and (self.added or self.updated) and not self.rechunked:
            parts[0] += f" ({plural(self.chunks, 'chunk')})"
        parts += rechunked_parts(self.rechunked)
        if self.chunks and self.rechunked:  # the files read again wrote chunks too
            parts[-1] += f" ({plural(self.chunks, 'chunk')} written in all)"
        parts.append(failed_part(self.failed, show))
        parts.append(f"{self.skipped} skipped (already indexed)")
        parts += left_out_parts(self.known_failures, self.removed, "--retry-failed")
        parts += dropped_parts(self.dropped)
        parts += empty_parts(self.empty)
        parts += unsupported_parts(self, show)
        parts += generated_parts(self.left_out)
        parts += not_walked_parts(self.not_walked)
        parts += excluded_parts(self.excluded)
        parts += ocr_parts(self.ocr_pages)
        parts += leftover_parts(self.embedded, self.chunks)
        return ". ".join(parts) + "."

    def to_dict(self) -> dict:
        return {
            "added": self.added,
            "updated": self.updated,
            "skipped": self.skipped,
            "rechunked": self.rechunked,
            "not_walked": dict(sorted(self.not_walked.items())),
            "unsupported": self.unsupported,
            "unsupported_files": self.unsupported_files,
            "unsupported_kinds": dict(sorted(self.unsupported_kinds.items())),
            "left_out": dict(sorted(self.left_out.items())),
            "excluded": dict(sorted(self.excluded.items())),
            "empty": self.empty,
            "failed": [f.__dict__ for f in self.failed],
            "known_failures": self.known_failures,
            "removed": self.removed,
            "dropped": self.dropped,
            "chunks": self.chunks,
            "embedded": self.embedded,
            "keyword_seconds": round(self.keyword_seconds, 3),
            "ocr_pages": self.ocr_pages,
            "seconds": round(self.seconds, 3),
            "model_loaded": self.model_loaded,
            "notes": self.notes,
        }

    def nothing_added(self, show: Callable[[str], str] = str) -> str | None:
        """Why this run added nothing it was asked to add, or None: none of the files found
        under the given paths is in the index after it (none added, updated or already
        indexed) while at least one was found and failed, was empty, of an unsupported type,
        failed before, or was left out as generated. An empty folder, or one whose files were
        all `kb remove`d, asks for nothing and is no error. `show` prints a path as `line` does."""
        if self.added or self.updated or self.skipped or self.rechunked:
            return None
        if self.failed:
            first = self.failed[0]
            more = f" ({len(self.failed)} failed)" if len(self.failed) > 1 else ""
            return f"nothing added: {show(first.path)}: {first.reason}{more}"
        if self.known_failures:
            return (
                f"nothing added: {plural(self.known_failures, 'file')} that failed before and"
                " did not change (--retry-failed tries again)"
            )
        if self.empty:
            return f"nothing added: {plural(self.empty, 'empty file')} (nothing to index)"
        if self.unsupported:
            first = self.unsupported_files[0] if self.unsupported_files else ""
            named = f" (first: {show(first)})" if first else ""
            return f"nothing added: {plural(self.unsupported, 'file')} of unsupported types{named}"
        if self.left_out:
            return "nothing added: " + generated_parts(self.left_out)[0]
        return None


UNSUPPORTED_LISTED = 10  # unsupported file names kept for the summary
# How the summary names each kind of unsupported file, one and many.
_KIND_WORDS = {
    "binary": ("binary", "binary"),
    "hidden": ("hidden settings file", "hidden settings files"),
    "no document": ("style sheet, drawing or key", "style sheets, drawings or keys"),
    "secret": (
        "settings file holding a password or token",
        "settings files holding passwords or tokens",
    ),
}


def unsupported_parts(summary: Any, show: Callable[[str], str]) -> list[str]:
    """"3 files of unsupported types ignored: 2 binary, 1 hidden settings file (first: PATH)":
    new files kb does not read, in `kb add`, `kb sync` and `kb watch` alike (a summary's
    `unsupported`, `unsupported_kinds`, `unsupported_files`)."""
    if not summary.unsupported:
        return []
    first = summary.unsupported_files[0] if summary.unsupported_files else ""
    named = f" (first: {show(first)})" if first else ""
    kinds = unsupported_kinds_part(summary.unsupported_kinds)
    return [f"{plural(summary.unsupported, 'file')} of unsupported types ignored{kinds}{named}"]


def count_unsupported(summary: Any, path: str, kind: str) -> None:
    """One more file of no type kb reads in `summary` (its kind; the first few by path)."""
    summary.unsupported += 1
    summary.unsupported_kinds[kind] = summary.unsupported_kinds.get(kind, 0) + 1
    if len(summary.unsupported_files) < UNSUPPORTED_LISTED:
        summary.unsupported_files.append(path)


def unsupported_kinds_part(kinds: dict[str, int]) -> str:
    """": 120 binary, 14 style sheets, drawings or keys, 3 hidden settings files" (by count);
    empty when every one is binary (the summary's "unsupported types" says it)."""
    if set(kinds) <= {"binary"}:
        return ""
    words = []
    for kind, count in _most_first(kinds):
        one, many = _KIND_WORDS.get(kind, (kind, kind))
        words.append(f"{count} {one if count == 1 else many}")
    return ": " + ", ".join(words)


def rechunked_parts(rechunked: int) -> list[str]:
    """Files read again though they did not change: `kb add` and `kb sync` say it alike."""
    if not rechunked:
        return []
    return [
        f"{plural(rechunked, 'unchanged file')} read again: chunked by an older kb or other"
        " chunking settings"
    ]


def not_walked_parts(not_walked: dict[str, int]) -> list[str]:
    """"9 paths not walked: 6 build, cache or vendor folders, 3 hidden folders"."""
    total = sum(not_walked.values())
    if not total:
        return []
    words = []
    for reason, count in _most_first(not_walked):
        if reason == "ignore rules":
            words.append(f"{count} by .gitignore/.kbignore")
        else:
            words.append(plural(count, reason))
    return [f"{plural(total, 'path')} not walked: " + ", ".join(words)]


def failed_part(failed: list[Failure], show: Callable[[str], str]) -> str:
    if not failed:
        return "0 failed"
    first = failed[0]
    return f"{len(failed)} failed (first: {show(first.path)}: {first.reason})"


# Reasons whose plural is not noun + "s" (a file's reason to be left out, in a count).
_MANY = {
    "minified": "minified",
    "search index": "search indexes",
    "vendored library": "vendored libraries",
    "ignored": "ignored",
    "unsupported": "unsupported",
}


def _most_first(counts: dict[str, int]) -> list[tuple[str, int]]:
    """Counted things, the most first, ties by name."""
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def _reason_counts(by_reason: dict[str, int]) -> str:
    """"9 minified, 3 lock files"."""
    return ", ".join(
        plural(count, reason, _MANY.get(reason)) for reason, count in _most_first(by_reason)
    )


def generated_parts(left_out: dict[str, int]) -> list[str]:
    """"12 generated files left out: 9 minified, 3 lock files (--include-generated ...)"."""
    total = sum(left_out.values())
    if not total:
        return []
    return [
        f"{plural(total, 'generated file')} left out: {_reason_counts(left_out)}"
        " (--include-generated indexes them)"
    ]


def excluded_parts(excluded: dict[str, int]) -> list[str]:
    """"3 documents left the index, their files left out now: 2 ignored, 1 minified"."""
    total = sum(excluded.values())
    if not total:
        return []
    counts = _reason_counts(excluded)
    generated = any(reason not in ("ignored", "unsupported") for reason in excluded)
    hint = " (--include-generated keeps generated files)" if generated else ""
    return [
        f"{plural(total, 'document')} left the index, their files left out now: {counts}{hint}"
    ]


def dropped_parts(dropped: int) -> list[str]:
    if not dropped:
        return []
    return [
        f"{plural(dropped, 'document')} removed from the index: the file is empty now, or"
        " unreadable or unparseable (its old text is no longer searchable)"
    ]


def empty_parts(empty: int) -> list[str]:
    """Empty files, this run or before (one wording for both: nothing to index)."""
    return [f"{plural(empty, 'empty file')} skipped (nothing to index)"] if empty else []


def left_out_parts(known_failures: int, removed: int, retry_flag: str) -> list[str]:
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


def leftover_parts(embedded: int, written: int) -> list[str]:
    """Chunks embedded beyond those this run wrote: left without a vector by a run that was
    interrupted (Ctrl-C, a crash). Without this a resumed run that embedded for minutes said
    only "Added 0 documents"."""
    left = embedded - written
    return [f"{plural(left, 'chunk')} embedded that an earlier run left without a vector"] if (
        left > 0
    ) else []


def ocr_parts(pages: int) -> list[str]:
    return [f"{plural(pages, 'scanned page')} read by OCR after the text"] if pages else []


def with_closing_notes(
    summary: Any, log: ErrorLog, conn: Connection, ocr_mode: str, since: float | None = None
) -> Any:
    """What a run's summary says once it is over: an error log it could not write, and the
    scanned pages no OCR engine read in the files it read (begun at `since`, time.time()),
    in one line with what to install."""
    from kb_search.ingest.ocr_notice import unread_note

    if log.problem:
        summary.notes.append(f"{log.problem}; the failures are in this summary only")
    if note := unread_note(conn, ocr_mode, since):
        summary.notes.append(note)
    return summary


@contextmanager
def counted_on_stop(
    conn: Connection, summary: Any, vectors: VectorSource | None
) -> Iterator[None]:
    """Ctrl-C inside: raised again as `RunInterrupted` with the run's `summary` so far and how
    much of the index is embedded now, so the face can say what was done and what is left."""
    try:
        yield
    except RunInterrupted:
        raise
    except KeyboardInterrupt as stop:
        chunks, embedded = embedded_now(conn, vectors)
        raise RunInterrupted(summary, chunks, embedded) from stop


def embedded_now(conn: Connection, vectors: VectorSource | None) -> tuple[int, int | None]:
    """(chunks in the index, how many have a vector of the writing model; None without one)."""
    from kb_search.store.inventory import chunk_count

    chunks = chunk_count(conn)
    tried = getattr(vectors, "loaded", False)
    if vectors is None or (tried and not getattr(vectors, "model_loaded", True)):
        return chunks, None  # no model: lexical only
    return chunks, chunks - vectors.pending(conn)
