"""Health checks for `kb doctor`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from kb_search.errors import ModelError
from kb_search.store.db import Connection, DatabaseError, load_vec_extension, schema_version
from kb_search.store.migrations import MIGRATIONS


@dataclass
class Check:
    name: str
    ok: bool
    detail: str

    def to_dict(self) -> dict:
        return asdict(self)


def _check(name: str, fn: Callable[[], str]) -> Check:
    try:
        return Check(name, True, fn())
    except AssertionError as exc:
        return Check(name, False, str(exc))
    except DatabaseError as exc:
        return Check(name, False, f"{type(exc).__name__}: {exc}")


def _integrity(conn: Connection) -> str:
    rows = [r[0] for r in conn.execute("PRAGMA integrity_check")]
    assert rows == ["ok"], "; ".join(rows[:5])
    return "ok"


def _fts_in_sync(conn: Connection) -> str:
    # 'integrity-check' with rank=1 also compares the index against the content rows; it is
    # an INSERT command, which a read-only database refuses without anything being wrong.
    try:
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
        conn.execute("INSERT INTO chunks_cjk(chunks_cjk, rank) VALUES ('integrity-check', 1)")
    except DatabaseError as exc:
        if "readonly" in str(exc) or "read-only" in str(exc):
            return "not checked: the database is read-only here"
        raise
    chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    return f"{chunks} chunks indexed"


def _chunk_counts(conn: Connection) -> str:
    bad = conn.execute(
        "SELECT count(*) FROM documents d WHERE chunk_count !="
        " (SELECT count(*) FROM chunks c WHERE c.document_id = d.id)"
    ).fetchone()[0]
    assert bad == 0, f"{bad} documents whose chunk count does not match their chunks"
    orphans = conn.execute(
        "SELECT count(*) FROM chunks WHERE document_id NOT IN (SELECT id FROM documents)"
    ).fetchone()[0]
    assert orphans == 0, f"{orphans} chunks without a document"
    return "documents and chunks agree"


def _schema(conn: Connection) -> str:
    version = schema_version(conn)
    assert version == len(MIGRATIONS), f"schema v{version}, expected v{len(MIGRATIONS)}"
    return f"v{version}"


def _vec_extension(conn: Connection) -> str:
    problem = load_vec_extension(conn)
    assert problem is None, f"sqlite-vec does not load: {problem}"
    return conn.execute("SELECT 'sqlite-vec ' || vec_version()").fetchone()[0]


def _sqlite(conn: Connection) -> str:
    version = conn.execute("SELECT sqlite_version()").fetchone()[0]
    return f"SQLite {version}, FTS5 + trigram available"


def _parsers() -> list[Check]:
    """Which PDF and office paths `kb add` uses here (informational: never a failure)."""
    from kb_search.ingest.formats.docling import docling_available, pdf_path_report

    office = docling_available("docx")
    detail = "Docling" if office is None else f"unavailable ({office})"
    return [Check("pdf_path", True, pdf_path_report()), Check("office_documents", True, detail)]


def model_checks(conn: Connection, choice: Any, load: Callable[[str], Any]) -> list[Check]:
    """The model loads and matches the DB. `choice` is the configured ModelChoice,
    `load(name)` loads an embedder."""
    from kb_search.vectors.model import resolve_db_model

    try:
        name = resolve_db_model(conn, choice)
    except ModelError as exc:
        return [Check("model", False, str(exc))]
    if name is None:
        return [Check("model", False, "no embedding model recorded: run `kb init`")]
    try:
        embedder = load(name)
    except ModelError as exc:
        return [Check("model", False, str(exc))]
    source = getattr(getattr(embedder, "info", None), "source", "in process")
    return [Check("model", True, f"{name} ({embedder.dim} dims, {source})")]


def _vectors_in_sync(conn: Connection) -> str:
    from kb_search.vectors.model import vector_sync_detail
    from kb_search.vectors.tables import db_model

    name = db_model(conn)
    if name is None:
        return "no embedding model bound: lexical search only"
    ok, detail = vector_sync_detail(conn, name)
    assert ok, detail
    return detail


def storage_checks(conn: Connection) -> list[Check]:
    """What the file itself must satisfy: no model needed (the consistency tests use these)."""
    return [
        _check("sqlite", lambda: _sqlite(conn)),
        _check("schema", lambda: _schema(conn)),
        _check("integrity_check", lambda: _integrity(conn)),
        _check("fts_in_sync", lambda: _fts_in_sync(conn)),
        _check("chunk_counts", lambda: _chunk_counts(conn)),
        _check("vec_extension", lambda: _vec_extension(conn)),
        _check("vectors_in_sync", lambda: _vectors_in_sync(conn)),
    ]


def run_checks(conn: Connection, model: list[Check] | None = None) -> list[Check]:
    """Every check: the file's, the model's (given), then which parsers this install uses."""
    checks = storage_checks(conn)
    return checks[:-1] + (model or []) + checks[-1:] + _parsers()
