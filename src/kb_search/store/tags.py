"""User tags on documents (front matter tags are written by the store)."""

from __future__ import annotations

from collections.abc import Iterable

from kb_search.sanitize import valid_text
from kb_search.store.db import Connection, transaction
from kb_search.store.documents import prune_tags, set_tags


def add_tags(conn: Connection, document_id: int, tags: Iterable[str]) -> None:
    with transaction(conn):
        set_tags(conn, document_id, tags, "user")


def remove_tags(conn: Connection, document_id: int, tags: Iterable[str]) -> int:
    names = [valid_text(t).strip() for t in tags if t.strip()]
    with transaction(conn):
        removed = conn.execute(
            f"DELETE FROM document_tags WHERE document_id = ? AND tag_id IN"
            f" (SELECT id FROM tags WHERE name IN ({','.join('?' * len(names))}))",
            (document_id, *names),
        ).rowcount
        prune_tags(conn)
    return removed
