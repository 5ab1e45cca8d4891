"""`kb serve`: the knowledge base over MCP (stdio or streamable HTTP), read-only.

Every answer comes from rows of the database; no tool ever opens a file from disk, so a
path that is not indexed (`../` tricks and symlink escapes included) is simply not found.
"""

from __future__ import annotations

import sys
from typing import Any

from kb_search.errors import KbError, ServeError
from kb_search.knowledge_base import KnowledgeBase
from kb_search.mcp.http import check_bind, http_app
from kb_search.mcp.tools import INSTRUCTIONS, register_resources, register_tools


def build_server(kb: KnowledgeBase) -> Any:
    from mcp.server.mcpserver import MCPServer

    from kb_search import __version__

    server = MCPServer(
        "kb-search", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING"
    )
    register_tools(server, kb)
    register_resources(server, kb)
    return server


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


def model_line(kb: KnowledgeBase) -> str:
    leg = kb.vector_leg()
    if leg.search is None:
        return f"lexical only ({leg.unavailable})"
    count = len(leg.search.index) if hasattr(leg.search.index, "__len__") else "?"
    return f"model {leg.search.embedder.name}, {count} vectors in memory"


def serve(
    kb: KnowledgeBase,
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
    try:
        kb.reader()  # fails now, before serving, when there is no database
    except KbError as exc:
        raise ServeError(str(exc)) from exc
    server = build_server(kb)
    _say(f"kb serve: {kb.db_path} ({model_line(kb)}), read-only")
    if transport == "stdio":
        server.run("stdio")
    else:
        _run_http(server, host, port, token, extra_hosts or [])
