"""What kb remembers about files so that a rerun honours what happened and what the user said.

- A file that failed to parse (or held no text) stays skipped until it changes: same size and
  mtime, or else the same content hash, under the same chunking means the same outcome, so
  a no-op `kb sync` never re-parses it (`--retry-failed` tries again).
- A file removed with `kb remove` while it lies under an added root stays out of the index
  until it is added again by name (`kb add FILE`); `kb sync` and `kb add ROOT` skip it.
- A root's `--tag`/`--type` are stored with the root and apply to files found there later.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kb_search.sanitize import path_text
from kb_search.store.db import Connection, transaction

FAILED, EMPTY, REMOVED = "failed", "empty", "removed"


@dataclass
class Skipped:
    """A file kb does not index on purpose, and what it looked like then."""

    kind: str  # FAILED | EMPTY | REMOVED
    reason: str = ""
    size: int | None = None
    mtime: float | None = None
    content_hash: str | None = None
    chunking: str = ""


def load_skipped(conn: Connection) -> dict[str, Skipped]:
    rows = conn.execute(
        "SELECT path, kind, reason, size, mtime, content_hash, chunking FROM skipped_files"
    )
    return {r[0]: Skipped(*r[1:]) for r in rows}


def remember_skipped(conn: Connection, path: str, entry: Skipped) -> None:
    with transaction(conn):
        conn.execute(
            "INSERT INTO skipped_files(path, kind, reason, size, mtime, content_hash, chunking,"
            " recorded_at) VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(path) DO UPDATE SET"
            " kind=excluded.kind, reason=excluded.reason, size=excluded.size,"
            " mtime=excluded.mtime, content_hash=excluded.content_hash,"
            " chunking=excluded.chunking, recorded_at=excluded.recorded_at",
            (
                path,
                entry.kind,
                entry.reason,
                entry.size,
                entry.mtime,
                entry.content_hash,
                entry.chunking,
                time.time(),
            ),
        )


def remember_removed(conn: Connection, paths: Iterable[str]) -> None:
    for path in paths:
        remember_skipped(conn, path, Skipped(REMOVED, "removed with `kb remove`"))


def forget(conn: Connection, paths: Iterable[str]) -> None:
    paths = list(paths)
    if not paths:
        return
    with transaction(conn):
        conn.executemany("DELETE FROM skipped_files WHERE path = ?", [(p,) for p in paths])


def touch_skipped(conn: Connection, path: str, size: int, mtime: float) -> None:
    """Same bytes under a new mtime: remember the new mtime, so the next run needs no hash."""
    with transaction(conn):
        conn.execute(
            "UPDATE skipped_files SET size = ?, mtime = ? WHERE path = ?", (size, mtime, path)
        )


# ---- roots ---------------------------------------------------------------------------------


@dataclass
class RootSettings:
    """What `kb add ROOT --tag T --type X` said about every file under ROOT."""

    tags: list[str] = field(default_factory=list)
    doc_type: str | None = None


def load_root_settings(conn: Connection) -> dict[Path, RootSettings]:
    rows = conn.execute("SELECT path, tags, doc_type FROM roots")
    return {Path(r[0]): RootSettings(_tag_list(r[1]), r[2]) for r in rows}


def remember_root_settings(
    conn: Connection, roots: Iterable[Path], tags: Iterable[str], doc_type: str | None
) -> None:
    """Add `tags` to each root's tags; `doc_type`, when given, replaces the root's type."""
    tags = sorted({t.strip() for t in tags if t and t.strip()})
    if not tags and doc_type is None:
        return
    with transaction(conn):
        for root in roots:
            key = path_text(root)
            row = conn.execute("SELECT tags FROM roots WHERE path = ?", (key,)).fetchone()
            if row is None:
                continue
            merged = sorted(set(_tag_list(row[0])) | set(tags))
            conn.execute(
                "UPDATE roots SET tags = ?, doc_type = coalesce(?, doc_type) WHERE path = ?",
                (json.dumps(merged), doc_type, key),
            )


def _tag_list(text: str | None) -> list[str]:
    try:
        value = json.loads(text or "[]")
    except ValueError:
        return []
    return [str(t) for t in value] if isinstance(value, list) else []


def failure_reasons(
    conn: Connection, containing: str, since: float | None = None
) -> list[tuple[str, str]]:
    """(path, reason) of remembered failures whose reason mentions `containing`, by path;
    only those recorded at `since` (time.time()) or later."""
    rows = conn.execute(
        "SELECT path, reason FROM skipped_files WHERE kind = 'failed' AND instr(reason, ?) > 0"
        " AND recorded_at >= ? ORDER BY path",
        (containing, since if since is not None else float("-inf")),
    )
    return [(row[0], row[1]) for row in rows.fetchall()]


def skipped_entry(conn: Connection, path: str) -> Skipped | None:
    """What kb remembers of one file it does not index, if anything."""
    row = conn.execute(
        "SELECT kind, reason, size, mtime, content_hash, chunking FROM skipped_files"
        " WHERE path = ?",
        (path,),
    ).fetchone()
    return Skipped(*row) if row else None
