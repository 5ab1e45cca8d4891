"""The MCP tools, resources, prompt and texts: each tool validates its input, calls one
KnowledgeBase method and returns the same JSON contract as the CLI.

The data is sent once: as compact JSON in the text content, with no `structuredContent`
copy (clients hand the text to the model; a second copy of the same payload doubles what a
search costs) and no indentation.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import Field

from kb_search.errors import KbError, NotFound, UserInputError
from kb_search.knowledge_base import KnowledgeBase

DEFAULT_TOP = 10
MAX_TOP = 100
MAX_CONTEXT = 20
DEFAULT_LIST_LIMIT = 100
MAX_LIST_LIMIT = 1000
MAX_SIMILAR = 50
DEFAULT_DOCUMENT_CHUNKS = 20
MAX_DOCUMENT_CHUNKS = 200
DEFAULT_GET_BYTES = 16_000
MAX_GET_BYTES = 1_000_000
MAX_GET_CITATIONS = 50
MAX_GET_CONTEXT = 200


INSTRUCTIONS = """\
Search a local knowledge base (notes, docs, PDFs, code) that the user indexed with `kb add`.
Start with `search` (hybrid: keywords + meaning); pass compact=true to get only chunk_id,
citation, heading, score and text per result (about half the tokens). Each result is one chunk
of a document with a `citation` (/abs/path#page=N or /abs/path#L10-L24) to quote when you use
it. Read exactly the cited lines with `get(citations, context=N)`, surrounding chunks with
`get_chunk(chunk_id, context=2)`, a document a page at a time with `get_document`, related
passages with `similar`; `search(explain=PATH)` says why a file is not in the results. The
`navigate` prompt walks through it. Only indexed content is available: this server never
reads other files."""

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
    "why); timings_ms. With compact=true each result is only chunk_id, citation, heading, score "
    "and text (about half the tokens); `fields` picks others. "
    "Cite a result with its `citation`; widen it with get_chunk(chunk_id, context=N)."
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
    float | None,
    Field(
        ge=0,
        le=1,
        description="Drop results scoring below this (0..1; a reranker's score"
        " when one is configured).",
    ),
]
Mode = Annotated[
    Literal["hybrid", "lexical", "vector"],
    Field(description="hybrid (default, best), lexical (exact words) or vector (meaning)."),
]
Compact = Annotated[
    bool,
    Field(
        description="Only chunk_id, citation, heading, score and text per result (about half the"
        " tokens); use unless you need ids, paths or per-leg scores."
    ),
]
Fields = Annotated[
    str | list[str] | None,
    Field(
        description="Only these result fields, e.g. ['citation', 'title', 'text', 'chunk_id']:"
        " chunk_id, score, score_breakdown, text, snippet, citation, source, or a source field"
        " (document_id, title, path, rel_path, type, page, lines, heading, symbol, tags...)."
    ),
]

Explain = Annotated[
    str | None,
    Field(description="A file path: adds `explain`, why it is or is not in the results."),
]


def to_json(data: Any) -> str:
    """What every tool sends: compact JSON."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


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
    fields: str | list[str] | None = None,
    compact: bool = False,
    explain: str | None = None,
) -> str:
    from kb_search.search.fields import COMPACT, parse_fields, project
    from kb_search.search.query import Filters

    types, tags, paths, languages = (_as_list(f) for f in filters)
    try:
        if compact and fields:
            raise UserInputError("give `compact` or `fields`, not both")
        selected = list(COMPACT) if compact else parse_fields(fields) if fields else None
        options = kb.search_options(
            mode=mode,
            top=top,
            filters=Filters(types=types, tags=tags, paths=paths, languages=languages),
            min_score=min_score,
        )
        response = kb.search(query, options, explain=explain)
    except KbError as exc:
        raise _tool_error(str(exc)) from exc
    return to_json(project(response, selected) if selected else response.to_dict())


def document_dict(
    kb: KnowledgeBase, ref: str, with_chunks: bool, offset: int = 0, limit: int | None = None
) -> dict[str, Any]:
    """An indexed document by id or indexed path, its chunks a page at a time (`next_offset`);
    anything else is an error, never a file read."""
    if not ref.strip() or "\x00" in ref:
        raise _tool_error("give a document id or the path of an indexed document")
    try:
        view = kb.document(ref.strip(), with_chunks=with_chunks, offset=offset, limit=limit)
        data = view.to_dict()
        if view.chunks is not None and limit is not None:
            shown = offset + len(view.chunks)
            data["next_offset"] = shown if shown < view.chunk_count else None
        return data
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
        mode: Mode = "hybrid",
        top: Top = DEFAULT_TOP,
        type: Types = None,
        tag: Tags = None,
        path: Paths = None,
        lang: Langs = None,
        min_score: MinScore = None,
        compact: Compact = False,
        fields: Fields = None,
        explain: Explain = None,
    ) -> str:
        filters = (type, tag, path, lang)
        return run_search(kb, query, mode, top, filters, min_score, fields, compact, explain)

    def search_keyword(
        query: Query,
        top: Top = DEFAULT_TOP,
        type: Types = None,
        tag: Tags = None,
        path: Paths = None,
        lang: Langs = None,
        min_score: MinScore = None,
        compact: Compact = False,
        fields: Fields = None,
    ) -> str:
        filters = (type, tag, path, lang)
        return run_search(kb, query, "lexical", top, filters, min_score, fields, compact)

    def search_semantic(
        query: Annotated[str, Field(description="A question or description, in words.")],
        top: Top = DEFAULT_TOP,
        type: Types = None,
        tag: Tags = None,
        path: Paths = None,
        lang: Langs = None,
        min_score: MinScore = None,
        compact: Compact = False,
        fields: Fields = None,
    ) -> str:
        filters = (type, tag, path, lang)
        return run_search(kb, query, "vector", top, filters, min_score, fields, compact)

    def get_document(
        id: Annotated[
            int | None, Field(description="Document id (source.document_id in search results).")
        ] = None,
        path: Annotated[
            str | None,
            Field(description="Or the indexed path: source.path, source.rel_path or a citation."),
        ] = None,
        include_chunks: Annotated[
            bool, Field(description="Include chunk texts (default true).")
        ] = True,
        offset: Annotated[int, Field(ge=0, description="First chunk: a previous next_offset.")] = 0,
        limit: Annotated[
            int, Field(ge=1, le=MAX_DOCUMENT_CHUNKS, description="Chunks per page.")
        ] = DEFAULT_DOCUMENT_CHUNKS,
    ) -> str:
        if (id is None) == (path is None):
            raise _tool_error("give exactly one of `id` or `path`")
        ref = str(id) if id is not None else path or ""
        return to_json(document_dict(kb, ref, include_chunks, offset, limit))

    def get(
        citations: Annotated[
            list[str],
            Field(
                description="Citations as search returns them (path#L10-L24, path#page=3), or"
                " chunk:ID.",
                min_length=1,
                max_length=MAX_GET_CITATIONS,
            ),
        ],
        context: Annotated[
            int, Field(ge=0, le=MAX_GET_CONTEXT, description="Lines around each.")
        ] = 0,
        max_bytes: Annotated[
            int, Field(ge=1, le=MAX_GET_BYTES, description="Byte budget for all.")
        ] = DEFAULT_GET_BYTES,
    ) -> str:
        try:
            return to_json(kb.get(citations, context, max_bytes).to_dict())
        except KbError as exc:
            raise _tool_error(str(exc)) from exc

    def get_chunk(
        chunk_id: Annotated[int, Field(description="chunk_id from a search result.")],
        context: Annotated[
            int,
            Field(ge=0, le=MAX_CONTEXT, description="Neighbouring chunks on each side (0-20)."),
        ] = 0,
    ) -> str:
        try:
            chunks = kb.chunk(chunk_id, context)
        except KbError as exc:
            raise _tool_error(f"{exc}: take chunk ids from search results") from exc
        return to_json({"chunk_id": chunk_id, "chunks": [c.to_dict() for c in chunks]})

    def similar(
        document_id: Annotated[
            int | None, Field(description="Find documents like this one (source.document_id).")
        ] = None,
        chunk_id: Annotated[
            int | None, Field(description="Or find passages like this chunk (a result's chunk_id).")
        ] = None,
        top: Annotated[int, Field(ge=1, le=MAX_SIMILAR, description="How many (default 10).")] = 10,
        compact: Compact = False,
    ) -> str:
        from kb_search.search.fields import COMPACT, project

        if (document_id is None) == (chunk_id is None):
            raise _tool_error("give exactly one of `document_id` or `chunk_id`")
        try:
            if chunk_id is not None:
                response = kb.similar(str(chunk_id), chunk=True, top=top)
            else:
                response = kb.similar(str(document_id), top=top)
        except KbError as exc:
            raise _tool_error(str(exc)) from exc
        return to_json(project(response, COMPACT) if compact else response.to_dict())

    def list_documents(
        type: Annotated[str | None, Field(description="Only this document type.")] = None,
        tag: Annotated[str | None, Field(description="Only documents with this tag.")] = None,
        limit: Annotated[
            int, Field(ge=1, le=MAX_LIST_LIMIT, description="Page size (default 100).")
        ] = DEFAULT_LIST_LIMIT,
        offset: Annotated[
            int, Field(ge=0, description="Documents to skip: the previous page's next_offset.")
        ] = 0,
    ) -> str:
        docs = kb.documents(type, tag, limit, offset)
        total = kb.document_count(type, tag)
        shown = offset + len(docs)
        return to_json(
            {
                "documents": [d.to_dict() for d in docs],
                "count": len(docs),
                "total": total,
                "next_offset": shown if shown < total else None,
            }
        )

    def list_tags() -> str:
        return to_json({"tags": kb.tags()})

    def stats() -> str:
        return to_json(kb.stats())

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
            "size, pages) and its chunks in order with citations, `limit` at a time from "
            "`offset` (`next_offset`: the next page, null: no more). Paths that are not indexed "
            "are refused: this never reads files from disk.",
        ),
        (
            get,
            "get",
            "Exactly the cited lines or page of indexed documents, several in one call, within "
            "max_bytes (whole passages first; `omitted` lists what did not fit).",
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
            "by type or tag, a page at a time: pass the answer's `next_offset` as `offset` for "
            "the next page (null: no more). Use to see what the knowledge base holds, not to "
            "find content.",
        ),
        (
            similar,
            "similar",
            "Documents like a document (`document_id`), or passages like a chunk (`chunk_id`), "
            "by meaning. Use to widen an answer from a good hit: related notes, other sources "
            "on the same topic. Same result shape as `search`.",
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
        server.add_tool(
            fn,
            name=name,
            description=description,
            annotations=read_only,
            structured_output=False,  # the JSON goes once, as text
        )


NAVIGATE = """\
Answer this from my knowledge base, with citations: {question}

How to work:
1. Call `search` with compact=true and a few of the words the answer would use. Try other
   words, or mode="vector" for a paraphrase, before concluding nothing is there.
2. When a hit starts or ends mid-thought, read around it: `get_chunk(chunk_id, context=2)`
   (ask `search` with fields=["chunk_id","citation","text"] to get chunk ids).
3. For related material, `similar(chunk_id=...)`; for the whole source, `get_document`.
4. Answer from what you read only. Put each result's `citation` next to what you took from
   it. If the knowledge base has nothing on it, say so instead of guessing."""


def register_prompts(server: Any) -> None:
    @server.prompt(
        name="navigate",
        description="Answer a question from the knowledge base: search, read around the hits,"
        " cite. Takes the question.",
    )
    def navigate(question: str) -> str:
        return NAVIGATE.format(question=question)


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
