"""The PDF pages waiting for OCR (table `ocr_queue`): one row per file, written with the file's
text-layer document (or alone, for a file with no text layer) and removed in the transaction
that writes the document read with OCR. See ingest/ocr_phase.py."""

from __future__ import annotations

import time
from dataclasses import dataclass

from kb_search.store.db import Connection, transaction
from kb_search.store.records import DocumentRecord

QUEUED_KEY = "ocr_queued_pages"  # a document's metadata: its pages that wait for OCR


@dataclass(frozen=True)
class QueuedScan:
    """A file with `pages` pages to OCR, and what it looked like when they were found."""

    record: DocumentRecord
    pages: int
    queued_at: float = 0.0  # time.time() of the run that queued it


def queue_row(conn: Connection, record: DocumentRecord, pages: int) -> None:
    """Queue a file's pages (inside the caller's transaction); a newer row replaces the old."""
    conn.execute(
        "INSERT INTO ocr_queue(path, rel_path, pages, size, mtime, content_hash, chunking,"
        " queued_at) VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(path) DO UPDATE SET"
        " rel_path=excluded.rel_path, pages=excluded.pages, size=excluded.size,"
        " mtime=excluded.mtime, content_hash=excluded.content_hash,"
        " chunking=excluded.chunking, queued_at=excluded.queued_at",
        (
            record.path,
            record.rel_path,
            pages,
            record.size,
            record.mtime,
            record.content_hash,
            record.chunking,
            time.time(),
        ),
    )


def unqueue_row(conn: Connection, path: str) -> None:
    """Inside the caller's transaction: the file's pages wait no more."""
    conn.execute("DELETE FROM ocr_queue WHERE path = ?", (path,))


def queue_scan(conn: Connection, record: DocumentRecord, pages: int) -> None:
    """Queue a file that has no text layer at all (no document is written for it yet)."""
    with transaction(conn):
        queue_row(conn, record, pages)


def unqueue(conn: Connection, paths: list[str]) -> None:
    with transaction(conn):
        conn.executemany("DELETE FROM ocr_queue WHERE path = ?", [(p,) for p in paths])


def queued_scans(conn: Connection) -> list[QueuedScan]:
    """Every queued file, oldest first."""
    rows = conn.execute(
        "SELECT path, rel_path, content_hash, size, mtime, chunking, pages, queued_at"
        " FROM ocr_queue ORDER BY queued_at, path"
    ).fetchall()
    return [QueuedScan(DocumentRecord(*row[:6]), row[6], row[7]) for row in rows]


def waiting_pages(conn: Connection) -> tuple[int, int]:
    """(pages, files) waiting for OCR."""
    pages, files = conn.execute(
        "SELECT coalesce(sum(pages), 0), count(*) FROM ocr_queue"
    ).fetchone()
    return int(pages), int(files)
