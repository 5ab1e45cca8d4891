"""Writing and deleting documents: one document = one transaction, FTS kept in step."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Sequence
from pathlib import PurePath

from kb_search.cjk import has_cjk
from kb_search.parsed import ParsedChunk, ParsedDocument
from kb_search.sanitize import valid_text
from kb_search.shingles import sketch
from kb_search.store import copies
from kb_search.store.db import Connection, transaction
from kb_search.store.ocr_queue import QUEUED_KEY, queue_row, unqueue_row
from kb_search.store.records import DocumentRecord
from kb_search.store.roots import removed_folder_holds
from kb_search.store.vectors import delete_document_vectors, insert_vectors


def embedding_text(title: str, chunk: ParsedChunk) -> str:
    """What the embedding model sees for a chunk: its text with the document title and heading
    chain in front, so a chunk keeps its context. Its hash decides whether to re-embed."""
    context = " > ".join(x for x in (title, chunk.heading) if x)
    return f"{context}\n{chunk.text}" if context else chunk.text


def embedding_texts(conn: Connection, ids: Sequence[int]) -> list[tuple[int, str]]:
    """(chunk id, embedding_text) of the chunks `ids` that exist, by id: what the model reads
    of each (the embedder, and a reranker)."""
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        f"SELECT c.id, d.title, c.heading, c.text FROM chunks c JOIN documents d"
        f" ON d.id = c.document_id WHERE c.id IN ({marks}) ORDER BY c.id",
        list(ids),
    ).fetchall()
    return [(r[0], embedding_text(r[1], ParsedChunk(text=r[3], heading=r[2]))) for r in rows]


def content_hash(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _fts_delete(conn: Connection, document_id: int) -> None:
    # External-content FTS needs the old values to remove a row, so this runs before the
    # chunks themselves go.
    conn.execute(
        "INSERT INTO chunks_fts(chunks_fts, rowid, title, path, heading, body) "
        "SELECT 'delete', id, title, path, heading, body FROM fts_source WHERE document_id = ?",
        (document_id,),
    )
    conn.execute(
        "INSERT INTO chunks_cjk(chunks_cjk, rowid, body) "
        "SELECT 'delete', id, body FROM fts_cjk_source WHERE document_id = ?",
        (document_id,),
    )


def _fts_insert(conn: Connection, document_id: int) -> None:
    conn.execute(
        "INSERT INTO chunks_fts(rowid, title, path, heading, body) "
        "SELECT id, title, path, heading, body FROM fts_source WHERE document_id = ?",
        (document_id,),
    )
    conn.execute(
        "INSERT INTO chunks_cjk(rowid, body) "
        "SELECT id, body FROM fts_cjk_source WHERE document_id = ?",
        (document_id,),
    )


def _delete_chunk_rows(conn: Connection, document_id: int) -> None:
    _fts_delete(conn, document_id)
    delete_document_vectors(conn, document_id)
    conn.execute("DELETE FROM chunks WHERE document_id = ?", (document_id,))


def set_tags(conn: Connection, document_id: int, tags: Iterable[str], source: str) -> None:
    for name in sorted({valid_text(t).strip() for t in tags if t and t.strip()}):
        conn.execute("INSERT OR IGNORE INTO tags(name) VALUES (?)", (name,))
        conn.execute(
            "INSERT OR IGNORE INTO document_tags(document_id, tag_id, source) "
            "SELECT ?, id, ? FROM tags WHERE name = ?",
            (document_id, source, name),
        )


def write_document(
    conn: Connection,
    record: DocumentRecord,
    parsed: ParsedDocument,
    user_tags: Iterable[str] = (),
    doc_type: str | None = None,
    vectors: dict[str, Sequence[bytes | None]] | None = None,
) -> int | None:
    """Insert or replace one document with its chunks, FTS rows, tags and vectors.

    The document keeps its id when it is re-ingested; user tags survive, front matter tags
    are replaced. Its PDF pages that wait for OCR (metadata `ocr_queued_pages`) are queued in
    the same transaction, and a document written without them leaves the queue. `vectors`
    maps a vector table to one blob per chunk (None = not embedded). None, and nothing
    written, when `kb remove` forgot a folder holding it while this
    writer ran (`store.roots.removed_folder_holds`: the removal wins).
    """
    now = time.time()
    metadata = json.dumps(parsed.metadata, default=str, ensure_ascii=False)
    with transaction(conn):
        if removed_folder_holds(conn, record.path):
            return None
        row = conn.execute("SELECT id FROM documents WHERE path = ?", (record.path,)).fetchone()
        values = (
            record.rel_path,
            parsed.title,
            (doc_type or parsed.doc_type).lower(),
            parsed.language,
            record.content_hash,
            record.size,
            record.mtime,
            parsed.page_count,
            metadata,
            len(parsed.chunks),
            now,
        )
        if row:
            document_id = row[0]
            _delete_chunk_rows(conn, document_id)
            conn.execute(
                "UPDATE documents SET rel_path=?, title=?, doc_type=?, language=?, "
                "content_hash=?, size=?, mtime=?, page_count=?, metadata=?, chunk_count=?, "
                "indexed_at=?, chunking=? WHERE id=?",
                (*values, record.chunking, document_id),
            )
            conn.execute(
                "DELETE FROM document_tags WHERE document_id = ? AND source = 'frontmatter'",
                (document_id,),
            )
        else:
            document_id = conn.execute(
                "INSERT INTO documents(path, rel_path, title, doc_type, language, content_hash,"
                " size, mtime, page_count, metadata, chunk_count, indexed_at, chunking)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (record.path, *values, record.chunking),
            ).lastrowid
        chunk_ids = _insert_chunks(conn, document_id, parsed)
        _fts_insert(conn, document_id)
        copies.record(conn, document_id, sketch("\n".join(c.text for c in parsed.chunks)))
        for table, blobs in (vectors or {}).items():
            insert_vectors(conn, table, chunk_ids, blobs)
        set_tags(conn, document_id, parsed.tags, "frontmatter")
        prune_tags(conn)
        set_tags(conn, document_id, user_tags, "user")
        queued = parsed.metadata.get(QUEUED_KEY)
        if queued:
            queue_row(conn, record, len(queued))
        else:
            unqueue_row(conn, record.path)
    return document_id


def _insert_chunks(conn: Connection, document_id: int, parsed: ParsedDocument) -> list[int]:
    ids = []
    for index, chunk in enumerate(parsed.chunks):
        cur = conn.execute(
            "INSERT INTO chunks(document_id, chunk_index, text, heading, symbol, line_start,"
            " line_end, page_start, page_end, token_count, content_hash, has_cjk, navigation,"
            " cited_page) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                document_id,
                index,
                chunk.text,
                chunk.heading,
                chunk.symbol,
                chunk.line_start,
                chunk.line_end,
                chunk.page_start,
                chunk.page_end,
                chunk.token_count,
                content_hash(embedding_text(parsed.title, chunk)),
                int(has_cjk(chunk.text)),
                int(chunk.navigation),
                chunk.cited_page if chunk.cited_page != chunk.page_start else None,
            ),
        )
        ids.append(cur.lastrowid)
    return ids


def prune_tags(conn: Connection) -> None:
    """Drop tags no document carries any more (call inside a write transaction)."""
    conn.execute("DELETE FROM tags WHERE id NOT IN (SELECT tag_id FROM document_tags)")


def delete_document(conn: Connection, document_id: int) -> bool:
    """Remove a document; chunks, FTS rows, vectors and tag links go with it."""
    with transaction(conn):
        exists = conn.execute("SELECT path FROM documents WHERE id = ?", (document_id,)).fetchone()
        if not exists:
            return False
        unqueue_row(conn, exists[0])
        _delete_chunk_rows(conn, document_id)
        conn.execute("DELETE FROM documents WHERE id = ?", (document_id,))
        prune_tags(conn)
    return True


def move_document(
    conn: Connection,
    document_id: int,
    old_path: str,
    new_path: str,
    rel_path: str,
    size: int,
    mtime: float,
    reparse: bool = False,
) -> str | None:
    """Point a document at its new path in one transaction; chunks and vectors stay.

    The FTS `path` column is rebuilt from the new rel_path (external-content FTS must delete
    with the old values first). Returns "moved"; "retitled" when the title was the file's name,
    which the chunks' embedding text includes, or when the caller asks to `reparse` it (a new
    extension: another format): the document is then marked changed so that the
    caller re-ingests it (same id) and its chunks and vectors become what a fresh ingest gives.
    None when another writer got there first (the new path is indexed, the old one gone).
    """
    old, new = PurePath(old_path), PurePath(new_path)
    with transaction(conn):
        row = conn.execute(
            "SELECT path, title FROM documents WHERE id = ?", (document_id,)
        ).fetchone()
        taken = conn.execute("SELECT 1 FROM documents WHERE path = ?", (new_path,)).fetchone()
        if row is None or row[0] != old_path or taken:
            return None
        retitled = reparse or (row[1] in (old.name, old.stem) and old.name != new.name)
        _fts_delete(conn, document_id)
        # A retitled document looks changed (no hash, an impossible mtime) until re-ingested.
        conn.execute(
            "UPDATE documents SET path = ?, rel_path = ?, size = ?, mtime = ?, indexed_at = ?,"
            " content_hash = CASE WHEN ? THEN '' ELSE content_hash END WHERE id = ?",
            (new_path, rel_path, size, -1.0 if retitled else mtime, time.time(), retitled,
             document_id),
        )  # fmt: skip
        _fts_insert(conn, document_id)
        # its scanned pages still wait, under the new name
        conn.execute(
            "UPDATE ocr_queue SET path = ?, rel_path = ?, size = ?, mtime = ? WHERE path = ?",
            (new_path, rel_path, size, mtime, old_path),
        )
    return "retitled" if retitled else "moved"


def touch_document(conn: Connection, document_id: int, size: int, mtime: float) -> None:
    """Record a new mtime for a file whose content did not change (its queued scans too)."""
    with transaction(conn):
        conn.execute(
            "UPDATE documents SET size = ?, mtime = ? WHERE id = ?", (size, mtime, document_id)
        )
        conn.execute(
            "UPDATE ocr_queue SET size = ?, mtime = ?"
            " WHERE path = (SELECT path FROM documents WHERE id = ?)",
            (size, mtime, document_id),
        )


def rebuild_fts(conn: Connection) -> None:
    with transaction(conn):
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
        conn.execute("INSERT INTO chunks_cjk(chunks_cjk) VALUES ('rebuild')")
