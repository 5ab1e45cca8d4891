"""kb_search.net: one redaction for secrets, a total deadline per request (issue 33, breaks 4
and 7). The deadline is tested against real servers on loopback that drip their answer a byte at
a time, well inside any per-read timeout."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import httpx2 as httpx
import pytest

from kb_search.net import (
    Deadline,
    DeadlineExceeded,
    deadline_client,
    redact,
    redact_url,
    send_with_deadline,
    stream_lines,
)

KEY = "sk-live-4f9a8b7c6d5e4f3a2b1c"


def test_redact_hides_every_kind_of_secret():
    text = (
        f"401: invalid Authorization header 'Bearer {KEY}' for http://alice:pa55word@h:1/v1,"
        f' {{"api_key": "abc123xyz", "token":"t0k3n"}} x-api-key: k9k9k9 ?key=AIzaSyZZ'
    )
    out = redact(text)
    for secret in (KEY, "pa55word", "alice", "abc123xyz", "t0k3n", "k9k9k9", "AIzaSyZZ"):
        assert secret not in out, (secret, out)
    assert "Bearer ***" in out and "http://***@h:1/v1" in out
    # a key the caller names is hidden wherever it appears, even bare
    assert redact(f"you sent {KEY[3:]} which is wrong", [KEY[3:]]) == "you sent *** which is wrong"
    # ordinary text is left alone
    plain = "the model 'minilm' has max_tokens=256 and 384 dims; see https://example.org/a?b=c"
    assert redact(plain) == plain


def test_redact_url():
    assert redact_url("http://user:secret@127.0.0.1:8000/v1") == "http://***@127.0.0.1:8000/v1"
    assert redact_url("https://h/v1?api_key=abc&x=1") == "https://h/v1?api_key=***&x=1"
    assert redact_url("http://[::1]:9/v1") == "http://[::1]:9/v1"
    assert "secret" not in redact_url("not a url user:secret@x token=secret")


def test_redaction_is_linear_on_hostile_bodies():
    worst = [
        "://" + "a" * 100_000,
        "api_key" + " " * 100_000,
        "Bearer " * 15_000,
        "x://a" * 20_000,
        "key=" * 25_000,
    ]
    for text in worst:
        started = time.perf_counter()
        redact(text, ["nomatch-secret"])
        assert time.perf_counter() - started < 0.5, text[:20]


@pytest.fixture
def drip_server() -> Iterator[tuple[int, dict]]:
    """A loopback HTTP server that answers `mode` ('headers', 'body', 'lines') one byte every
    `every` seconds for ever (till the client goes); 'ok' answers at once."""
    settings = {"mode": "ok", "every": 0.2}
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def drip(conn: socket.socket, data: bytes) -> None:
        for byte in data:
            if stop.is_set():
                return
            conn.sendall(bytes([byte]))
            time.sleep(settings["every"])

    def handle(conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            body = b'{"ok": true}'
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            try:
                if settings["mode"] == "ok":
                    conn.sendall(head + b"Content-Length: 12\r\n\r\n" + body)
                elif settings["mode"] == "headers":
                    drip(conn, head + b"X-Padding: " + b"p" * 10_000)
                elif settings["mode"] == "body":
                    conn.sendall(head + b"Content-Length: 100000\r\n\r\n")
                    drip(conn, b" " * 100_000)
                else:  # lines
                    conn.sendall(head.replace(b"json", b"x-ndjson") + b"\r\n")
                    conn.sendall(b'{"n": 1}\n')
                    drip(conn, b'{"n": 2}\n' * 1000)
            except OSError:
                return

    def serve() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], settings
    stop.set()
    thread.join()
    server.close()


@pytest.mark.parametrize("mode", ["headers", "body"])
def test_a_dripping_server_is_cut_at_the_total_deadline(drip_server, mode):
    port, settings = drip_server
    settings["mode"] = mode
    with deadline_client(timeout=5.0) as client:  # each read is well inside 5 s
        request = client.build_request("GET", f"http://127.0.0.1:{port}/")
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded, match="within 1.5 s"):
            send_with_deadline(client, request, Deadline(1.5))
        assert 1.4 < time.monotonic() - started < 2.0


def test_streamed_lines_share_the_deadline(drip_server):
    port, settings = drip_server
    settings["mode"] = "lines"
    lines: list[str] = []
    with deadline_client(timeout=5.0) as client:
        request = client.build_request("GET", f"http://127.0.0.1:{port}/")
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded):
            for line in stream_lines(client, request, Deadline(1.2)):
                lines.append(line)
        assert 1.1 < time.monotonic() - started < 1.7
    assert lines[0] == '{"n": 1}' and 1 <= len(lines) < 4


def test_a_prompt_answer_passes_and_the_deadline_does_not_leak(drip_server):
    port, _ = drip_server
    with deadline_client(timeout=5.0) as client:
        request = client.build_request("GET", f"http://127.0.0.1:{port}/")
        response = send_with_deadline(client, request, Deadline(2.0))
        assert response.status_code == 200 and response.json() == {"ok": True}
        # a later request on the same client without a deadline is not cut by the old one
        time.sleep(0.1)
        assert client.get(f"http://127.0.0.1:{port}/").json() == {"ok": True}
    with deadline_client() as client:
        request = client.build_request("GET", f"http://127.0.0.1:{port}/")
        with pytest.raises(httpx.DecodingError, match="longer than 4 bytes"):
            send_with_deadline(client, request, Deadline(2.0), max_bytes=4)


def test_deadline_basics():
    with pytest.raises(ValueError):
        Deadline(float("nan"))
    with pytest.raises(ValueError):
        Deadline(0)
    spent = Deadline(5, not_after=time.monotonic() - 1)
    assert spent.expired
    with pytest.raises(DeadlineExceeded, match="within 5 s"):
        spent.remaining()
    assert 0 < Deadline(5).cap(1.0) <= 1.0 and 4 < Deadline(5).cap(None) <= 5
