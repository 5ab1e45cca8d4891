"""What `kb doctor` asks the database: integrity, the FTS indexes, counts that must agree, and
the rows its quality checks read. Answers only; doctor decides what is wrong."""

from __future__ import annotations

from collections.abc import Iterator

from kb_search.store.db import Connection


def sqlite_version(conn: Connection) -> str:
    return conn.execute("SELECT sqlite_version()").fetchone()[0]


def vec_version(conn: Connection) -> str:
    return conn.execute("SELECT vec_version()").fetchone()[0]


def integrity_problems(conn: Connection) -> list[str]:
    """SQLite's integrity_check lines (["ok"] when the file is sound)."""
    return [row[0] for row in conn.execute("PRAGMA integrity_check")]


def check_fts_indexes(conn: Connection) -> None:
    """FTS5's own check of both full-text indexes against their content rows; raises a
    DatabaseError when one is out of step (or, harmlessly, when the file is read-only: the
    check is an INSERT command)."""
    conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
    conn.execute("INSERT INTO chunks_cjk(chunks_cjk, rank) VALUES ('integrity-check', 1)")


def chunk_count_mismatches(conn: Connection) -> tuple[int, int]:
    """(documents whose chunk_count differs from their chunks, chunks without a document)."""
    bad = conn.execute(
        "SELECT count(*) FROM documents d WHERE chunk_count !="
        " (SELECT count(*) FROM chunks c WHERE c.document_id = d.id)"
    ).fetchone()[0]
    orphans = conn.execute(
        "SELECT count(*) FROM chunks WHERE document_id NOT IN (SELECT id FROM documents)"
    ).fetchone()[0]
    return bad, orphans


def document_files(conn: Connection) -> Iterator[tuple[str, str, int, float, str, str]]:
    """(path, rel_path, size, mtime, content_hash, chunking) of every document, as stored."""
    yield from conn.execute(
        "SELECT path, rel_path, size, mtime, content_hash, chunking FROM documents"
    )


# Chunks of documents whose chunking fingerprint starts (or not) with the current chunker's.
_BY_CHUNKER = "(substr(d.chunking, 1, ?) = ?) = ?"


def chunk_texts_for_quality(
    conn: Connection, chunker: str, by_current: bool
) -> Iterator[tuple[str, str, str, int | None, int | None, int | None]]:
    """(text, doc_type, rel_path, line_start, line_end, page) of the chunks of documents with
    more than one chunk, chunked by `chunker` (by_current) or by another version."""
    yield from conn.execute(
        "SELECT c.text, d.doc_type, d.rel_path, c.line_start, c.line_end, c.page_start"
        " FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.chunk_count > 1"
        f" AND {_BY_CHUNKER}",
        (len(chunker), chunker, int(by_current)),
    )


def repeated_spans(
    conn: Connection, chunker: str, by_current: bool, at_least: int
) -> list[tuple[str, int, int, int]]:
    """(rel_path, line_start, line_end, chunks) of line ranges cut into `at_least`+ chunks."""
    return conn.execute(
        "SELECT d.rel_path, c.line_start, c.line_end, count(*) FROM chunks c"
        f" JOIN documents d ON d.id = c.document_id WHERE c.line_start IS NOT NULL"
        f" AND {_BY_CHUNKER} GROUP BY c.document_id, c.line_start, c.line_end"
        " HAVING count(*) >= ? ORDER BY count(*) DESC",
        (len(chunker), chunker, int(by_current), at_least),
    ).fetchall()
