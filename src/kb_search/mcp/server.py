"""`kb serve`: the knowledge base over MCP (stdio or streamable HTTP), read-only.

Every answer comes from rows of the database; no tool ever opens a file from disk, so a
path that is not indexed (`../` tricks and symlink escapes included) is simply not found.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
import sys
import threading
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from kb_search.config import Config
from kb_search.store import db

LOOPBACK_NAMES = ("localhost",)
DEFAULT_TOP = 10
MAX_TOP = 100
MAX_CONTEXT = 20
DEFAULT_LIST_LIMIT = 100
MAX_LIST_LIMIT = 10_000


class ServeError(Exception):
    """The server cannot start as asked (an unsafe bind, a missing database, ...)."""


# ---- the read-only knowledge base ---------------------------------------------------------


@dataclass
class LiveVectorIndex:
    """A MatrixIndex kept in step with its vector table while `kb add` writes to it.

    Chunk ids are reused (a re-added document's chunks may get the ids its old chunks had),
    so rows are matched by id AND content hash, which decides the vector: rows whose chunk
    is gone or changed are dropped, new ones fetched. Reloading everything per commit would
    cost ~20 ms per thousand vectors (vec0 scans are slow) while `kb add` commits per file.
    """

    table: str
    index: Any = None
    hashes: dict[int, str] = field(default_factory=dict)
    signature: tuple | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    seen: threading.local = field(default_factory=threading.local)

    def refresh(self, conn: db.Connection) -> None:
        # data_version changes only when another connection commits: a cheap first test.
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        if getattr(self.seen, "version", None) == (id(conn), version):
            return
        self.seen.version = (id(conn), version)
        if self._signature(conn) == self.signature:
            return
        with self.lock:
            conn.execute("BEGIN")  # one snapshot for the signature, the hashes and the vectors
            try:
                signature = self._signature(conn)
                if signature != self.signature:
                    self._sync(conn)
                    self.signature = signature
            finally:
                conn.execute("COMMIT")

    def _signature(self, conn: db.Connection) -> tuple:
        return conn.execute(
            f"SELECT (SELECT count(*) FROM {self.table}), (SELECT count(*) FROM chunks),"
            " (SELECT max(id) FROM chunks), (SELECT max(indexed_at) FROM documents)"
        ).fetchone()

    def _sync(self, conn: db.Connection) -> None:
        from kb_search.vectors.tables import MatrixIndex, fetch_vectors

        current = dict(conn.execute("SELECT id, content_hash FROM chunks"))
        old = self.index or MatrixIndex(self.table)
        keep = [
            row
            for row, cid in enumerate(old.ids.tolist())
            if current.get(cid) is not None and current[cid] == self.hashes.get(cid)
        ]
        kept = set(old.ids[keep].tolist())
        ids, fresh = fetch_vectors(conn, self.table, [cid for cid in current if cid not in kept])
        merged = MatrixIndex(self.table)
        merged.ids = np.concatenate([old.ids[keep], np.array(ids, dtype=np.int64)])
        parts = [old.matrix[keep]] if keep else []
        if ids:
            parts.append(fresh)
        if parts:
            merged.matrix = np.vstack(parts)
        merged.position = {int(cid): i for i, cid in enumerate(merged.ids.tolist())}
        self.hashes = {int(cid): current[int(cid)] for cid in merged.ids.tolist()}
        self.index = merged

    def nearest(
        self, conn: db.Connection, vector: Any, k: int, allowed: set[int] | None
    ) -> list[tuple[int, float]]:
        self.refresh(conn)
        return self.index.nearest(conn, vector, k, allowed)


class KnowledgeBase:
    """What the tools read: one read-only connection per worker thread, one loaded model."""

    def __init__(self, config: Config):
        self.config = config
        self._local = threading.local()
        conn = self.connection()  # fails now, before serving, when there is no database
        self.vector, self.vector_unavailable = self._load_vector_leg(conn)

    def connection(self) -> db.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = db.connect(self.config.db_path, readonly=True)
            except db.DBError as exc:
                raise ServeError(str(exc)) from exc
            self._local.conn = conn
        return conn

    def _load_vector_leg(self, conn: db.Connection) -> tuple[Any, str | None]:
        from kb_search.vectors.model import model_for_search
        from kb_search.vectors.tables import VectorSearch

        found, why = model_for_search(self.config, conn, one_shot=False)
        if found is None:
            return None, why
        live = LiveVectorIndex(found.index.table)
        live.refresh(conn)
        found.embedder.embed_query("warm up")  # the first ONNX run is slow; pay it now
        return VectorSearch(found.embedder, live), None

    def model_line(self) -> str:
        if self.vector is None:
            return f"lexical only ({self.vector_unavailable})"
        index = self.vector.index.index
        return f"model {self.vector.embedder.name}, {len(index.ids)} vectors in memory"


# ---- tools ----------------------------------------------------------------------------------

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
    from kb_search.search.pipeline import SearchError, SearchOptions, search
    from kb_search.search.query import Filters

    options = SearchOptions(
        mode=mode,
        top=top,
        filters=Filters(*(_as_list(f) for f in filters)),
        min_score=min_score,
        rrf_k=kb.config["search.rrf_k"],
    )
    vector = None if mode == "lexical" else kb.vector
    try:
        response = search(
            kb.connection(), query, options, vector=vector, vector_unavailable=kb.vector_unavailable
        )
    except SearchError as exc:
        raise _tool_error(str(exc)) from exc
    return response.to_dict()


def document_dict(kb: KnowledgeBase, ref: str, with_chunks: bool) -> dict[str, Any]:
    """An indexed document by id or indexed path; anything else is an error, never a file read."""
    from kb_search.store.inventory import NotFound, get_document

    if not ref.strip() or "\x00" in ref:
        raise _tool_error("give a document id or the path of an indexed document")
    try:
        return get_document(kb.connection(), ref.strip(), with_chunks=with_chunks).to_dict()
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
        from kb_search.store import inventory

        try:
            chunks = inventory.get_chunk(kb.connection(), chunk_id, context)
        except inventory.NotFound as exc:
            raise _tool_error(f"{exc}: take chunk ids from search results") from exc
        return {"chunk_id": chunk_id, "chunks": [c.to_dict() for c in chunks]}

    def list_documents(
        type: Annotated[str | None, Field(description="Only this document type.")] = None,
        tag: Annotated[str | None, Field(description="Only documents with this tag.")] = None,
        limit: Annotated[int, Field(ge=1, le=MAX_LIST_LIMIT)] = DEFAULT_LIST_LIMIT,
    ) -> dict[str, Any]:
        from kb_search.store import inventory

        docs = inventory.list_documents(kb.connection(), type, tag, limit)
        return {"documents": [d.to_dict() for d in docs], "count": len(docs)}

    def list_tags() -> dict[str, Any]:
        from kb_search.store import inventory

        return {"tags": inventory.list_tags(kb.connection())}

    def stats() -> dict[str, Any]:
        from kb_search.store import inventory

        return inventory.stats(kb.connection(), kb.config.db_path)

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
        from kb_search.store.inventory import stats

        return json.dumps(stats(kb.connection(), kb.config.db_path), ensure_ascii=False)

    @server.resource(
        "kb://document/{id}",
        name="document",
        description="An indexed document with its chunks, by document id.",
        mime_type="application/json",
    )
    def document_resource(id: str) -> str:
        if not id.isdigit():
            raise ResourceError(f"kb://document/{{id}} takes a numeric document id, not {id!r}")
        try:
            data = document_dict(kb, id, with_chunks=True)
        except Exception as exc:  # noqa: BLE001 - a ToolError here becomes a resource error
            raise ResourceError(str(exc)) from exc
        return json.dumps(data, ensure_ascii=False, default=str)


def build_server(kb: KnowledgeBase) -> Any:
    from mcp.server.mcpserver import MCPServer

    from kb_search import __version__

    server = MCPServer(
        "kb-search", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING"
    )
    register_tools(server, kb)
    register_resources(server, kb)
    return server


# ---- HTTP: bind checks, bearer token, DNS-rebinding protection -----------------------------


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    if not is_loopback(host) and not token:
        raise ServeError(
            f"refusing to serve on {host} without a bearer token: anyone who can reach it could "
            "read the whole knowledge base. Pass --token (or set KB_MCP_TOKEN), or bind to "
            "127.0.0.1."
        )


def _host_names(host: str, extra: list[str]) -> list[str]:
    names = {"127.0.0.1", "localhost", "[::1]", host if ":" not in host else f"[{host}]"}
    if host in ("0.0.0.0", "::"):
        # A wildcard bind is reached by this machine's own names and addresses.
        hostname = socket.gethostname()
        names.add(hostname)
        try:
            names.update(socket.gethostbyname_ex(hostname)[2])
        except OSError:
            pass
    names.update(extra)
    return sorted(names)


def transport_security(host: str, extra_hosts: list[str] | None = None) -> Any:
    """Host/Origin allow-lists: a browser page under another name (DNS rebinding) gets 421/403."""
    from mcp.server.transport_security import TransportSecuritySettings

    names = _host_names(host, extra_hosts or [])
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*names, *(f"{n}:*" for n in names)],
        allowed_origins=[
            f"{scheme}://{n}{port}"
            for n in names
            for scheme in ("http", "https")
            for port in ("", ":*")
        ],
    )


class BearerTokenMiddleware:
    """401 for every HTTP request without `Authorization: Bearer <token>`."""

    def __init__(self, app: Any, token: str):
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            await self._reject(send)
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope: dict[str, Any]) -> bool:
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                return hmac.compare_digest(value, self.expected)
        return False

    @staticmethod
    async def _reject(send: Any) -> None:
        body = b'{"error": "unauthorized: send Authorization: Bearer <token>"}'
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b'Bearer realm="kb"'),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def http_app(
    server: Any, host: str, token: str | None, extra_hosts: list[str] | None = None
) -> Any:
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        transport_security=transport_security(host, extra_hosts),
        host=host,
    )
    return BearerTokenMiddleware(app, token) if token else app


def _run_http(server: Any, host: str, port: int, token: str | None, extra_hosts: list[str]) -> None:
    import uvicorn

    app = http_app(server, host, token, extra_hosts)
    shown = f"[{host}]" if ":" in host else host
    _say(
        f"kb serve: listening on http://{shown}:{port}/mcp"
        + (" (bearer token required)" if token else "")
    )
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)


def _say(line: str) -> None:
    # stdout belongs to the stdio transport: every human message goes to stderr.
    print(line, file=sys.stderr, flush=True)


def serve(
    config: Config,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    extra_hosts: list[str] | None = None,
) -> None:
    """Serve the index over MCP until interrupted; the model is loaded before any request."""
    if transport not in ("stdio", "http"):
        raise ServeError(f"unknown transport {transport!r}: use stdio or http")
    token = token or None
    if transport == "http":
        check_bind(host, token)
    kb = KnowledgeBase(config)
    server = build_server(kb)
    _say(f"kb serve: {config.db_path} ({kb.model_line()}), read-only")
    if transport == "stdio":
        server.run("stdio")
    else:
        _run_http(server, host, port, token, extra_hosts or [])
