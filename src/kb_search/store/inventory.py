"""Reading what is indexed: documents, chunks with context, listings and counts."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kb_search.errors import NotFound  # noqa: F401 - re-exported
from kb_search.sanitize import SQLITE_MAX_INT, valid_text
from kb_search.store import vectors as tables
from kb_search.store.copies import copied_documents
from kb_search.store.db import Connection, get_meta
from kb_search.store.ocr_queue import waiting_pages
from kb_search.store.records import StoredChunk, document_chunks, document_tags


@dataclass
class ChunkView:
    chunk_id: int
    document_id: int
    chunk_index: int
    text: str
    heading: str | None
    symbol: str | None
    lines: list[int] | None
    page: int | None
    page_end: int | None
    token_count: int
    citation: str
    navigation: bool = False  # a table of contents or an index (formats/navigation.py)

    @classmethod
    def from_stored(cls, chunk: StoredChunk) -> ChunkView:
        return cls(
            chunk_id=chunk.chunk_id,
            document_id=chunk.document_id,
            chunk_index=chunk.chunk_index,
            text=chunk.text,
            heading=chunk.heading,
            symbol=chunk.symbol,
            lines=chunk.lines,
            page=chunk.page,
            page_end=chunk.page_end,
            token_count=chunk.token_count,
            citation=chunk.citation,
            navigation=bool(chunk.navigation),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class DocumentView:
    document_id: int
    path: str
    rel_path: str
    title: str
    type: str
    language: str | None
    tags: list[str]
    size: int
    page_count: int | None
    chunk_count: int
    indexed_at: float
    metadata: dict[str, Any]
    chunks: list[ChunkView] | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.chunks is None:
            data.pop("chunks")
        return data


_DOC_COLUMNS = (
    "id, path, rel_path, title, doc_type, language, size, page_count, chunk_count,"
    " indexed_at, metadata"
)


def _document(row: tuple, tags: list[str]) -> DocumentView:
    return DocumentView(
        document_id=row[0],
        path=row[1],
        rel_path=row[2],
        title=row[3],
        type=row[4],
        language=row[5],
        tags=tags,
        size=row[6],
        page_count=row[7],
        chunk_count=row[8],
        indexed_at=row[9],
        metadata=json.loads(row[10] or "{}"),
    )


def resolve_document_id(conn: Connection, ref: str | int, cwd: Path | None = None) -> int:
    """A document id, an indexed path (absolute or relative to cwd) or a citation path."""
    text = valid_text(str(ref)).strip()
    if text.isascii() and text.isdigit() and int(text) <= SQLITE_MAX_INT:
        row = conn.execute("SELECT id FROM documents WHERE id = ?", (int(text),)).fetchone()
        if row:
            return row[0]
    text = text.split("#", 1)[0]
    base = cwd or Path.cwd()
    # An exact indexed path first (absolute, or relative to the cwd); a citation path
    # (rel_path) only when it names one document.
    for candidate in (text, os.path.realpath(os.path.join(base, os.path.expanduser(text)))):
        row = conn.execute("SELECT id FROM documents WHERE path = ?", (candidate,)).fetchone()
        if row:
            return row[0]
    ids = [r[0] for r in conn.execute("SELECT id FROM documents WHERE rel_path = ?", (text,))]
    if len(ids) == 1:
        return ids[0]
    if ids:
        raise NotFound(f"{ref!r} is ambiguous: documents {', '.join(map(str, ids))}; use an id")
    raise NotFound(f"no indexed document matches {ref!r}")


def get_document(
    conn: Connection,
    ref: str | int,
    with_chunks: bool = True,
    cwd: Path | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> DocumentView:
    """A document; with its chunks from chunk_index `offset`, at most `limit` of them."""
    doc_id = resolve_document_id(conn, ref, cwd)
    row = conn.execute(f"SELECT {_DOC_COLUMNS} FROM documents WHERE id = ?", (doc_id,)).fetchone()
    view = _document(row, document_tags(conn, {doc_id}).get(doc_id, []))
    if with_chunks:
        first = min(max(0, offset), SQLITE_MAX_INT)
        last = SQLITE_MAX_INT if limit is None else min(first + max(0, limit) - 1, SQLITE_MAX_INT)
        chunks = (
            document_chunks(conn, doc_id, first, last)
            if offset or limit is not None
            else document_chunks(conn, doc_id)
        )
        view.chunks = [ChunkView.from_stored(c) for c in chunks]
    return view


def get_chunk(conn: Connection, chunk_id: int, context: int = 0) -> list[ChunkView]:
    """The chunk and up to `context` neighbours on each side, in document order."""
    row = conn.execute(
        "SELECT document_id, chunk_index FROM chunks WHERE id = ?", (chunk_id,)
    ).fetchone()
    if row is None:
        raise NotFound(f"no chunk with id {chunk_id}")
    context = max(0, context)
    chunks = document_chunks(conn, row[0], row[1] - context, row[1] + context)
    return [ChunkView.from_stored(c) for c in chunks]


def _document_filter(
    doc_type: str | None, tag: str | None, endings: tuple[str, ...] = ()
) -> tuple[str, list[Any]]:
    """`endings`: file name endings (`.rst`, `.rst.gz`) that stand for a type (`--type rst`)."""
    clauses: list[str] = []
    params: list[Any] = []
    if doc_type:
        clauses.append("doc_type = ?")
        params.append(doc_type.lower())
    if endings:
        # substr, not LIKE: no character of an ending is a wildcard
        ends = " OR ".join(["substr(lower(path), -length(?)) = ?"] * len(endings))
        clauses.append(f"({ends})")
        for ending in endings:
            params.extend((ending.lower(), ending.lower()))
    if tag:
        clauses.append(
            "id IN (SELECT dt.document_id FROM document_tags dt JOIN tags t ON t.id = dt.tag_id"
            " WHERE t.name = ?)"
        )
        params.append(tag)
    return (f" WHERE {' AND '.join(clauses)}" if clauses else ""), params


def list_documents(
    conn: Connection,
    doc_type: str | None = None,
    tag: str | None = None,
    limit: int | None = None,
    offset: int = 0,
    endings: tuple[str, ...] = (),
) -> list[DocumentView]:
    """Documents by citation path; `limit`/`offset` page through them."""
    where, params = _document_filter(doc_type, tag, endings)
    sql = f"SELECT {_DOC_COLUMNS} FROM documents{where} ORDER BY rel_path, id"
    if limit or offset:
        size = min(int(limit), SQLITE_MAX_INT) if limit else -1
        sql += f" LIMIT {size} OFFSET {min(max(0, int(offset)), SQLITE_MAX_INT)}"
    rows = conn.execute(sql, params).fetchall()
    tags = document_tags(conn, {r[0] for r in rows})
    return [_document(r, tags.get(r[0], [])) for r in rows]


def count_documents(
    conn: Connection,
    doc_type: str | None = None,
    tag: str | None = None,
    endings: tuple[str, ...] = (),
) -> int:
    where, params = _document_filter(doc_type, tag, endings)
    return conn.execute(f"SELECT count(*) FROM documents{where}", params).fetchone()[0]


def list_tags(conn: Connection) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT t.name, count(dt.document_id) FROM tags t"
        " LEFT JOIN document_tags dt ON dt.tag_id = t.id GROUP BY t.id ORDER BY t.name"
    ).fetchall()
    return [{"tag": name, "documents": count} for name, count in rows]


PATH_SAMPLE = 20


@dataclass
class PathsHere:
    """Whether the indexed paths exist on this machine (an exported DB opened elsewhere points
    at the machine it was built on), from a sample spread over the documents."""

    checked: int
    missing: int
    note: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def paths_here(conn: Connection, sample: int = PATH_SAMPLE) -> PathsHere:
    rows = conn.execute(
        "SELECT path FROM (SELECT path, row_number() OVER (ORDER BY id) AS n,"
        " count(*) OVER () AS t FROM documents) WHERE (n - 1) % max(1, t / ?) = 0 LIMIT ?",
        (sample, sample),
    ).fetchall()
    paths = [r[0] for r in rows if os.path.isabs(r[0])]
    missing = [p for p in paths if not os.path.exists(p)]
    if not missing:
        return PathsHere(len(paths), 0, None)
    try:
        where = os.path.commonpath(missing)
    except ValueError:
        where = os.path.dirname(missing[0])
    note = (
        f"indexed paths point to {where}; {len(missing)} of {len(paths)} sampled files are not"
        " found here (a DB built elsewhere, or files gone): `kb get` reads those from the index"
    )
    return PathsHere(len(paths), len(missing), note)


def stats(conn: Connection, db_path: Path | None = None) -> dict[str, Any]:
    one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
    by_type = dict(conn.execute("SELECT doc_type, count(*) FROM documents GROUP BY doc_type"))
    vectors = {
        t.model: {"table": t.name, "dim": t.dim, "vectors": tables.count_vectors(conn, t.name)}
        for t in tables.all_tables(conn)
    }
    size = None
    if db_path is not None and Path(db_path).exists():
        size = sum(p.stat().st_size for p in (Path(db_path), Path(f"{db_path}-wal")) if p.exists())
    return {
        "documents": one("SELECT count(*) FROM documents"),
        "chunks": one("SELECT count(*) FROM chunks"),
        "tokens": one("SELECT coalesce(sum(token_count), 0) FROM chunks"),
        "tags": one("SELECT count(*) FROM tags"),
        "by_type": by_type,
        "roots": [r[0] for r in conn.execute("SELECT path FROM roots ORDER BY path")],
        "model": get_meta(conn, "model_name"),
        "embedding_dim": int(get_meta(conn, "embedding_dim") or 0) or None,
        "vectors": vectors,
        "db_path": str(db_path) if db_path else None,
        "db_bytes": size,
        "schema_version": int(get_meta(conn, "schema_version") or 0),
        "paths_here": paths_here(conn).to_dict(),
        "ocr_waiting": dict(zip(("pages", "files"), waiting_pages(conn))),
        # documents whose text another document holds (a guide in two formats): search shows
        # one of them, naming the others in `also_at`
        "copied_documents": copied_documents(conn),
    }


def document_id_at(conn: Connection, path: str) -> int | None:
    row = conn.execute("SELECT id FROM documents WHERE path = ?", (path,)).fetchone()
    return row[0] if row else None


def document_path(conn: Connection, document_id: int) -> str | None:
    row = conn.execute("SELECT path FROM documents WHERE id = ?", (document_id,)).fetchone()
    return row[0] if row else None


def document_state(conn: Connection, path: str) -> tuple[int, str, int, float, str] | None:
    """(id, content_hash, size, mtime, chunking) of the document at `path`, for change checks."""
    return conn.execute(
        "SELECT id, content_hash, size, mtime, chunking FROM documents WHERE path = ?", (path,)
    ).fetchone()


def document_states(conn: Connection) -> list[tuple[str, int, int, float, str, str]]:
    """(path, id, size, mtime, content_hash, chunking) of every document: what `kb sync`
    compares."""
    return conn.execute(
        "SELECT path, id, size, mtime, content_hash, chunking FROM documents"
    ).fetchall()


def document_paths(conn: Connection) -> list[str]:
    return [row[0] for row in conn.execute("SELECT path FROM documents")]


def counts(conn: Connection) -> tuple[int, int]:
    """(documents, chunks) in the index."""
    return conn.execute(
        "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM chunks)"
    ).fetchone()


def metadata_with(
    conn: Connection, key: str, since: float | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """(path relative to its root, metadata) of documents whose metadata holds `key` (e.g.
    ocr_skipped_pages), by path; only those written at `since` (time.time()) or later."""
    rows = conn.execute(
        "SELECT rel_path, metadata FROM documents WHERE instr(metadata, ?) > 0"
        " AND indexed_at >= ? ORDER BY rel_path",
        (json.dumps(key), since if since is not None else float("-inf")),
    ).fetchall()
    return [(rel, json.loads(raw or "{}")) for rel, raw in rows]


def chunk_count(conn: Connection) -> int:
    return conn.execute("SELECT count(*) FROM chunks").fetchone()[0]


def chunk_state(conn: Connection) -> tuple[int, int | None, float | None]:
    """(chunks, highest chunk id, latest indexed_at): changes whenever a chunk is written or
    deleted; cheap (~0.1 ms)."""
    return conn.execute(
        "SELECT (SELECT count(*) FROM chunks), (SELECT max(id) FROM chunks),"
        " (SELECT max(indexed_at) FROM documents)"
    ).fetchone()


def chunk_hashes(conn: Connection) -> list[tuple[int, str]]:
    """(id, content_hash) of every chunk, by id."""
    return conn.execute("SELECT id, content_hash FROM chunks ORDER BY id").fetchall()


def set_chunk_hashes(conn: Connection, hashes: list[tuple[str, int]]) -> None:
    """(content_hash, chunk id) pairs: the hash of the text a chunk's vector was made from."""
    conn.executemany("UPDATE chunks SET content_hash = ? WHERE id = ?", hashes)


def document_locations(conn: Connection) -> list[tuple[int, str, str]]:
    """(id, rel_path, path) of every document."""
    return conn.execute("SELECT id, rel_path, path FROM documents").fetchall()


@dataclass
class DocumentPage:
    """One page of `kb list` / MCP list_documents: `next_offset` is None on the last page."""

    documents: list[DocumentView]
    total: int
    offset: int = 0

    @property
    def next_offset(self) -> int | None:
        shown = self.offset + len(self.documents)
        return shown if shown < self.total else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "documents": [d.to_dict() for d in self.documents],
            "count": len(self.documents),
            "total": self.total,
            "next_offset": self.next_offset,
        }

