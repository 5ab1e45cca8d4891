"""Helpers shared by test modules in different folders (importable: tests/ is on sys.path)."""

from __future__ import annotations

from pathlib import Path

from kb_search.store import db


def document_count(path: Path | str) -> int:
    """Documents in a DB another process may be creating or writing; 0 until it is ready."""
    try:
        conn = db.connect(path, readonly=True)
    except db.DBError:
        return 0
    try:
        return conn.execute("SELECT count(*) FROM documents").fetchone()[0]
    except db.DatabaseError:
        return 0
    finally:
        conn.close()
