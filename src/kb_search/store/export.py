"""`kb export`: a consistent, self-contained copy of the live database.

`VACUUM INTO` reads one snapshot (a WAL read transaction, so a running ingest neither blocks
it nor leaks half a document into it) and writes a compact file. The copy is switched to
rollback-journal mode so it opens read-only where no `-wal`/`-shm` file can be created
(a read-only directory, package data).

Only a regular file is ever written: the copy is made in a private directory beside the target,
synced, then renamed over it; a device, FIFO or socket (or a link to one) at the target is
refused, --force or not. A damaged database (VACUUM INTO stops at the first bad page) is
salvaged instead: every row that still reads, table by table, into a fresh file (salvage.py).
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from kb_search.errors import ExportError  # noqa: F401 - re-exported
from kb_search.progress import NoProgress, Progress
from kb_search.store import db
from kb_search.store.db import sqlite

MB = 1_000_000
_CHECK_EVERY = 20_000  # SQLite VM instructions between progress checks


@dataclass
class ExportResult:
    path: str
    documents: int
    chunks: int
    bytes: int
    seconds: float
    # set when the database was damaged and its readable rows were salvaged
    salvage: dict | None = field(default=None)

    def line(self) -> str:
        text = (
            f"Exported {self.documents} documents ({self.chunks} chunks) to {self.path}"
            f" ({self.bytes / 1e6:.1f} MB) in {self.seconds:.2f} s."
        )
        if self.salvage:
            text += (
                f" The database is damaged: this is what could be read"
                f" ({self.salvage['unreadable_ranges']} unreadable row ranges skipped,"
                f" {self.salvage['dropped_documents']} incomplete documents left out);"
                " use the copy with --db, and `kb sync` reads the missing files again."
            )
        return text

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
    _check_replaceable(target)
    if os.path.lexists(target) and not force:
        raise ExportError(f"{target} exists: pass --force to overwrite it")
    if not target.parent.is_dir():
        raise ExportError(f"no such directory: {target.parent}")
    # A private directory: nobody else can have put a link or a FIFO at the copy's own path.
    try:
        aside = Path(
            tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".kb-export", dir=target.parent)
        )
    except OSError as exc:
        raise ExportError(f"cannot write in {target.parent}: {exc.strerror or exc}") from exc
    temp = aside / target.name
    salvaged = None
    try:
        try:
            _vacuum_into(conn, temp, progress or NoProgress())
            documents, chunks = _finish_copy(temp)
        except (db.DatabaseError, ExportError) as exc:
            if not _damaged(exc):
                raise
            from kb_search.store.salvage import salvage_into

            _remove(temp)
            salvaged = salvage_into(conn, temp).to_dict()
            documents, chunks = _finish_copy(temp)
        _fsync(temp)
        _check_replaceable(target)  # again: it may have changed while the copy was made
        os.replace(temp, target)
        _fsync(target.parent)
    finally:
        shutil.rmtree(aside, ignore_errors=True)
    return ExportResult(
        str(target),
        documents,
        chunks,
        target.stat().st_size,
        time.perf_counter() - started,
        salvaged,
    )


def _check_replaceable(target: Path) -> None:
    """Only a regular file (or a link to one, or a dangling link) may be replaced: a device,
    FIFO or socket never, even with --force."""
    try:
        kind = os.stat(target).st_mode
    except FileNotFoundError:
        return  # nothing there, or a dangling link: the rename replaces the link itself
    if not stat.S_ISREG(kind) and not stat.S_ISDIR(kind):
        what = "a device" if stat.S_ISCHR(kind) or stat.S_ISBLK(kind) else "not a regular file"
        if stat.S_ISFIFO(kind):
            what = "a FIFO"
        raise ExportError(
            f"{target} is {what}: kb export writes only regular files (--force or not)"
        )


def _damaged(exc: Exception) -> bool:
    """The database (or the copy VACUUM made of it) is corrupt: salvage, not give up."""
    text = str(exc).lower()
    return "malformed" in text or "corrupt" in text or "integrity check" in text


def _fsync(path: Path) -> None:
    """The copy's bytes, then the rename, on disk before kb says it is done."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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

    try:
        with db.progress_handler(conn, report, _CHECK_EVERY):
            conn.execute("VACUUM INTO ?", (str(temp),))
    except db.OperationalError:
        if interrupted:
            raise KeyboardInterrupt from None
        raise
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


def _redact_secrets(copy: db.Connection) -> None:
    """No secret leaves in a copy: an endpoint an older kb recorded with its userinfo
    (`http://user:key@host`) is written without it, and the old bytes are zeroed
    (secure_delete), not left in a free page."""
    from kb_search.net import redact_url

    row = copy.execute("SELECT value FROM meta WHERE key = 'model_endpoint'").fetchone()
    if row and row[0] and redact_url(row[0]) != row[0]:
        copy.execute("PRAGMA secure_delete = ON")
        copy.execute(
            "UPDATE meta SET value = ? WHERE key = 'model_endpoint'", (redact_url(row[0]),)
        )


def _finish_copy(path: Path) -> tuple[int, int]:
    """Rollback-journal mode, integrity verified; returns (documents, chunks)."""
    copy = sqlite.connect(str(path), isolation_level=None)
    try:
        copy.execute("PRAGMA journal_mode = DELETE")
        _redact_secrets(copy)
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
