"""Every request is bounded (issue 25, breaks 5, 6, 7 and 14): a query's length, the time a
search may take, what an HTTP client may hold (connections, time, body size, sessions), a
stdio line; and `kb serve` stops promptly. Real servers on loopback, bounded loops."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import httpx2
import pytest
from bounds_harness import (
    ACCEPT,
    KB,
    Index,
    build_index,
    call_tool,
    initialize_message,
    open_session,
    start_http,
)


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Index:
    return build_index(tmp_path_factory.mktemp("bounds"))


def raw_or_query(terms: int) -> str:
    """A raw FTS5 expression (a query in single quotes) of `terms` ORs: FTS5 parses it in
    time that grows with the square of its length, without calling the progress handler."""
    return "'" + " OR ".join(f"w{i}" for i in range(terms)) + "'"


# ---- break 5: the query and the search budget -------------------------------------------------


def test_a_long_query_is_refused_at_once_with_one_line(index: Index) -> None:
    # 119 KB (one argument's most): FTS5 parsed such ORs in quadratic time, unbounded by the
    # search budget (700 KB took 19.5 s with a 10 s budget)
    query = "deploy " * 17_000
    started = time.monotonic()
    result = index.kb("search", query, "--mode", "lexical", timeout=60)
    elapsed = time.monotonic() - started
    assert result.returncode == 1
    assert "119,000 characters long, over the 4,000 limit" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert elapsed < 5


def test_the_keyword_leg_searches_at_most_64_distinct_words(index: Index) -> None:
    words = " ".join(f"w{i}" for i in range(300)) + " rollback"
    result = index.kb("search", words, "--mode", "lexical", "--format", "json")
    assert result.returncode == 0, result.stderr
    notes = json.loads(result.stdout)["notes"]
    assert any("first 64 distinct words; 237 more were left out" in note for note in notes)


def test_an_mcp_query_over_the_limit_is_a_tool_error(index: Index) -> None:
    server = start_http(index)
    try:
        with httpx2.Client(timeout=20) as client:
            session = open_session(client, server.url)
            started = time.monotonic()
            reply = call_tool(client, server.url, session, "search", query="deploy " * 20_000)
            assert time.monotonic() - started < 5
        assert reply["result"]["isError"] is True
        assert "over the 4,000 limit" in reply["result"]["content"][0]["text"]
    finally:
        assert "Traceback" not in server.stop()


def test_a_cancelled_search_stops(tmp_path: Path, kb, environment) -> None:
    """The MCP server sets SEARCH_CANCELLED's event when the request is cancelled or its
    client goes away: the search stops at its next check instead of running on."""
    from kb_search.config import load_config
    from kb_search.errors import SearchError
    from kb_search.knowledge_base import KnowledgeBase
    from kb_search.search.budget import SEARCH_CANCELLED

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nrollback the deploy\n")
    kb("add", str(docs))
    config = load_config(env=environment.env, cwd=environment.cwd, home=environment.home)
    knowledge = KnowledgeBase(config)
    cancelled = threading.Event()
    cancelled.set()
    token = SEARCH_CANCELLED.set(cancelled)
    try:
        with pytest.raises(SearchError, match="cancelled"):
            knowledge.search("rollback", knowledge.search_options(mode="lexical"))
    finally:
        SEARCH_CANCELLED.reset(token)
        knowledge.close()


# ---- kb serve stops promptly --------------------------------------------------------------------


def test_serve_exits_promptly_on_sigterm_during_a_slow_search(index: Index) -> None:
    """A search FTS5 spends seconds parsing (limits raised so that it gets through) is
    running when SIGTERM comes: the server exits within ~2 s, without a traceback."""
    raised = {
        "KB_MAX_QUERY_CHARS": "2000000",
        "KB_SERVE_MAX_BODY": "4000000",
        "KB_SEARCH_TIMEOUT": "300",
    }
    server = start_http(index, env=raised)
    query = raw_or_query(120_000)  # ~1.3 MB: tens of seconds of parsing
    try:
        with httpx2.Client(timeout=60) as client:
            session = open_session(client, server.url)
            slow = threading.Thread(
                target=_ignore_errors(call_tool), args=(client, server.url, session, "search"),
                kwargs={"query": query, "mode": "lexical"}, daemon=True,
            )  # fmt: skip
            slow.start()
            time.sleep(1.5)  # the request is in, FTS5 is parsing
            assert server.process.poll() is None
            started = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            try:
                server.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pytest.fail("kb serve still runs 10 s after SIGTERM")
            elapsed = time.monotonic() - started
        assert elapsed < 3, elapsed
    finally:
        err = server.stop()
    assert "Traceback" not in err


def _ignore_errors(function):
    def run(*args, **kwargs):
        try:
            function(*args, **kwargs)
        except Exception:  # noqa: BLE001 - the server is stopped under it on purpose
            pass

    return run


# ---- break 6: connections, timeouts, bodies ----------------------------------------------------


def test_idle_connections_neither_exhaust_descriptors_nor_lock_clients_out(index: Index) -> None:
    """300 idle connections against a server allowed 256 open files (1,100 at 1,024 made it
    exit with EMFILE): it stays up and a real client still gets its answer."""
    server = start_http(index, nofile=256)
    idle: list[socket.socket] = []
    try:
        for _ in range(300):
            idle.append(socket.create_connection(("127.0.0.1", server.port), timeout=5))
        time.sleep(0.5)
        assert server.process.poll() is None, "kb serve died"
        with httpx2.Client(timeout=10) as client:
            session = open_session(client, server.url)
            reply = call_tool(client, server.url, session, "search", query="roll back")
        assert "deploy.md" in reply["result"]["content"][0]["text"]
        assert server.process.poll() is None
    finally:
        for sock in idle:
            sock.close()
        err = server.stop()
    assert "Traceback" not in err
    assert len(err.splitlines()) < 20


def test_connections_that_never_finish_their_request_are_closed_quietly(index: Index) -> None:
    """Silent and trickling clients are cut off after serve.request_timeout_s, each with no
    traceback (30 slow bodies logged hundreds of lines of them before)."""
    server = start_http(index, env={"KB_SERVE_REQUEST_TIMEOUT": "1"})
    head = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{"
    )
    clients = []
    try:
        clients.append(socket.create_connection(("127.0.0.1", server.port), timeout=5))
        for _ in range(30):
            trickle = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            trickle.sendall(head)
            clients.append(trickle)
        started = time.monotonic()
        for sock in clients:
            assert sock.recv(1024) == b""  # closed by the server (a timeout raises instead)
        assert time.monotonic() - started < 4
    finally:
        for sock in clients:
            sock.close()
        err = server.stop()
    assert "Traceback" not in err
    assert len(err.splitlines()) < 8, err


def test_request_bodies_over_the_cap_get_413(index: Index) -> None:
    server = start_http(index)
    try:
        message = initialize_message()
        message["params"]["padding"] = "x" * (300 * 1024)
        with httpx2.Client(timeout=10) as client:
            response = client.post(server.url, json=message, headers={"accept": ACCEPT})
        assert response.status_code == 413
    finally:
        assert "Traceback" not in server.stop()


# ---- break 7: sessions --------------------------------------------------------------------------


def test_a_new_client_gets_in_past_the_session_cap(index: Index) -> None:
    """Opening sessions until the cap (and past it) evicts the longest idle: a legitimate
    client still gets a session and its answer (before: 503 for up to 30 minutes)."""
    server = start_http(index, env={"KB_SERVE_MAX_SESSIONS": "8"})
    try:
        with httpx2.Client(timeout=10) as client:
            first = open_session(client, server.url)
            for _ in range(40):
                response = client.post(
                    server.url, json=initialize_message(), headers={"accept": ACCEPT}
                )
                assert response.status_code == 200, response.text
            session = open_session(client, server.url)
            reply = call_tool(client, server.url, session, "search", query="roll back")
            assert "deploy.md" in reply["result"]["content"][0]["text"]
            gone = client.post(
                server.url,
                json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
                headers={"accept": ACCEPT, "mcp-session-id": first},
            )
            assert gone.status_code == 404  # the oldest idle session made room
    finally:
        assert "Traceback" not in server.stop()


# ---- break 14: stdio lines ----------------------------------------------------------------------


def test_stdio_drops_an_overlong_line_in_bounded_memory(index: Index) -> None:
    """64 MB without a newline (466 MB grew to 2.57 GB before): the line is dropped, memory
    stays bounded, and the next message is answered."""
    process = subprocess.Popen(
        [*KB, "serve"],
        env=index.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        def send() -> None:  # on a thread: a server that stops reading must not hang the test
            piece = b"x" * (1 << 20)
            for _ in range(64):
                process.stdin.write(piece)
            process.stdin.write(b"\n")
            process.stdin.write(json.dumps(initialize_message()).encode() + b"\n")
            process.stdin.flush()

        threading.Thread(target=send, daemon=True).start()
        reply = _read_line(process, timeout=20)
        assert json.loads(reply)["id"] == 1
        rss_kb = _peak_rss_kb(process.pid)
        assert rss_kb < 150_000, f"peak RSS {rss_kb} kB"  # 93 MB here; 220 MB before
    finally:
        process.kill()
        _, err = process.communicate(timeout=10)
    err_text = err.decode(errors="replace")
    assert "dropped a message of 67,108,865 bytes" in err_text
    assert "Traceback" not in err_text


def _read_line(process: subprocess.Popen, timeout: float) -> bytes:
    box: list[bytes] = []
    reader = threading.Thread(target=lambda: box.append(process.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    assert box and box[0], "no reply on stdout"
    return box[0]


def _peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_a_cancelled_tool_call_tells_its_search_to_stop() -> None:
    """The library waits for a tool's worker thread even when the request is cancelled: the
    server's wrapper sets the search's SEARCH_CANCELLED event so that the work ends too."""
    import anyio
    import anyio.to_thread

    from kb_search.mcp.server import cancellable_call
    from kb_search.search.budget import SEARCH_CANCELLED

    seen: list[str] = []

    def search_like() -> str:
        event = SEARCH_CANCELLED.get()
        assert event is not None
        if event.wait(timeout=10):
            seen.append("stopped")
        return "done"

    async def main() -> None:
        with anyio.move_on_after(0.3):
            await cancellable_call(anyio.to_thread.run_sync(search_like))

    started = time.monotonic()
    anyio.run(main)
    assert seen == ["stopped"]
    assert time.monotonic() - started < 5
