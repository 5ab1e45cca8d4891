"""`kb export`: a consistent, self-contained copy of the live database.

`VACUUM INTO` reads one snapshot (a WAL read transaction, so a running ingest neither blocks
it nor leaks half a document into it) and writes a compact file. The copy is switched to
rollback-journal mode so it opens read-only where no `-wal`/`-shm` file can be created
(a read-only directory, package data).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from kb_search.errors import ExportError  # noqa: F401 - re-exported
from kb_search.progress import NoProgress, Progress
from kb_search.store import db

MB = 1_000_000
_CHECK_EVERY = 20_000  # SQLite VM instructions between progress checks


@dataclass
class ExportResult:
    path: str
    documents: int
    chunks: int
    bytes: int
    seconds: float

    def line(self) -> str:
        return (
            f"Exported {self.documents} documents ({self.chunks} chunks) to {self.path}"
            f" ({self.bytes / 1e6:.1f} MB) in {self.seconds:.2f} s."
        )

    def to_dict(self) -> dict:
        return dict(self.__dict__, seconds=round(self.seconds, 3))


def export_db(
    conn: db.Connection, target: Path, force: bool = False, progress: Progress | None = None
) -> ExportResult:
    """Write a snapshot of `conn`'s database to `target`, atomically (temp file + rename).
    `progress` counts megabytes written, against the size of the live database."""
    started = time.perf_counter()
    target = Path(os.path.abspath(Path(target).expanduser()))
    if target.is_dir():
        raise ExportError(f"{target} is a directory: give a file name, e.g. {target / 'kb.db'}")
    live = _live_files(conn)
    if os.path.realpath(target) in live:
        raise ExportError(f"{target} is the live database (or one of its files): pick another path")
    if target.exists() and not force:
        raise ExportError(f"{target} exists: pass --force to overwrite it")
    if not target.parent.is_dir():
        raise ExportError(f"no such directory: {target.parent}")
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    _remove(temp)
    try:
        _vacuum_into(conn, temp, progress or NoProgress())
        documents, chunks = _finish_copy(temp)
        os.replace(temp, target)
    finally:
        _remove(temp)
    return ExportResult(
        str(target), documents, chunks, target.stat().st_size, time.perf_counter() - started
    )


def _vacuum_into(conn: db.Connection, temp: Path, progress: Progress) -> None:
    page_count = conn.execute("PRAGMA page_count").fetchone()[0]
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    progress.start(max(1, round(page_count * page_size / MB)), "MB")
    written = 0
    interrupted = False

    def report() -> int:
        nonlocal written, interrupted
        try:
            size = round(os.path.getsize(temp) / MB) if temp.exists() else 0
            if size > written:
                progress.advance(size - written)
                written = size
        except KeyboardInterrupt:
            interrupted = True
            return 1  # a non-zero return aborts the statement
        return 0

    conn.set_progress_handler(report, _CHECK_EVERY)
    try:
        conn.execute("VACUUM INTO ?", (str(temp),))
    except db.OperationalError:
        if interrupted:
            raise KeyboardInterrupt from None
        raise
    finally:
        conn.set_progress_handler(None, 0)
    if interrupted:
        raise KeyboardInterrupt


def _live_files(conn: db.Connection) -> set[str]:
    """The open database file and its -wal/-shm/-journal companions, resolved."""
    files: set[str] = set()
    for _, _, name in conn.execute("PRAGMA database_list"):
        if name:
            real = os.path.realpath(name)
            files |= {real, f"{real}-wal", f"{real}-shm", f"{real}-journal"}
    return files


def _finish_copy(path: Path) -> tuple[int, int]:
    """Rollback-journal mode, integrity verified; returns (documents, chunks)."""
    from kb_search.store.db import sqlite

    copy = sqlite.connect(str(path), isolation_level=None)
    try:
        copy.execute("PRAGMA journal_mode = DELETE")
        result = [r[0] for r in copy.execute("PRAGMA integrity_check")]
        if result != ["ok"]:
            raise ExportError(f"the copy failed its integrity check: {'; '.join(result[:3])}")
        documents = copy.execute("SELECT count(*) FROM documents").fetchone()[0]
        chunks = copy.execute("SELECT count(*) FROM chunks").fetchone()[0]
    finally:
        copy.close()
    return documents, chunks


def _remove(path: Path) -> None:
    for suffix in ("", "-journal", "-wal", "-shm"):
        try:
            os.unlink(f"{path}{suffix}")
        except FileNotFoundError:
            pass
