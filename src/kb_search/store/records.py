"""One mapper from stored rows to objects: a chunk with its document's fields, as search
results, `kb show`/`kb chunk` and `kb similar` all read them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kb_search.store.chunk_filter import ChunkFilter, where_sql
from kb_search.store.db import Connection, rows_in

_CHUNK_SELECT = (
    "SELECT c.id, c.document_id, c.chunk_index, c.text, c.heading, c.symbol, c.line_start,"
    " c.line_end, c.page_start, c.page_end, c.token_count, d.title, d.path, d.rel_path,"
    " d.doc_type, d.language, d.chunk_count, c.navigation, c.cited_page"
    " FROM chunks c JOIN documents d ON d.id = c.document_id"
)


@dataclass
class DocumentRecord:
    """Where a parsed document came from, as stored in `documents`."""

    path: str  # absolute path, or a stable key such as "beir:<id>" for evaluation corpora
    rel_path: str  # shown in citations
    content_hash: str
    size: int = 0
    mtime: float = 0.0
    chunking: str = ""  # see ingest.changes.chunking_fingerprint


@dataclass
class StoredChunk:
    chunk_id: int
    document_id: int
    chunk_index: int
    text: str
    heading: str | None
    symbol: str | None
    line_start: int | None
    line_end: int | None
    page: int | None
    page_end: int | None
    token_count: int
    title: str
    path: str
    rel_path: str
    doc_type: str
    language: str | None
    total_chunks: int
    navigation: bool = False
    cited_page: int | None = None  # the page its citation opens; None: `page`

    @property
    def lines(self) -> list[int] | None:
        return [self.line_start, self.line_end] if self.line_start is not None else None

    @property
    def citation(self) -> str:
        return citation(self.path, self.opened_page, self.lines)

    @property
    def opened_page(self) -> int | None:
        """The page its citation opens: the one of page..page_end holding most of its text
        (a crafted index's cited page that is no whole number in that range: `page`)."""
        cited, first, last = self.cited_page, self.page, self.page_end or self.page
        if type(cited) is not int or type(first) is not int or type(last) is not int:
            return first
        return cited if first <= cited <= last else first


def citation(
    path: str, page: int | None, lines: list[int] | None, anchor: str | None = None
) -> str:
    """The indexed (absolute) path with a fragment, openable from any directory:
    `path#page=3`, `path#L10-L24`, `path#L7`, else `path#anchor` when the chunk has one."""
    if page is not None:
        return f"{path}#page={page}"
    if lines:
        start, end = lines
        return f"{path}#L{start}" if start == end else f"{path}#L{start}-L{end}"
    if anchor:
        return f"{path}#{anchor}"
    return path


def chunks_by_id(conn: Connection, chunk_ids: Iterable[int]) -> dict[int, StoredChunk]:
    rows = rows_in(conn, _CHUNK_SELECT + " WHERE c.id IN ({marks})", chunk_ids, batch=900)
    return {row[0]: StoredChunk(*row) for row in rows}


def document_chunks(
    conn: Connection, document_id: int, first: int | None = None, last: int | None = None
) -> list[StoredChunk]:
    """A document's chunks in order, optionally only chunk_index first..last."""
    sql = f"{_CHUNK_SELECT} WHERE c.document_id = ?"
    params: list[int] = [document_id]
    if first is not None and last is not None:
        sql += " AND c.chunk_index BETWEEN ? AND ?"
        params += [first, last]
    return [StoredChunk(*row) for row in conn.execute(sql + " ORDER BY c.chunk_index", params)]


def document_tags(conn: Connection, document_ids: set[int]) -> dict[int, list[str]]:
    if not document_ids:
        return {}
    marks = ",".join("?" * len(document_ids))
    out: dict[int, list[str]] = {}
    for doc_id, name in conn.execute(
        "SELECT dt.document_id, t.name FROM document_tags dt JOIN tags t ON t.id = dt.tag_id"
        f" WHERE dt.document_id IN ({marks}) ORDER BY t.name",
        list(document_ids),
    ):
        out.setdefault(doc_id, []).append(name)
    return out


_READABLE = (
    "SELECT id, path, content_hash, size, EXISTS(SELECT 1 FROM chunks c WHERE"
    " c.document_id = documents.id AND c.line_start IS NOT NULL), doc_type FROM documents WHERE "
)


def readable_document(conn: Connection, path: str) -> tuple | None:
    """(id, path, content_hash, size, has line ranges, doc_type) of the document indexed at
    `path`."""
    return conn.execute(_READABLE + "path = ?", (path,)).fetchone()


def readable_documents_at_rel_path(conn: Connection, rel_path: str, limit: int = 2) -> list:
    """The same for documents whose citation path (rel_path) is `rel_path`, at most `limit`."""
    return conn.execute(_READABLE + "rel_path = ? LIMIT ?", (rel_path, limit)).fetchall()


def chunk_ids_over_lines(conn: Connection, document_id: int, first: int, last: int) -> list[int]:
    """A document's chunks whose lines meet first..last, in document order."""
    rows = conn.execute(
        "SELECT id FROM chunks WHERE document_id = ? AND line_start <= ? AND line_end >= ?"
        " ORDER BY chunk_index",
        (document_id, last, first),
    )
    return [r[0] for r in rows]


def document_chunk_ids(conn: Connection, document_id: int) -> list[int]:
    rows = conn.execute(
        "SELECT id FROM chunks WHERE document_id = ? ORDER BY chunk_index", (document_id,)
    )
    return [r[0] for r in rows]


def document_passes(conn: Connection, document_id: int, chunk_filter: ChunkFilter) -> bool:
    """Does the document pass a filter that is not empty?"""
    where, params = where_sql(chunk_filter)
    sql = f"SELECT 1 FROM documents d WHERE d.id = ? AND {where}"
    return conn.execute(sql, [document_id, *params]).fetchone() is not None
