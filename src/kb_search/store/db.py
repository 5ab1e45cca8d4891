"""Opening the SQLite file: extension-capable binding, WAL, numbered migrations."""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlean as sqlite

from kb_search.errors import DBError  # noqa: F401 - re-exported
from kb_search.store.migrations import MIGRATIONS

Connection = sqlite.Connection
DatabaseError = sqlite.DatabaseError
OperationalError = sqlite.OperationalError
ProgrammingError = sqlite.ProgrammingError
IntegrityError = sqlite.IntegrityError

BUSY_TIMEOUT_MS = 30_000




def glob_to_regex(pattern: str) -> str:
    """Path glob where `*` stays inside one path segment and `**` crosses them."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


_glob_cache: dict[str, re.Pattern[str]] = {}


def path_matches(pattern: str, rel_path: str, abs_path: str) -> bool:
    """A pattern without `/` matches the file name; `/x` the absolute path; else the path
    relative to its root, or any trailing part of the absolute path."""
    rx = _glob_cache.get(pattern)
    if rx is None:
        rx = _glob_cache.setdefault(pattern, re.compile(glob_to_regex(pattern) + r"\Z"))
    if "/" not in pattern:
        return bool(rx.match(abs_path.rsplit("/", 1)[-1]))
    if pattern.startswith("/"):
        return bool(rx.match(abs_path))
    if rx.match(rel_path):
        return True
    parts = abs_path.split("/")
    return any(rx.match("/".join(parts[i:])) for i in range(1, len(parts)))


def _sql_path_match(pattern: str, rel_path: str, abs_path: str) -> int:
    return int(path_matches(pattern, rel_path or "", abs_path or ""))


@functools.cache
def _vec_loadable_path() -> str:
    # `import sqlite_vec` pulls in numpy (~100 ms); a lexical search needs neither, so the
    # bundled library is located without importing the package.
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the sqlite-vec package is not installed")
    return os.path.join(next(iter(spec.submodule_search_locations)), "vec0")


def load_vec_extension(conn: Connection) -> str | None:
    """Load sqlite-vec; return None when it loads, else the reason."""
    try:
        conn.enable_load_extension(True)
        conn.load_extension(_vec_loadable_path())
        conn.enable_load_extension(False)
    except Exception as exc:  # noqa: BLE001 - any failure is reported, not fatal here
        return f"{type(exc).__name__}: {exc}"
    return None


def schema_version(conn: Connection) -> int:
    return conn.execute("PRAGMA user_version").fetchone()[0]


def migrate(conn: Connection) -> int:
    """Run every migration newer than the file, under the write lock (two processes opening
    a new file at once must not both migrate it)."""
    if schema_version(conn) == len(MIGRATIONS):
        return len(MIGRATIONS)
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = schema_version(conn)
        if current > len(MIGRATIONS):
            raise DBError(
                f"database schema v{current} is newer than this kb (v{len(MIGRATIONS)}):"
                " upgrade kb-search"
            )
        for number, script in enumerate(MIGRATIONS[current:], start=current + 1):
            for statement in script:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number}")
            set_meta(conn, "schema_version", str(number))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return len(MIGRATIONS)


def _configure(conn: Connection) -> None:
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.create_function("kb_path_match", 3, _sql_path_match, deterministic=True)
    # Every connection gets sqlite-vec: deleting a document must reach its vectors too.
    # When it cannot load, vector tables fail loudly on use and `kb doctor` says why.
    load_vec_extension(conn)


def connect(path: Path | str, readonly: bool = False, create: bool = False) -> Connection:
    """Open the DB. Writers migrate it; readers open it read-only and never write."""
    path = Path(path) if str(path) != ":memory:" else path
    if isinstance(path, Path):
        if not path.exists() and not create:
            raise DBError(f"no database at {path}: run `kb init` (or pass --db)")
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if readonly and isinstance(path, Path):
            conn = sqlite.connect(
                f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None
            )
        else:
            conn = sqlite.connect(str(path), isolation_level=None)
        _configure(conn)
        version = schema_version(conn)
    except sqlite.DatabaseError as exc:
        raise DBError(f"cannot open {path}: {exc} (is it a kb database?)") from exc
    if readonly and version != len(MIGRATIONS):
        conn.close()
        if version > len(MIGRATIONS):
            raise DBError(f"database schema v{version} is newer than this kb: upgrade kb-search")
        # Readers never write, not even a migration: any writing command upgrades the file.
        raise DBError(
            f"database schema v{version} is older than this kb (v{len(MIGRATIONS)}):"
            " run `kb init` once to upgrade it"
        )
    if not readonly:
        if create and isinstance(path, Path):
            # New files and ingests use WAL (readers never block); other writers keep the
            # file's mode, so `kb doctor` on an exported rollback-journal copy leaves it as is.
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        migrate(conn)
    return conn


@contextmanager
def transaction(conn: Connection) -> Iterator[Connection]:
    """One write transaction; BEGIN IMMEDIATE so a second writer waits, not deadlocks."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def get_meta(conn: Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def set_meta(conn: Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES(?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )
