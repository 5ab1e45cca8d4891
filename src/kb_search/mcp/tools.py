"""The MCP tools, resources and texts: each tool validates its input, calls one
KnowledgeBase method and returns the same JSON contract as the CLI."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from kb_search.errors import KbError, NotFound
from kb_search.knowledge_base import KnowledgeBase

DEFAULT_TOP = 10
MAX_TOP = 100
MAX_CONTEXT = 20
DEFAULT_LIST_LIMIT = 100
MAX_LIST_LIMIT = 10_000


INSTRUCTIONS = """\
Search a local knowledge base (notes, docs, PDFs, code) that the user indexed with `kb add`.
Start with `search` (hybrid: keywords + meaning). Each result is one chunk of a document with
`text`, a `citation` (path#page=N or path#L10-L24) to quote when you use it, and a `chunk_id`.
Fetch surrounding text with `get_chunk(chunk_id, context=2)` and a whole document with
`get_document`. Only indexed content is available: this server never reads other files."""

SCORES = (
    "Scores run 0..1 and compare results within one response, not across queries. hybrid: "
    "normalised Reciprocal Rank Fusion, 1.0 = ranked first by both the keyword and the vector "
    "leg; `score_breakdown` has each leg's score and rank (null = that leg did not find it). "
    "lexical: BM25 squashed to 0..1. vector: cosine similarity."
)
RESULT = (
    "Returns the `kb search --format json` contract: results[] with chunk_id, score, "
    "score_breakdown, text, snippet, citation, source{document_id, title, path, type, page, "
    "lines, heading, tags, ...}; total_matches; legs (status of each leg: ok, empty, or error: "
    "why); timings_ms. Cite a result with its `citation`; widen it with get_chunk(chunk_id, "
    "context=N)."
)
QUERY_SYNTAX = (
    'Query syntax: plain words (any may match, better when more do), "quoted phrase", -term '
    "to exclude, inline filters type:pdf tag:work path:notes/** lang:python, and a whole query "
    "in single quotes is raw SQLite FTS5 syntax (e.g. 'git NEAR(install source)')."
)

Query = Annotated[str, Field(description="What to look for, in words. " + QUERY_SYNTAX)]
Top = Annotated[int, Field(ge=1, le=MAX_TOP, description="How many results (default 10).")]
Types = Annotated[
    str | list[str] | None,
    Field(description="Only these document types, e.g. pdf, markdown, text, code, html."),
]
Tags = Annotated[
    str | list[str] | None, Field(description="Only documents with any of these tags.")
]
Paths = Annotated[
    str | list[str] | None,
    Field(description="Path globs: *.md matches file names, notes/** a folder; * stays in one."),
]
Langs = Annotated[str | list[str] | None, Field(description="Only this language, e.g. python.")]
MinScore = Annotated[
    float | None, Field(ge=0, le=1, description="Drop results scoring below this (0..1).")
]


def _as_list(value: str | list[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _tool_error(message: str) -> Exception:
    from mcp.server.mcpserver.exceptions import ToolError

    return ToolError(message)


def run_search(
    kb: KnowledgeBase,
    query: str,
    mode: str,
    top: int,
    filters: tuple[Any, Any, Any, Any],
    min_score: float | None,
) -> dict[str, Any]:
    from kb_search.search.query import Filters

    types, tags, paths, languages = (_as_list(f) for f in filters)
    options = kb.search_options(
        mode=mode,
        top=top,
        filters=Filters(types=types, tags=tags, paths=paths, languages=languages),
        min_score=min_score,
    )
    try:
        return kb.search(query, options).to_dict()
    except KbError as exc:
        raise _tool_error(str(exc)) from exc


def document_dict(kb: KnowledgeBase, ref: str, with_chunks: bool) -> dict[str, Any]:
    """An indexed document by id or indexed path; anything else is an error, never a file read."""
    if not ref.strip() or "\x00" in ref:
        raise _tool_error("give a document id or the path of an indexed document")
    try:
        return kb.document(ref.strip(), with_chunks=with_chunks).to_dict()
    except NotFound as exc:
        raise _tool_error(
            f"not in the index: {ref!r} is not an indexed document. Only indexed content is served"
            " (no other files); find documents with `search` or `list_documents`."
        ) from exc


def register_tools(server: Any, kb: KnowledgeBase) -> None:
    from mcp_types import ToolAnnotations

    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

    def search(
        query: Query,
        mode: Annotated[
            str,
            Field(
                pattern="^(hybrid|lexical|vector)$",
                description="hybrid (default, best), lexical (exact words) or vector (meaning).",
            ),
        ] = "hybrid",
        top: Top = DEFAULT_TOP,
        type: Types = None,
        tag: Tags = None,
        path: Paths = None,
        lang: Langs = None,
        min_score: MinScore = None,
    ) -> dict[str, Any]:
        return run_search(kb, query, mode, top, (type, tag, path, lang), min_score)

    def search_keyword(
        query: Query,
        top: Top = DEFAULT_TOP,
        type: Types = None,
        tag: Tags = None,
        path: Paths = None,
        lang: Langs = None,
        min_score: MinScore = None,
    ) -> dict[str, Any]:
        return run_search(kb, query, "lexical", top, (type, tag, path, lang), min_score)

    def search_semantic(
        query: Annotated[str, Field(description="A question or description, in words.")],
        top: Top = DEFAULT_TOP,
        type: Types = None,
        tag: Tags = None,
        path: Paths = None,
        lang: Langs = None,
        min_score: MinScore = None,
    ) -> dict[str, Any]:
        return run_search(kb, query, "vector", top, (type, tag, path, lang), min_score)

    def get_document(
        id: Annotated[
            int | None, Field(description="Document id (source.document_id in search results).")
        ] = None,
        path: Annotated[
            str | None,
            Field(description="Or the indexed path: source.path, source.rel_path or a citation."),
        ] = None,
        include_chunks: Annotated[
            bool, Field(description="Include every chunk's text (default true).")
        ] = True,
    ) -> dict[str, Any]:
        if (id is None) == (path is None):
            raise _tool_error("give exactly one of `id` or `path`")
        return document_dict(kb, str(id) if id is not None else path or "", include_chunks)

    def get_chunk(
        chunk_id: Annotated[int, Field(description="chunk_id from a search result.")],
        context: Annotated[
            int,
            Field(ge=0, le=MAX_CONTEXT, description="Neighbouring chunks on each side (0-20)."),
        ] = 0,
    ) -> dict[str, Any]:
        try:
            chunks = kb.chunk(chunk_id, context)
        except KbError as exc:
            raise _tool_error(f"{exc}: take chunk ids from search results") from exc
        return {"chunk_id": chunk_id, "chunks": [c.to_dict() for c in chunks]}

    def list_documents(
        type: Annotated[str | None, Field(description="Only this document type.")] = None,
        tag: Annotated[str | None, Field(description="Only documents with this tag.")] = None,
        limit: Annotated[int, Field(ge=1, le=MAX_LIST_LIMIT)] = DEFAULT_LIST_LIMIT,
    ) -> dict[str, Any]:
        docs = kb.documents(type, tag, limit)
        return {"documents": [d.to_dict() for d in docs], "count": len(docs)}

    def list_tags() -> dict[str, Any]:
        return {"tags": kb.tags()}

    def stats() -> dict[str, Any]:
        return kb.stats()

    tools = [
        (
            search,
            "search",
            "Search the knowledge base: the default tool for any question about the user's "
            "documents. Hybrid mode fuses keyword (BM25) and semantic (embedding) ranking. Use "
            "filters to narrow by type, tag, path or language. " + SCORES + " " + RESULT,
        ),
        (
            search_keyword,
            "search_keyword",
            "Keyword-only (BM25) search: use for exact identifiers, error messages, names, "
            "quoted phrases or FTS5 expressions, where meaning-based matches would be noise. "
            "Same result shape as `search`; scores are BM25 squashed to 0..1.",
        ),
        (
            search_semantic,
            "search_semantic",
            "Meaning-only (embedding) search: use when the wording in the documents likely "
            "differs from the question (paraphrases, concepts, other languages' terms). Same "
            "result shape as `search`; scores are cosine similarity 0..1.",
        ),
        (
            get_document,
            "get_document",
            "One indexed document by `id` or indexed `path`: metadata (title, type, tags, "
            "size, pages) and, by default, all its chunks in order with citations. Use when a "
            "result looks relevant and you need the whole document. Paths that are not indexed "
            "are refused: this never reads files from disk.",
        ),
        (
            get_chunk,
            "get_chunk",
            "One chunk by `chunk_id` plus `context` neighbouring chunks on each side, in "
            "document order, each with its own `citation`. Use to read around a search hit "
            "before answering (context=1..3 is usually enough).",
        ),
        (
            list_documents,
            "list_documents",
            "List indexed documents (id, path, title, type, tags, chunk_count), optionally "
            "by type or tag. Use to see what the knowledge base holds, not to find content.",
        ),
        (
            list_tags,
            "list_tags",
            "All tags (the user's domains/collections) with document counts; use their names "
            "as `tag` filters in search.",
        ),
        (
            stats,
            "stats",
            "Index statistics: document and chunk counts by type, tags, embedding model, "
            "database size.",
        ),
    ]
    for fn, name, description in tools:
        server.add_tool(fn, name=name, description=description, annotations=read_only)


def register_resources(server: Any, kb: KnowledgeBase) -> None:
    import json

    from mcp.server.mcpserver.exceptions import ResourceError

    @server.resource(
        "kb://stats",
        name="stats",
        description="Index statistics (same as the stats tool).",
        mime_type="application/json",
    )
    def stats_resource() -> str:
        return json.dumps(kb.stats(), ensure_ascii=False)

    @server.resource(
        "kb://document/{id}",
        name="document",
        description="An indexed document with its chunks, by document id.",
        mime_type="application/json",
    )
    def document_resource(id: str) -> str:
        from kb_search.sanitize import parse_id

        try:
            data = document_dict(kb, str(parse_id(id, "document id")), with_chunks=True)
        except Exception as exc:  # noqa: BLE001 - a ToolError here becomes a resource error
            raise ResourceError(str(exc)) from exc
        return json.dumps(data, ensure_ascii=False, default=str)
