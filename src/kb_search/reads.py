"""What a knowledge base's faces read from its index (`kb.reads`): documents a page at a time,
a document or chunk with its neighbours, tags, counts, the added folders and the model
binding. Each is a store view handed through with this thread's read-only connection; the
reads that can be slow (a document, a chunk) run inside one request's budget, as a search
does. (Cited passages, `kb get`, are a verb of `KnowledgeBase`: an agent's next step after
a search, which should not pay for these imports.)"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kb_search.config import Config
from kb_search.errors import NotFound
from kb_search.sanitize import parse_id
from kb_search.search.budget import SearchBudget, budgeted
from kb_search.store import db
from kb_search.store.inventory import (
    ChunkView,
    DocumentPage,
    DocumentView,
    count_documents,
    get_chunk,
    get_document,
    list_documents,
    list_tags,
    resolve_document_id,
    stats,
)
from kb_search.store.roots import RootSummary, load_roots, root_summaries
from kb_search.store.vectors import binding, db_model


class Reads:
    """The read-only views of one knowledge base; `reader` gives this thread's connection."""

    def __init__(self, reader: Callable[[], db.Connection], config: Config, cwd: Path):
        self.reader = reader
        self.config = config
        self.cwd = cwd

    @contextmanager
    def budgeted(self, what: str) -> Iterator[tuple[db.Connection, SearchBudget]]:
        """The reader connection inside one request's budget, as a search has: its SQL stops
        past `search.timeout_s` or when the client cancels, and the error says `what` ran
        past its budget (a read, a document page, a similarity query)."""
        conn = self.reader()
        with budgeted(conn, self.config["search.timeout_s"], what) as budget:
            yield conn, budget

    def document(
        self,
        ref: str,
        with_chunks: bool = True,
        offset: int = 0,
        limit: int | None = None,
        relative_to_roots: bool = False,
    ) -> DocumentView:
        """A document; with its chunks from `offset`, at most `limit` of them. A path is
        relative to this KB's cwd, or to the added folders with `relative_to_roots`."""
        with self.budgeted("document read") as (conn, _):
            if relative_to_roots and not str(ref).strip().isdigit():
                from kb_search.locating import indexed_document  # MCP only: not on every start

                found = indexed_document(conn, str(ref).strip().split("#", 1)[0], None)
                if found is None:
                    raise NotFound(f"no indexed document matches {ref!r}")
                ref = str(found.document_id)
            return get_document(
                conn, ref, with_chunks=with_chunks, cwd=self.cwd, offset=offset, limit=limit
            )

    def chunk(self, chunk_id: int | str, context: int = 0) -> list[ChunkView]:
        """A chunk with `context` neighbours on each side."""
        with self.budgeted("chunk read") as (conn, _):
            return get_chunk(conn, self.chunk_id(chunk_id), context)

    def documents(
        self,
        doc_type: str | None = None,
        tag: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[DocumentView]:
        doc_type, endings = self._type_filter(doc_type)
        return list_documents(self.reader(), doc_type, tag, limit, offset, endings)

    def _type_filter(self, doc_type: str | None) -> tuple[str | None, tuple[str, ...]]:
        """The type rule `kb search` filters by: a type the index lacks is an error listing
        what it has; a type named by an extension kb reads (`rst`) is the files of that
        extension (returned as their name endings). A tag no document carries any more lists
        nothing, as it did."""
        from kb_search.search.filters import check_filter_values, name_endings, type_extension
        from kb_search.search.query import Filters

        if not doc_type:
            return None, ()
        check_filter_values(self.reader(), Filters(types=[doc_type]))
        ext = type_extension(doc_type)
        return (None, name_endings(ext)) if ext else (doc_type, ())

    def document_page(
        self,
        doc_type: str | None = None,
        tag: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> DocumentPage:
        """Documents a page at a time, with the total and where the next page starts."""
        stored, endings = self._type_filter(doc_type)
        docs = list_documents(self.reader(), stored, tag, limit, offset, endings)
        total = (
            count_documents(self.reader(), stored, tag, endings) if (limit or offset) else len(docs)
        )
        return DocumentPage(docs, total, offset)

    def tags(self) -> list[dict[str, Any]]:
        return list_tags(self.reader())

    def stats(self) -> dict[str, Any]:
        return stats(self.reader(), self.config.db_path)

    def root_summaries(self) -> list[RootSummary]:
        """The added folders with their document and chunk counts (`kb roots`)."""
        return root_summaries(self.reader())

    def roots(self) -> list[Path]:
        return load_roots(self.reader())

    def binding(self) -> list[list[Any]]:
        """The model settings and vector tables the database is bound to (what a long-lived
        process compares to notice a `kb reindex --model`)."""
        return binding(self.reader())

    def bound_model(self) -> str | None:
        """The embedding model this database's vectors were made with (None: lexical only)."""
        return db_model(self.reader())

    def document_id(self, conn: db.Connection, ref: str | int) -> int:
        """The id of the document `ref` names (an id, or a path relative to the cwd)."""
        return resolve_document_id(conn, ref, self.cwd)

    @staticmethod
    def chunk_id(ref: str | int) -> int:
        return parse_id(ref, "chunk id")
