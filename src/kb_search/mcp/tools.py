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

from kb_search.errors import KbError, NotFound
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


INSTRUCTIONS_HEAD = """\
Search a local knowledge base the user indexed with `kb add`; only indexed content is served,
never other files. `search` answers compact (chunk_id, citation, heading, score, text); quote a
result's `citation` (/abs/path#L10-L24 or /abs/path#page=N). Add two `variants` when the words
may differ from the documents': the words and identifiers the answer would contain
("lex: ..."), a rephrasing as the documents would title it ("vec: ..."; plain text ranks as
well); add others when `coverage` is weak. Read cited passages (the clean text that was
indexed) with get(citations), code by symbol with get(["a.py#Cls.method"]), around a hit with
get_chunk, widen with similar; search(explain=PATH) says why a file is not in the results. A
relative path is relative to an added folder."""


def instructions(stats: dict[str, Any], tags: list[dict[str, Any]]) -> str:
    """The server's instructions: how to search, then what this index holds (from the index
    itself, so every sentence is true of it)."""
    by_type = ", ".join(f"{n} {t}" for t, n in sorted(stats.get("by_type", {}).items()))
    count = stats.get("documents", 0)
    lines = [INSTRUCTIONS_HEAD, f"Index: {count} documents ({by_type or 'none'})."]
    if not stats:
        lines[1] = "Index: none yet (`kb add FOLDER` creates it)."
    roots = stats.get("roots") or []
    if roots:
        lines.append("Folders: " + ", ".join(str(r) for r in roots[:5]) + ".")
    top = sorted(tags, key=lambda t: (-t["documents"], t["tag"]))[:8]
    if top:
        lines.append("Tags (filter with tag:NAME): " + ", ".join(t["tag"] for t in top) + ".")
    model = stats.get("model")
    lines.append(
        f"Meaning search: {model}." if model else "No embedding model: keyword search only."
    )
    return "\n".join(lines)


def scores_text(fusion: str) -> str:
    """What a hybrid score means under `fusion` (the search.fusion setting)."""
    if fusion == "rrf":
        how = "Reciprocal Rank Fusion of the legs' ranks, normalised: 1 = first in every leg"
    else:
        how = "weighted sum of each leg's min-max normalised score: 1 = first in every leg"
    return f"Scores 0..1 rank one answer's results (not comparable across queries); hybrid: {how}."


QUERY_SYNTAX = (
    'Words (any may match), "a phrase", -word to exclude; filters type:pdf tag:NAME '
    "path:GLOB lang:go after:YYYY-MM-DD."
)

Query = Annotated[str, Field(description="What to look for. " + QUERY_SYNTAX)]
Variants = Annotated[
    list[str] | None,
    Field(
        description="Up to 4 more phrasings, fused with the query (which weighs most): "
        "'lex: keywords', 'vec: a rephrasing', or plain for both."
    ),
]
Top = Annotated[int, Field(ge=1, le=MAX_TOP, description="Results (default 10).")]
Mode = Annotated[
    Literal["hybrid", "lexical", "vector"],
    Field(description="hybrid (default), lexical (exact words only), vector (meaning only)."),
]
Compact = Annotated[
    bool, Field(description="Per result only chunk_id, citation, heading, score, text (default).")
]
Files = Annotated[bool, Field(description="Each file once, with its best chunk.")]
Fields = Annotated[
    list[str] | str | None,
    Field(description="Result fields instead, e.g. chunk_id, citation, text, path, source."),
]

# A search answer's token budget: far under the 25,000 tokens Claude Code accepts from a tool.
DEFAULT_MAX_TOKENS = 6_000
MAX_TOKENS = 20_000
MaxTokens = Annotated[
    int,
    Field(ge=1, le=MAX_TOKENS, description="Answer budget; next_cursor pages on."),
]
Cursor = Annotated[str | None, Field(description="next_cursor of the same search.")]

Explain = Annotated[
    str | None,
    Field(description="A file path: adds `explain`, why it is or is not in the results."),
]


def to_json(data: Any) -> str:
    """What every tool sends: compact JSON."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


def _tool_error(message: str) -> Exception:
    from mcp.server.mcpserver.exceptions import ToolError

    return ToolError(message)


def run_search(
    kb: KnowledgeBase,
    query: str,
    mode: str = "hybrid",
    top: int = DEFAULT_TOP,
    variants: list[str] | None = None,
    compact: bool = True,
    fields: list[str] | str | None = None,
    files: bool = False,
    explain: str | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    cursor: str | None = None,
) -> str:
    from kb_search.search.fields import chosen_fields, project

    try:
        # `fields` replaces the compact default; `compact: false` asks for the whole contract.
        selected = chosen_fields(fields or None, compact and not fields, ("fields", "compact"))
        options = kb.search_options(
            mode=mode,
            top=top,
            variants=tuple(variants or ()),
            files=files,
            max_tokens=max_tokens,
            cursor=cursor,
            fields=tuple(selected) if selected else None,
        )
        response = kb.search(query, options, explain=explain, relative_to_roots=True)
    except KbError as exc:
        raise _tool_error(str(exc)) from exc
    return to_json(project(response, selected))


def document_dict(
    kb: KnowledgeBase, ref: str, with_chunks: bool, offset: int = 0, limit: int | None = None
) -> dict[str, Any]:
    """An indexed document by id or indexed path, its chunks a page at a time (`next_offset`);
    anything else is an error, never a file read."""
    if not ref.strip() or "\x00" in ref:
        raise _tool_error("give a document id or the path of an indexed document")
    try:
        view = kb.reads.document(
            ref.strip(), with_chunks=with_chunks, offset=offset, limit=limit,
            relative_to_roots=True,
        )  # fmt: skip
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


class KbTools:
    """The MCP tools over one knowledge base. Each method is a tool of the same name: the SDK
    builds the tool's input schema from the method's parameters (names, annotations,
    defaults, Field descriptions), so they are the public contract."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb

    def search(
        self,
        query: Query,
        variants: Variants = None,
        mode: Mode = "hybrid",
        top: Top = DEFAULT_TOP,
        compact: Compact = True,
        files: Files = False,
        fields: Fields = None,
        explain: Explain = None,
        max_tokens: MaxTokens = DEFAULT_MAX_TOKENS,
        cursor: Cursor = None,
    ) -> str:
        return run_search(
            self.kb, query, mode, top, variants, compact, fields, files, explain, max_tokens,
            cursor,
        )  # fmt: skip

    def get_document(
        self,
        id: Annotated[int | None, Field(description="source.document_id")] = None,
        path: Annotated[str | None, Field(description="Or an indexed path or citation.")] = None,
        include_chunks: Annotated[bool, Field(description="With chunk texts.")] = True,
        offset: Annotated[int, Field(ge=0, description="Previous next_offset.")] = 0,
        limit: Annotated[
            int, Field(ge=1, le=MAX_DOCUMENT_CHUNKS, description="Chunks per page.")
        ] = DEFAULT_DOCUMENT_CHUNKS,
    ) -> str:
        if (id is None) == (path is None):
            raise _tool_error("give exactly one of `id` or `path`")
        ref = str(id) if id is not None else path or ""
        return to_json(document_dict(self.kb, ref, include_chunks, offset, limit))

    def get(
        self,
        citations: Annotated[
            list[str],
            Field(
                description="As search returns them, path.py#Class.method, or chunk:ID.",
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
            reading = self.kb.get(citations, context, max_bytes, relative_to_roots=True)
            return to_json(reading.to_dict())
        except KbError as exc:
            raise _tool_error(str(exc)) from exc

    def get_chunk(
        self,
        chunk_id: int,
        context: Annotated[int, Field(ge=0, le=MAX_CONTEXT)] = 0,
    ) -> str:
        try:
            chunks = self.kb.reads.chunk(chunk_id, context)
        except KbError as exc:
            raise _tool_error(f"{exc}: take chunk ids from search results") from exc
        return to_json({"chunk_id": chunk_id, "chunks": [c.to_dict() for c in chunks]})

    def similar(
        self,
        document_id: int | None = None,
        chunk_id: int | None = None,
        top: Annotated[int, Field(ge=1, le=MAX_SIMILAR)] = 10,
        compact: Compact = True,
    ) -> str:
        from kb_search.search.fields import COMPACT, project

        if (document_id is None) == (chunk_id is None):
            raise _tool_error("give exactly one of `document_id` or `chunk_id`")
        try:
            if chunk_id is not None:
                response = self.kb.similar(str(chunk_id), chunk=True, top=top)
            else:
                response = self.kb.similar(str(document_id), top=top)
        except KbError as exc:
            raise _tool_error(str(exc)) from exc
        return to_json(project(response, COMPACT if compact else None))

    def list_documents(
        self,
        type: str | None = None,
        tag: str | None = None,
        limit: Annotated[int, Field(ge=1, le=MAX_LIST_LIMIT)] = DEFAULT_LIST_LIMIT,
        offset: Annotated[int, Field(ge=0)] = 0,
    ) -> str:
        return to_json(self.kb.reads.document_page(type, tag, limit, offset).to_dict())

    def list_tags(self) -> str:
        return to_json({"tags": self.kb.reads.tags()})

    def stats(self) -> str:
        return to_json(self.kb.reads.stats())


# (KbTools method, description) in the order tools/list shows them. {scores} is filled at
# registration from the search.fusion setting, which decides what a hybrid score means.
TOOLS: tuple[tuple[str, str], ...] = (
    (
        "search",
        "Search the indexed documents: keywords (BM25) and meaning (embeddings) fused. {scores}"
        " Returns results[] (chunk_id, citation, heading, score, text; compact=false: the"
        " whole JSON contract), notes, legs when one failed (error: why).",
    ),
    (
        "get_document",
        "An indexed document by id or path: metadata and its chunks with citations,"
        " `limit` at a time from `offset` (next_offset: the next page).",
    ),
    (
        "get",
        "The cited passages as the clean text that was indexed, with their lines or pages;"
        " several within max_bytes (`omitted`: what did not fit).",
    ),
    (
        "get_chunk",
        "A chunk by chunk_id with `context` neighbours each side, in order, with citations.",
    ),
    (
        "list_documents",
        "Indexed documents a page at a time (offset = previous next_offset; null: done).",
    ),
    (
        "similar",
        "Passages like a chunk (chunk_id) or documents like a document (document_id).",
    ),
    ("list_tags", "Tags with document counts (filter a search with tag:NAME)."),
    ("stats", "Counts by type, tags, roots, embedding model, database size."),
)


def register_tools(server: Any, kb: KnowledgeBase) -> None:
    from mcp_types import ToolAnnotations

    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
    tools = KbTools(kb)
    scores = scores_text(kb.config["search.fusion"])
    for name, description in TOOLS:
        server.add_tool(
            getattr(tools, name),
            name=name,
            description=description.format(scores=scores),
            annotations=read_only,
            structured_output=False,  # the JSON goes once, as text
        )
        tool = server._tool_manager.get_tool(name)
        tool.parameters = lean_schema(tool.parameters)


def lean_schema(schema: Any) -> Any:
    """An input schema as an agent pays for it: without the titles the library derives from
    argument names (`"title": "Top"` says nothing the key does not), and an optional argument
    as its type (`anyOf [T, null]` with a null default is T, not required). Arguments are
    still validated against the full signature."""
    if isinstance(schema, list):
        return [lean_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    lean = {k: lean_schema(v) for k, v in schema.items() if k != "title"}
    if "properties" in schema:  # an object's properties are names, not a schema's keywords
        lean["properties"] = {k: lean_schema(v) for k, v in schema["properties"].items()}
    options = lean.get("anyOf")
    if lean.get("default", 0) is None and isinstance(options, list):
        kept = [o for o in options if o != {"type": "null"}]
        lean.pop("anyOf")
        lean.pop("default")
        lean.update(kept[0] if len(kept) == 1 else {"anyOf": kept})
    return lean


NAVIGATE = """\
Answer this from my knowledge base, with citations: {question}

How to work:
1. Call `search` with the question and `variants`: the words and identifiers the answer
   would contain ("lex: ..."), a rephrasing as the docs would say it ("vec: ..."). Try other
   words before concluding nothing is there.
2. Read a hit's passage with `get([citation])`; when it starts or ends mid-thought, read
   around it: `get_chunk(chunk_id, context=2)`.
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
        return json.dumps(kb.reads.stats(), ensure_ascii=False)

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
