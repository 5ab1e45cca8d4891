"""Opening the SQLite file: extension-capable binding, WAL, numbered migrations."""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

import sqlean as sqlite

from kb_search.errors import DBError  # noqa: F401 - re-exported
from kb_search.regular import NotRegularFile, check_regular
from kb_search.sanitize import printable
from kb_search.store.migrations import MIGRATIONS

Connection = sqlite.Connection
DatabaseError = sqlite.DatabaseError
OperationalError = sqlite.OperationalError
ProgrammingError = sqlite.ProgrammingError
IntegrityError = sqlite.IntegrityError

BUSY_TIMEOUT_MS = 30_000


def _sql_path_match(pattern: str, rel_path: str, abs_path: str) -> int:
    from kb_search.store.globs import path_matches

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


def connect(
    path: Path | str,
    readonly: bool = False,
    create: bool = False,
    adopt_empty: bool = False,
    trace: Callable[[str], None] | None = None,
) -> Connection:
    """Open the DB. Writers migrate it; readers open it read-only and never write.

    `create` makes a missing file; an existing empty file is made a kb database only with
    `adopt_empty` (`kb init`), and a file of another program never is. `trace` is called with
    each SQL statement the connection runs, from the first (`KB_TRACE_SQL`: `sql_tracer`)."""
    path = Path(path) if str(path) != ":memory:" else path
    if isinstance(path, Path):
        _check_regular(path)
        if not path.exists() and not create:
            raise DBError(f"no index at {path} yet: `kb add FOLDER` creates it (or pass --db)")
        if path.exists() and not readonly:
            _check_writable(path, adopt_empty)
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if readonly and isinstance(path, Path):
            conn = sqlite.connect(
                f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None
            )
        else:
            conn = sqlite.connect(str(path), isolation_level=None)
        if trace is not None:
            conn.set_trace_callback(trace)
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
    if version == 0 and isinstance(path, Path) and _foreign(conn):
        conn.close()
        raise DBError(
            f"{path} is not a kb database (it holds another program's tables): pass another --db"
        )
    if not readonly:
        if create and isinstance(path, Path):
            # New files and ingests use WAL (readers never block); other writers keep the
            # file's mode, so `kb doctor` on an exported rollback-journal copy leaves it as is.
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        migrate(conn)
    return conn


def sql_tracer(stream: TextIO) -> Callable[[str], None]:
    """A `trace` for `connect` that writes each statement on one line, `sql: ...`, to `stream`
    (control characters escaped: bound values may be file content)."""

    def write(statement: str) -> None:
        stream.write(f"sql: {printable(' '.join(statement.split()))}\n")
        stream.flush()

    return write


def _check_regular(path: Path) -> None:
    """A FIFO, device or folder at the DB path is refused before SQLite opens it: a read-only
    open of a FIFO would wait for a writer forever."""
    try:
        check_regular(path)
    except NotRegularFile as exc:
        raise DBError(f"{path}: {exc.strerror}, not a kb database (check --db)") from exc
    except OSError as exc:
        raise DBError(f"cannot open {path}: {exc.strerror or exc}") from exc


def _check_writable(path: Path, adopt_empty: bool) -> None:
    if path.is_file() and path.stat().st_size == 0 and not adopt_empty:
        raise DBError(
            f"{path} is an empty file, not a kb database: `kb init --db {path}` makes it one"
        )
    for target in (path, path.parent):
        if not os.access(target, os.W_OK):
            raise DBError(
                f"{target} is read-only: writing needs write access to the database and its"
                " folder (reading commands still work)"
            )


def _foreign(conn: Connection) -> bool:
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return bool(names) and "meta" not in names


_SQLITE_PROBLEMS = (
    ("readonly database", "the database is read-only here: writing needs write access to it and"
     " its folder (reading commands still work)"),
    ("database or disk is full", "the disk is full: free some space and run the command again;"
     " everything written before is kept"),
    ("database is locked",
     "the database stayed busy (another kb kept writing for 30 s): try again"),
    ("disk i/o error", "the disk reported an I/O error: check it, then run `kb doctor`"),
    ("malformed",
     "the database file is damaged: run `kb doctor`; `kb export NEW.db` salvages what is"
     " readable into a new file"),
    ("not a database", "this file is not a kb database (or it is damaged): check --db"),
)  # fmt: skip


def explain(exc: BaseException) -> DBError | None:
    """A DBError that says what to do, for the SQLite errors a user can meet; else None."""
    text = str(exc).lower()
    for needle, message in _SQLITE_PROBLEMS:
        if needle in text:
            return DBError(message)
    return None


@contextmanager
def progress_handler(
    conn: Connection, handler: Callable[[], int | bool], every: int = 1000
) -> Iterator[Connection]:
    """`handler()` called every `every` SQLite VM steps while inside; a true return aborts the
    statement running (OperationalError "interrupted"): a search past its budget, Ctrl-C."""
    conn.set_progress_handler(handler, every)
    try:
        yield conn
    finally:
        conn.set_progress_handler(None, 0)


@contextmanager
def transaction(conn: Connection) -> Iterator[Connection]:
    """One write transaction; BEGIN IMMEDIATE so a second writer waits, not deadlocks.
    Inside another one it joins it: a verb made of several writes (removing a folder's
    documents and forgetting the folder) commits whole or not at all."""
    if conn.in_transaction:
        yield conn
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        # SQLite rolls back by itself on some errors (a full disk): roll back only what is
        # still open, so the original error is the one reported.
        if conn.in_transaction:
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


def database_file(conn: Connection) -> Path | None:
    """The file behind the connection's main database (None for an in-memory DB)."""
    for _seq, name, file in conn.execute("PRAGMA database_list"):
        if name == "main":
            return Path(file) if file else None
    return None


def data_version(conn: Connection) -> int:
    """Changes only when another connection commits: a cheap first test for "anything new"."""
    return conn.execute("PRAGMA data_version").fetchone()[0]


@contextmanager
def read_snapshot(conn: Connection) -> Iterator[Connection]:
    """Several reads that see one state of the database (a deferred transaction)."""
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        conn.execute("COMMIT")


def rows_in(
    conn: Connection, sql: str, values: Sequence[Any], params: Sequence[Any] = (), batch: int = 500
) -> Iterator[tuple[Any, ...]]:
    """Rows of `sql`, whose `{marks}` is an IN list over `values`, `batch` values at a time
    (SQLite caps the parameters of one statement); `params` come before them."""
    values = list(values)
    for start in range(0, len(values), batch):
        part = values[start : start + batch]
        yield from conn.execute(sql.format(marks=",".join("?" * len(part))), [*params, *part])

