"""The SQL of search: filtered chunk sets, FTS5 BM25 matches, CJK substring hits,
snippets, and the chunk facts the ranking stages read. The search package decides what to ask;
this module is how it is asked."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kb_search.store.chunk_filter import NO_FILTER, ChunkFilter, where_sql
from kb_search.store.db import Connection, rows_in


def filtered_chunk_ids(conn: Connection, chunk_filter: ChunkFilter) -> set[int]:
    """Chunk ids passing a filter that is not empty."""
    where, params = where_sql(chunk_filter)
    sql = f"SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id WHERE {where}"
    return {r[0] for r in conn.execute(sql, params)}


def indexed_values(conn: Connection, what: str) -> set[str]:
    """Every type, tag or language (of code: the programming languages `lang:` filters on)
    the index holds, lower-cased."""
    sql = {
        "type": "SELECT DISTINCT doc_type FROM documents",
        "tag": "SELECT name FROM tags",
        "language": "SELECT DISTINCT language FROM documents WHERE doc_type = 'code'",
    }[what]
    return {str(row[0]).lower() for row in conn.execute(sql) if row[0]}


def documents_named(conn: Connection, endings: Sequence[str]) -> int:
    """How many documents have a path ending (any case) in one of `endings`."""
    where, params = where_sql(ChunkFilter(name_endings=tuple(endings)))
    row = conn.execute(f"SELECT count(*) FROM documents d WHERE {where}", params).fetchone()
    return int(row[0])


def bm25_matches(
    conn: Connection,
    table: str,
    expr: str,
    weights: str,
    k: int,
    chunk_filter: ChunkFilter = NO_FILTER,
) -> tuple[list[tuple[int, float]], int]:
    """The best `k` (rowid, bm25) of an FTS5 table for `expr` (lower bm25 is better), and how
    many match in all, of the chunks `chunk_filter` lets through."""
    where, params = where_sql(chunk_filter)
    if not where:
        # Fastest path: FTS5 alone, and a count that skips scoring.
        rows = conn.execute(
            f"SELECT rowid, bm25({table}{weights}) AS s FROM {table} WHERE {table} MATCH ?"
            " ORDER BY s, rowid LIMIT ?",
            (expr, k),
        ).fetchall()
        total = len(rows)
        if total == k:
            total = conn.execute(
                f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (expr,)
            ).fetchone()[0]
        return [(r[0], r[1]) for r in rows], total
    # bm25() cannot run inside a join or window query: score the matches first.
    sql = (
        f"WITH m AS MATERIALIZED (SELECT rowid AS id, bm25({table}{weights}) AS s FROM {table}"
        f" WHERE {table} MATCH ?)"
        " SELECT m.id, m.s, count(*) OVER () FROM m"
        " JOIN chunks c ON c.id = m.id JOIN documents d ON d.id = c.document_id"
        f" WHERE {where} ORDER BY m.s, m.id LIMIT ?"
    )
    rows = conn.execute(sql, [expr, *params, k]).fetchall()
    total = rows[0][2] if rows else 0
    return [(r[0], r[1]) for r in rows], total


def cjk_substring_ids(
    conn: Connection, runs: Sequence[str], chunk_filter: ChunkFilter = NO_FILTER
) -> list[int]:
    """Chunks with CJK text containing any of `runs` (for runs too short for trigrams) that
    `chunk_filter` lets through."""
    where, params = where_sql(chunk_filter)
    like = " OR ".join("c.text LIKE ?" for _ in runs)
    sql = (
        "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id"
        f" WHERE c.has_cjk = 1 AND ({like})"
        + (f" AND {where}" if where else "")
        + " ORDER BY c.id"
    )
    return [r[0] for r in conn.execute(sql, [*(f"%{r}%" for r in runs), *params])]


def fts_match_ids(conn: Connection, expr: str) -> set[int]:
    return {
        r[0] for r in conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (expr,))
    }


def fts_snippets(
    conn: Connection, expr: str, ids: Sequence[int], open_mark: str, close_mark: str
) -> dict[int, str]:
    """FTS5 snippets (24 tokens around the matches) of the chunks `expr` matches."""
    marks = ",".join("?" * len(ids))
    sql = (
        f"SELECT rowid, snippet(chunks_fts, 3, ?, ?, '…', 24)"
        f" FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid IN ({marks})"
    )
    return {r[0]: r[1] for r in conn.execute(sql, [open_mark, close_mark, expr, *ids])}


def chunk_texts(conn: Connection, ids: Sequence[int]) -> dict[int, tuple[str, Any, Any]]:
    """id -> (text, heading, symbol)."""
    sql = "SELECT id, text, heading, symbol FROM chunks WHERE id IN ({marks})"
    rows = rows_in(conn, sql, ids)
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def chunk_windows(conn: Connection, ids: Sequence[int]) -> dict[int, str]:
    """id -> the text of that chunk with the one before and the one after it in its document."""
    sql = (
        "SELECT c.id, n.text FROM chunks c JOIN chunks n ON n.document_id = c.document_id"
        " AND n.chunk_index BETWEEN c.chunk_index - 1 AND c.chunk_index + 1"
        " WHERE c.id IN ({marks}) ORDER BY c.id, n.chunk_index"
    )
    windows: dict[int, list[str]] = {}
    for chunk_id, text in rows_in(conn, sql, ids):
        windows.setdefault(chunk_id, []).append(text)
    return {chunk_id: "\n".join(texts) for chunk_id, texts in windows.items()}


def chunk_places(conn: Connection, ids: Sequence[int]) -> dict[int, tuple[int, Any, Any]]:
    """id -> (document_id, heading, page its citation opens; None: not paged). A cited page
    outside page_start..page_end (a crafted index) is not believed, as `StoredChunk.opened_page`
    does not believe it: the place is the page the citation opens."""
    sql = (
        "SELECT id, document_id, heading, CASE WHEN typeof(cited_page) = 'integer'"
        " AND cited_page BETWEEN page_start AND COALESCE(page_end, page_start)"
        " THEN cited_page ELSE page_start END"
        " FROM chunks WHERE id IN ({marks})"
    )
    return {r[0]: (r[1], r[2], r[3]) for r in rows_in(conn, sql, ids)}


def chunk_positions(conn: Connection, ids: Sequence[int]) -> dict[int, tuple[int, int, int]]:
    """id -> (document_id, chunk_index, the document's chunk count)."""
    sql = (
        "SELECT c.id, c.document_id, c.chunk_index, d.chunk_count FROM chunks c"
        " JOIN documents d ON d.id = c.document_id WHERE c.id IN ({marks})"
    )
    return {r[0]: (r[1], r[2], r[3]) for r in rows_in(conn, sql, ids)}


def chunks_between(conn: Connection, document_id: int, first: int, last: int) -> list[tuple]:
    """(id, text) of a document's chunks with chunk_index first..last, in order."""
    sql = (
        "SELECT id, text FROM chunks WHERE document_id = ? AND chunk_index BETWEEN ? AND ?"
        " ORDER BY chunk_index"
    )
    return conn.execute(sql, (document_id, first, last)).fetchall()


def navigation_chunks(conn: Connection, ids: Sequence[int]) -> set[int]:
    """The ids among `ids` of chunks marked as navigation (contents, indexes)."""
    sql = "SELECT id FROM chunks WHERE navigation = 1 AND id IN ({marks})"
    return {r[0] for r in rows_in(conn, sql, ids)}


def chunk_exists(conn: Connection, chunk_id: int) -> bool:
    return conn.execute("SELECT 1 FROM chunks WHERE id = ?", (chunk_id,)).fetchone() is not None


def document_chunk_ids(conn: Connection, document_id: int) -> list[int]:
    rows = conn.execute("SELECT id FROM chunks WHERE document_id = ?", (document_id,))
    return [r[0] for r in rows]


def chunk_owners(conn: Connection, ids: Iterable[int]) -> dict[int, int]:
    """chunk id -> its document id."""
    rows = rows_in(conn, "SELECT id, document_id FROM chunks WHERE id IN ({marks})", list(ids))
    return {r[0]: r[1] for r in rows}


def document_stats(conn: Connection, ids: Iterable[int]) -> dict[int, tuple[str, int, float]]:
    """document id -> (path, size, mtime) as recorded when it was indexed."""
    sql = "SELECT id, path, size, mtime FROM documents WHERE id IN ({marks})"
    return {r[0]: (r[1], r[2], r[3]) for r in rows_in(conn, sql, list(ids))}


def index_stamp(conn: Connection) -> tuple[int, int]:
    """(chunks, largest chunk id): changes when an ingest adds, replaces or removes chunks."""
    count, largest = conn.execute("SELECT count(*), coalesce(max(id), 0) FROM chunks").fetchone()
    return int(count), int(largest)
