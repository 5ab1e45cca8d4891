"""`kb serve`: the knowledge base over MCP (stdio or streamable HTTP), read-only.

Every answer comes from rows of the database; no tool ever opens a file from disk, so a
path that is not indexed (`../` tricks and symlink escapes included) is simply not found.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from kb_search.errors import KbError, ServeError
from kb_search.knowledge_base import KnowledgeBase
from kb_search.mcp.http import HttpLimits, bounded_protocol, check_bind, http_app
from kb_search.mcp.tools import (
    instructions,
    register_prompts,
    register_resources,
    register_tools,
)
from kb_search.mcp.watchdog import start_stop_watchdog
from kb_search.sanitize import log_field

if TYPE_CHECKING:
    from kb_search.ingest.watch import WatchBatch, WatchThread

_TYPE_WORDS = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "string": "a string",
    "list": "a list",
}


def invalid_arguments(
    tool: str, errors: list[dict[str, Any]], valid: list[str] | None = None
) -> str:
    """A validation failure in words: which argument, what it must be (no library text); an
    unknown argument name comes with the `valid` ones."""
    problems = []
    for error in errors:
        # A client's own key names are echoed: one line, valid text, not a page long.
        where = log_field(".".join(str(part) for part in error.get("loc", ())))[:60] or "arguments"
        ctx = error.get("ctx") or {}
        kind = error.get("type", "")
        if kind == "missing":
            what = "is required"
        elif kind in ("less_than_equal", "less_than"):
            what = f"must be at most {ctx.get('le', ctx.get('lt'))}"
        elif kind in ("greater_than_equal", "greater_than"):
            what = f"must be at least {ctx.get('ge', ctx.get('gt'))}"
        elif kind == "literal_error":
            what = f"must be one of {ctx.get('expected', '')}".replace("'", "")
        elif kind.split("_")[0] in _TYPE_WORDS:
            what = f"must be {_TYPE_WORDS[kind.split('_')[0]]}"
        elif kind == "extra_forbidden":
            what = "is not an argument of this tool"
        else:
            what = str(error.get("msg", "is not valid")).split("\n")[0]
        problems.append(f"`{where}` {what}")
    text = f"invalid arguments for {tool}: " + "; ".join(problems)
    if valid is not None and any(e.get("type") == "extra_forbidden" for e in errors):
        text += f" (its arguments: {', '.join(valid) or 'none'})"
    return text


async def cancellable_call(call: Any) -> Any:
    """Await a tool call whose work runs on a worker thread, which the library waits for even
    when the request is cancelled (the client sent notifications/cancelled, or its session
    ended): a watcher task, cancelled with the request, tells the search to stop."""
    import anyio

    cancelled = threading.Event()

    async def watch() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    outcome: list[Any] = []

    async def run() -> None:
        try:
            outcome.append(await call)
        except Exception as exc:  # noqa: BLE001 - raised below, outside the task group
            outcome.append(exc)

    with KnowledgeBase.cancelled_by(cancelled):
        async with anyio.create_task_group() as group:
            group.start_soon(watch)
            await run()
            group.cancel_scope.cancel()
    if outcome and isinstance(outcome[0], Exception):
        raise outcome[0]
    return outcome[0]


def _server_class() -> type:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
    from pydantic import ValidationError

    class KbMCPServer(MCPServer):
        """MCPServer whose argument errors say what is wrong in plain words."""

        async def call_tool(self, name: str, arguments: dict[str, Any], *args: Any, **kw: Any):
            # An argument the tool does not have is refused, not ignored: a misspelt `limit`
            # for `top` would otherwise run a different search than the client asked for.
            tool = self._tool_manager.get_tool(name)
            if tool is not None:
                known = tool.parameters.get("properties", {})
                extra = [key for key in arguments or {} if key not in known]
                if extra:
                    errors = [{"loc": (key,), "type": "extra_forbidden"} for key in extra]
                    raise ToolError(invalid_arguments(name, errors, list(known)))
            try:
                return await cancellable_call(super().call_tool(name, arguments, *args, **kw))
            except ToolError as exc:
                cause = exc.__cause__
                if isinstance(cause, ValidationError):
                    raise ToolError(invalid_arguments(name, cause.errors())) from None
                raise

        async def read_resource(self, uri: Any, *args: Any, **kw: Any):
            try:
                return await super().read_resource(uri, *args, **kw)
            except ResourceNotFoundError:
                # The library's text echoes the URI raw: a client's CR or NUL on our line.
                shown = log_field(str(uri))[:80]
                raise ResourceNotFoundError(
                    f"no resource {shown}: read kb://stats or kb://document/ID (a document id"
                    " from search results)"
                ) from None

    return KbMCPServer


def build_server(kb: KnowledgeBase) -> Any:
    from kb_search import __version__

    try:
        text = instructions(kb.reads.stats(), kb.reads.tags())
    except KbError:  # no index yet (serve() refuses to start; tests build one anyway)
        text = instructions({}, [])
    server = _server_class()(
        "kb-search", instructions=text, version=__version__, log_level="WARNING"
    )
    register_tools(server, kb)
    register_resources(server, kb)
    register_prompts(server)
    _quiet_library_tracebacks()
    return server


class OneLinePerKind(logging.Filter):
    """The libraries' logged exceptions (a client gone mid-body, a session that crashed) in
    one line, once per logger and kind: hundreds of slow or vanished clients made thousands
    of lines of tracebacks. KB_DEBUG=1 keeps them whole."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[tuple[str, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None:
            return True
        kind = (record.name, type(exc).__name__)
        if kind in self.seen:
            return False
        self.seen.add(kind)
        detail = log_field(str(exc).strip().splitlines()[0] if str(exc).strip() else "")[:200]
        record.msg = f"{record.getMessage()}: {type(exc).__name__} {detail}".rstrip()
        record.args = ()
        record.exc_info = record.exc_text = None
        return True


def _quiet_library_tracebacks() -> None:
    if os.environ.get("KB_DEBUG"):
        return
    quiet = OneLinePerKind()
    for handler in logging.getLogger().handlers:
        handler.addFilter(quiet)


def http_limits(kb: KnowledgeBase) -> HttpLimits:
    config = kb.config
    return HttpLimits(
        max_connections=config["serve.max_connections"],
        request_timeout_s=config["serve.request_timeout_s"],
        max_body_bytes=config["serve.max_body_bytes"],
        max_sessions=config["serve.max_sessions"],
        session_idle_s=config["serve.session_idle_s"],
    )


def _run_http(
    server: Any, host: str, port: int, token: str | None, extra_hosts: list[str],
    limits: HttpLimits,
) -> None:  # fmt: skip
    import uvicorn

    app = http_app(server, host, token, extra_hosts, limits)
    shown = f"[{host}]" if ":" in host else host
    _say(
        f"kb serve: listening on http://{shown}:{port}/mcp"
        + (" (bearer token required)" if token else "")
    )
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=bounded_protocol(limits),
        backlog=limits.connection_cap(),
        timeout_keep_alive=limits.keep_alive_s,
        timeout_graceful_shutdown=1,
        log_level="warning",
        access_log=False,
    )
    _uvicorn_server(config).run()


def _uvicorn_server(config: Any) -> Any:
    """uvicorn's Server, stopped for good within STOP_GRACE_S of SIGTERM or SIGINT (its own
    shutdown waits for open event streams and running tool calls), and saying once, not with a
    traceback per connection, that the process ran out of file descriptors."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            super().handle_exit(sig, frame)
            _exit_after(STOP_GRACE_S, sig)

        async def serve(self, sockets: Any = None) -> None:
            import asyncio

            asyncio.get_running_loop().set_exception_handler(_loop_problem)
            await super().serve(sockets)

    return Server(config)


STOP_GRACE_S = 2.0
WATCH_BATCH_GRACE_S = 30.0
_exiting = threading.Event()


def _exit_after(seconds: float, signum: int) -> None:
    """Once: end the process `seconds` from now if it has not ended by then."""
    if _exiting.is_set():
        return
    _exiting.set()

    def stop() -> None:
        time.sleep(seconds)
        _say("kb serve: stopped")
        os._exit(128 + signum)

    threading.Thread(target=stop, name="stop", daemon=True).start()


_reported: set[str] = set()


def _loop_problem(loop: Any, context: dict[str, Any]) -> None:
    """The event loop's errors in one line each, once per kind: an accept that fails for
    want of file descriptors (asyncio retries it a second later) must not flood the log."""
    exc = context.get("exception")
    what = f"{type(exc).__name__}: {exc}" if exc is not None else context.get("message", "")
    kind = type(exc).__name__ if exc is not None else str(context.get("message"))
    if kind not in _reported:
        _reported.add(kind)
        _say(f"kb serve: {log_field(str(what))[:200]} (kept serving)")


def _say(line: str) -> None:
    # stdout belongs to the stdio transport: every human message goes to stderr.
    print(line, file=sys.stderr, flush=True)


def _stop_on_first_interrupt(watcher: WatchThread | None = None) -> None:
    """Ctrl-C stops the stdio server at once. Left to the event loop, the first one is
    swallowed: the loop waits for the thread blocked reading stdin, which nothing can cancel.
    The server only reads; a watcher (`--watch`) first finishes the batch it is syncing."""
    if threading.current_thread() is not threading.main_thread():
        return

    def stop(signum: int, frame: object) -> None:
        if watcher is not None and not watcher.close(timeout=WATCH_BATCH_GRACE_S):
            _say("kb serve: the batch in progress did not finish; rerun `kb sync`")
        _say("kb serve: stopped")
        os._exit(128 + signum)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)


class BoundedLines:
    """Lines of a binary stream as the stdio transport reads them, none longer than
    `max_bytes`: a longer one is skipped as it arrives (memory stays at one line's worth) and
    reported on stderr; the client gets no answer to it, as to any unreadable message."""

    def __init__(self, stream: Any, max_bytes: int) -> None:
        self.stream = stream
        self.max_bytes = max_bytes

    def __aiter__(self) -> BoundedLines:
        return self

    async def __anext__(self) -> str:
        import anyio

        line = await anyio.to_thread.run_sync(self.next_line, abandon_on_cancel=True)
        if line is None:
            raise StopAsyncIteration
        return line

    def next_line(self) -> str | None:
        while True:
            raw = self.stream.readline(self.max_bytes + 1)
            if not raw:
                return None
            if len(raw) <= self.max_bytes or raw.endswith(b"\n"):
                return raw.decode("utf-8", errors="replace")
            skipped = len(raw) + self._skip_line()
            _say(
                f"kb serve: dropped a message of {skipped:,} bytes or more (over the"
                f" {self.max_bytes:,}-byte line limit, serve.max_line_bytes)"
            )

    def _skip_line(self) -> int:
        skipped = 0
        while True:
            piece = self.stream.readline(self.max_bytes)
            skipped += len(piece)
            if not piece or piece.endswith(b"\n"):
                return skipped


def run_stdio(server: Any, max_line_bytes: int) -> None:
    """The SDK's stdio transport, reading stdin through BoundedLines (its own reader keeps
    a line that never ends in memory: 466 MB became 2.57 GB in 16 s)."""
    import anyio
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server
    stdin = BoundedLines(sys.stdin.buffer, max_line_bytes)

    async def run() -> None:
        async with stdio_server(stdin=stdin) as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    anyio.run(run)


def start_line(kb: KnowledgeBase) -> str:
    """What the server serves: the model (loading meanwhile) and the reranker, built now
    (ServeError, rather than an error on every search, when it cannot be had)."""
    try:
        reranker = kb.search_options().reranker
    except KbError as exc:
        raise ServeError(str(exc)) from exc
    reranked = f", reranked by {reranker.name}" if reranker is not None else ""
    model = kb.reads.bound_model()
    if model is None:
        return f"no embedding model bound: lexical only{reranked}"
    return f"model {model}{reranked}"


def load_vectors(kb: KnowledgeBase) -> threading.Thread:
    """The model and the vectors, loaded on a thread of their own while the server starts and
    its client connects (~1 s at 30k chunks): a search that comes first waits for them, so
    every answer is the same as if they had been loaded before. Says so when they cannot be."""

    def load() -> None:
        try:
            leg = kb.vector_leg()
        except Exception as exc:  # noqa: BLE001 - searches report it; the server goes on
            _say(f"kb serve: the vector index could not be loaded ({exc}): lexical only")
            return
        if leg.search is None and leg.unavailable:
            _say(f"kb serve: lexical only ({leg.unavailable})")

    thread = threading.Thread(target=load, name="load-vectors", daemon=True)
    thread.start()
    return thread


def serve(
    kb: KnowledgeBase,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    extra_hosts: list[str] | None = None,
    watch: bool = False,
) -> None:
    """Serve the index over MCP until interrupted; the model and vectors load meanwhile (a
    search waits for them). `watch`: a background thread follows the added folders and syncs
    what changes (its own writer connection; searches go on while it writes)."""
    if transport not in ("stdio", "http"):
        raise ServeError(f"unknown transport {transport!r}: use stdio or http")
    token = token or None
    if transport == "http":
        check_bind(host, token)
    try:
        kb.reader()  # fails now, before serving, when there is no database
    except KbError as exc:
        raise ServeError(str(exc)) from exc
    load_vectors(kb)
    server = build_server(kb)
    mode = "watching the added folders" if watch else "read-only"
    _say(f"kb serve: {kb.db_path} ({start_line(kb)}), {mode}")
    watcher = _start_watch(kb) if watch else None
    # The stdio server lets a watcher finish its batch (up to 30 s); http stops in 2 s.
    grace = (WATCH_BATCH_GRACE_S if watcher and transport == "stdio" else STOP_GRACE_S) + 1
    start_stop_watchdog(grace)
    try:
        if transport == "stdio":
            _stop_on_first_interrupt(watcher)
            run_stdio(server, kb.config["serve.max_line_bytes"])
        else:
            _run_http(server, host, port, token, extra_hosts or [], http_limits(kb))
    finally:
        if watcher is not None:
            watcher.close()


def _start_watch(kb: KnowledgeBase) -> WatchThread:
    """Sync the added folders as they change, from a thread with its own KB (connections)
    sharing the server's model."""
    def on_batch(batch: WatchBatch) -> None:
        if batch.changed:
            _say(f"kb serve: {batch.line()}")

    def run(stop: threading.Event) -> None:
        writer = kb.companion()
        try:
            writer.watch(
                None, on_batch, stop, on_ready=lambda plan: _say(f"kb serve: {plan.line()}")
            )
        finally:
            writer.close()

    return kb.watch_in_background(run, lambda message: _say(f"kb serve: {message}"))
