"""The folders a user added (`roots`) as a person sees them: counts, and undoing an add."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from kb_search.sanitize import path_text
from kb_search.store.db import Connection


@dataclass
class RootSummary:
    path: str
    documents: int
    chunks: int
    added_at: float
    tags: list[str] = field(default_factory=list)
    doc_type: str | None = None
    exists: bool = True


@dataclass
class Removal:
    """What `kb remove` did: documents removed, folders forgotten, refs that matched nothing."""

    removed: list[int] = field(default_factory=list)
    forgotten_roots: list[str] = field(default_factory=list)
    not_found: list[str] = field(default_factory=list)


def _under(column: str) -> str:
    # A prefix test without LIKE: folder names may hold % and _.
    return f"substr({column}, 1, length(?)) = ?"


def _prefix(folder: str) -> str:
    return folder.rstrip(os.sep) + os.sep


def root_summaries(conn: Connection) -> list[RootSummary]:
    """Every added folder with the documents and chunks indexed under it."""
    summaries = []
    rows = conn.execute("SELECT path, added_at, tags, doc_type FROM roots ORDER BY path")
    for path, added_at, tags, doc_type in rows.fetchall():
        prefix = _prefix(path)
        documents, chunks = conn.execute(
            f"SELECT count(*), coalesce(sum(chunk_count), 0) FROM documents WHERE {_under('path')}",
            (prefix, prefix),
        ).fetchone()
        summaries.append(
            RootSummary(
                path, documents, chunks, added_at, json.loads(tags or "[]"), doc_type,
                os.path.isdir(path),
            )
        )  # fmt: skip
    return summaries


def documents_under(conn: Connection, folder: str) -> list[tuple[int, str]]:
    """(id, path) of the documents inside `folder` (an absolute, resolved path)."""
    prefix = _prefix(folder)
    rows = conn.execute(
        f"SELECT id, path FROM documents WHERE {_under('path')} ORDER BY id", (prefix, prefix)
    )
    return [(row[0], row[1]) for row in rows.fetchall()]


def roots_at_or_under(conn: Connection, folder: str) -> list[str]:
    prefix = _prefix(folder)
    rows = conn.execute(
        f"SELECT path FROM roots WHERE path = ? OR {_under('path')} ORDER BY path",
        (folder.rstrip(os.sep) or os.sep, prefix, prefix),
    )
    return [row[0] for row in rows.fetchall()]


def forget_roots(conn: Connection, paths: list[str]) -> None:
    conn.executemany("DELETE FROM roots WHERE path = ?", [(path,) for path in paths])


def add_roots(conn: Connection, roots: list[Path]) -> None:
    """Remember folders `kb add` was given (already there: kept as they were)."""
    now = time.time()
    conn.executemany(
        "INSERT OR IGNORE INTO roots(path, added_at) VALUES (?, ?)",
        [(path_text(root), now) for root in roots],
    )


def load_roots(conn: Connection) -> list[Path]:
    return [Path(r[0]) for r in conn.execute("SELECT path FROM roots ORDER BY path")]


# The rule every writer keeps: nothing is written under a folder `kb remove` forgot, unless
# the folder (or a path above or below it) is added again. A removal that lands while an
# `add` or `sync` of that folder still runs therefore sticks; the check runs inside the
# writer's own transaction (`removed_folder_holds`), so no write slips in between.


# The removed folder (column `path`) holds the given path: a prefix test, as in `_under`.
_HOLDS = "substr(?, 1, length(rtrim(path, ?)) + 1) = rtrim(path, ?) || ?"


def remember_removed_roots(conn: Connection, folders: list[str]) -> None:
    """Mark forgotten folders as removed (call inside the removal's transaction)."""
    now = time.time()
    conn.executemany(
        "INSERT OR REPLACE INTO removed_roots(path, removed_at) VALUES (?, ?)",
        [(folder, now) for folder in folders],
    )


def lift_removed_roots(conn: Connection, paths: list[str]) -> None:
    """A path added again: removed folders at, above or below it take writes again."""
    for path in paths:
        prefix = _prefix(path)
        conn.execute(
            f"DELETE FROM removed_roots WHERE path = ? OR {_under('path')} OR {_HOLDS}",
            (path, prefix, prefix, path, os.sep, os.sep, os.sep),
        )


def removed_folder_holds(conn: Connection, path: str) -> bool:
    """Whether `path` lies in a folder `kb remove` forgot (and nobody added again)."""
    row = conn.execute(
        f"SELECT 1 FROM removed_roots WHERE {_HOLDS} LIMIT 1", (path, os.sep, os.sep, os.sep)
    ).fetchone()
    return row is not None
