"""Salvage a damaged database: every row that still reads, into a fresh, consistent file.

VACUUM INTO (and .dump) stop at the first unreadable page. Here the schema is replayed into a
new file and each table is read in rowid order; where a read fails, the walk looks for the
first rowid past the damage (doubling steps, then bisection) and goes on from there. Then kb's
own consistency is restored so the copy passes `kb doctor`: chunks without their document and
documents that lost chunks or vectors are left out (`kb sync` reads those files again), the
full-text indexes are rebuilt from the rows kept, and indexes are made anew.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from kb_search.errors import ExportError
from kb_search.store import db

MIN_ROWID, MAX_ROWID = -(2**63), 2**63 - 1
BATCH = 500
_EXTERNAL_CONTENT = re.compile(r"content\s*=\s*'([^']+)'", re.IGNORECASE)


@dataclass
class Salvage:
    tables: int = 0
    rows: int = 0
    unreadable_ranges: int = 0  # places where reading failed and rows were skipped
    dropped_documents: int = 0  # documents left out: some of their chunks or vectors were lost

    def to_dict(self) -> dict:
        return asdict(self)


def salvage_into(source: db.Connection, target: Path) -> Salvage:
    """Copy what `source` can still read into a new database at `target`."""
    entries = _schema(source)
    virtual = {name for kind, name, sql in entries if kind == "table" and _is_virtual(sql)}

    def shadow(name: str) -> bool:  # made by its virtual table's CREATE
        return any(name.startswith(f"{v}_") for v in virtual)

    tables = [(n, sql) for k, n, sql in entries if k == "table" and not n.startswith("sqlite_")]
    tables = [(n, sql) for n, sql in tables if not shadow(n)]
    report = Salvage(tables=len(tables))
    copy = db.sqlite.connect(str(target), isolation_level=None)
    try:
        db.load_vec_extension(copy)
        copy.execute("PRAGMA journal_mode = OFF")
        copy.execute("BEGIN")
        for _, sql in tables:
            copy.execute(sql)
        version = source.execute("PRAGMA user_version").fetchone()[0]
        copy.execute(f"PRAGMA user_version = {int(version)}")
        for name, sql in tables:
            if not _is_virtual(sql):
                _copy_table(source, copy, name, report)
        if _has_table(copy, "sqlite_sequence"):
            _copy_table(source, copy, "sqlite_sequence", report)
        for kind, _, sql in entries:
            if kind == "view":
                copy.execute(sql)
        for name, sql in tables:
            if _is_virtual(sql) and not _EXTERNAL_CONTENT.search(sql):
                _copy_virtual(source, copy, name, report)
        report.dropped_documents = _drop_incomplete_documents(copy)
        for name, sql in tables:
            if _is_virtual(sql) and _EXTERNAL_CONTENT.search(sql):
                copy.execute(f"INSERT INTO {_quote(name)}({_quote(name)}) VALUES ('rebuild')")
        for kind, _, sql in entries:
            if kind in ("index", "trigger"):
                copy.execute(sql)
        copy.execute("COMMIT")
    except db.DatabaseError as exc:
        raise ExportError(f"the salvaged copy could not be written: {exc}") from exc
    finally:
        copy.close()
    return report


def damage_advice(path: Path) -> str:
    """What to do about a damaged database file, as one line that works: salvage what reads
    (`kb export`), or, when even the schema is unreadable, build the index again."""
    try:
        conn = db.sqlite.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except db.DatabaseError as exc:
        return _beyond_salvage(path, exc)
    try:
        _schema(conn)
    except ExportError as exc:
        return str(exc)
    finally:
        conn.close()
    return (
        f"the database file is damaged: `kb export NEW.db` salvages what is readable into a new"
        f" file; then use it (`--db NEW.db`, or move it over {path})"
    )


def _beyond_salvage(path: Path | None, exc: Exception) -> str:
    where = f"move {path} aside" if path else "move the file aside"
    return (
        f"the database is damaged beyond salvage (its schema cannot be read: {exc}): {where}"
        " and index again (`kb add FOLDER` for each folder you had added)"
    )


def _schema(source: db.Connection) -> list[tuple[str, str, str]]:
    try:
        return source.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid"
        ).fetchall()
    except db.DatabaseError as exc:
        raise ExportError(_beyond_salvage(db.database_file(source), exc)) from exc


def _is_virtual(sql: str) -> bool:
    return sql.lstrip().upper().startswith("CREATE VIRTUAL TABLE")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _has_table(conn: db.Connection, name: str) -> bool:
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone()
    return found is not None


def _columns(conn: db.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({_quote(table)})")]


def _copy_table(source: db.Connection, copy: db.Connection, name: str, report: Salvage) -> None:
    columns = _columns(source, name)
    listed = ", ".join(_quote(c) for c in columns)
    insert = (
        f"INSERT OR IGNORE INTO {_quote(name)}(rowid, {listed})"
        f" VALUES ({', '.join('?' * (len(columns) + 1))})"
    )
    for row in readable_rows(source, f"SELECT rowid, {listed} FROM {_quote(name)}", report):
        copy.execute(insert, row)
        report.rows += 1


def readable_rows(source: db.Connection, select: str, report: Salvage) -> Iterator[tuple]:
    """The rows of `select` (whose first column is the rowid) in rowid order, stepping over
    what cannot be read."""
    query = select + " WHERE rowid {} ? ORDER BY rowid LIMIT ?"
    after, op, limit = MIN_ROWID, ">=", BATCH
    while True:
        try:
            rows = source.execute(query.format(op), (after, limit)).fetchall()
        except db.DatabaseError:
            if limit > 1:  # read up to the damage one row at a time
                limit = 1
                continue
            report.unreadable_ranges += 1
            past = _past_damage(source, query, after)
            if past is None:
                return
            after, op, limit = past, ">", BATCH
            continue
        if not rows:
            return
        yield from rows
        after, op, limit = rows[-1][0], ">", BATCH


def _past_damage(source: db.Connection, query: str, failed: int) -> int | None:
    """The smallest rowid after `failed` from which reading works again (None: none does)."""

    def reads(rowid: int) -> bool:
        try:
            source.execute(query.format(">"), (rowid, 1)).fetchall()
        except db.DatabaseError:
            return False
        return True

    low, step = failed, 1
    while True:
        high = min(failed + step, MAX_ROWID)
        if reads(high):
            break
        if high == MAX_ROWID:
            return None
        low, step = high, step * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if reads(middle) else (middle, high)
    return high


def _copy_virtual(source: db.Connection, copy: db.Connection, name: str, report: Salvage) -> None:
    """A virtual table (a vec0 vector table): whole when it reads, else row by row through
    the rowids its shadow table lists."""
    columns = _columns(source, name)
    listed = ", ".join(_quote(c) for c in columns)
    insert = (
        f"INSERT INTO {_quote(name)}(rowid, {listed})"
        f" VALUES ({', '.join('?' * (len(columns) + 1))})"
    )
    copy.execute("SAVEPOINT whole")
    try:
        rows = source.execute(f"SELECT rowid, {listed} FROM {_quote(name)}").fetchall()
        copy.executemany(insert, rows)
        copy.execute("RELEASE whole")
        report.rows += len(rows)
        return
    except db.DatabaseError:
        copy.execute("ROLLBACK TO whole")
        copy.execute("RELEASE whole")
    rowids = f"{name}_rowids"
    if not _has_table(source, rowids):
        report.unreadable_ranges += 1
        return
    point = f"SELECT rowid, {listed} FROM {_quote(name)} WHERE rowid = ?"
    for (rowid,) in readable_rows(source, f"SELECT rowid FROM {_quote(rowids)}", report):
        try:
            row = source.execute(point, (rowid,)).fetchone()
        except db.DatabaseError:
            report.unreadable_ranges += 1
            continue
        if row is not None:
            copy.execute(insert, row)
            report.rows += 1


def _drop_incomplete_documents(copy: db.Connection) -> int:
    """kb's own consistency: no chunk without its document, no document missing a chunk or
    (for the bound model) a vector. Returns how many documents were left out."""
    if not (_has_table(copy, "documents") and _has_table(copy, "chunks")):
        return 0
    from kb_search.store.vectors import db_model, table_for

    copy.execute("DELETE FROM chunks WHERE document_id NOT IN (SELECT id FROM documents)")
    incomplete = {
        row[0]
        for row in copy.execute(
            "SELECT id FROM documents d WHERE chunk_count !="
            " (SELECT count(*) FROM chunks c WHERE c.document_id = d.id)"
        )
    }
    model = db_model(copy)
    table = table_for(copy, model) if model else None
    if table is not None:
        without_vector = (
            "SELECT DISTINCT document_id FROM chunks"
            f" WHERE id NOT IN (SELECT rowid FROM {_quote(table.name)})"
        )
        incomplete |= {row[0] for row in copy.execute(without_vector)}
    for document_id in incomplete:
        copy.execute("DELETE FROM chunks WHERE document_id = ?", (document_id,))
        if _has_table(copy, "document_tags"):
            copy.execute("DELETE FROM document_tags WHERE document_id = ?", (document_id,))
        copy.execute("DELETE FROM documents WHERE id = ?", (document_id,))
    if table is not None:
        copy.execute(f"DELETE FROM {_quote(table.name)} WHERE rowid NOT IN (SELECT id FROM chunks)")
    return len(incomplete)
