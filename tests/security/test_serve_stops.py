"""Issue 33, break 2 (the serve part): `kb serve --transport http` stayed busy 140 s after
SIGTERM while a request ran C code that holds the GIL (the cubic heading pattern of `get`):
no Python signal handler, and no thread, can run until that code returns. A watchdog process
the kernel-level half of CPython's handler wakes (`signal.set_wakeup_fd`) now ends the server
after its grace period, whatever a request is doing."""

from __future__ import annotations

import signal
import subprocess
import threading
import time

import httpx2
import pytest
from bounds_harness import build_index, call_tool, open_session, start_http


def test_sigterm_stops_the_http_server_while_a_request_holds_the_gil(tmp_path) -> None:
    index = build_index(tmp_path)
    slow = tmp_path / "docs" / "r.md"
    # A heading line the old `get` anchor pattern backtracks on for tens of seconds.
    slow.write_text("# a" + " " * 2000 + "b\n\nsome text\n", encoding="utf-8")
    added = index.kb("add", str(slow.parent), "--format", "json")
    assert added.returncode == 0, added.stderr

    server = start_http(index)
    try:
        with httpx2.Client(timeout=120) as client:
            session = open_session(client, server.url)
            request = threading.Thread(
                target=_quietly(call_tool),
                args=(client, server.url, session, "get"),
                kwargs={"citations": ["docs/r.md#nosuch"]},
                daemon=True,
            )
            request.start()
            time.sleep(1.5)  # the request is in
            assert server.process.poll() is None
            started = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            try:
                server.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pytest.fail("kb serve still runs 30 s after SIGTERM")
            elapsed = time.monotonic() - started
        assert elapsed < 5, elapsed
    finally:
        err = server.stop()
    assert "Traceback" not in err


def test_the_watchdog_leaves_with_the_server(tmp_path) -> None:
    """A server stopped normally takes its watchdog with it: no process is left behind."""
    index = build_index(tmp_path)
    server = start_http(index)
    children = _children(server.process.pid)
    assert children, "no watchdog process"
    server.process.send_signal(signal.SIGTERM)
    server.process.wait(timeout=10)
    server.stop()
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in children)


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _quietly(function):
    def run(*args, **kwargs):
        try:
            function(*args, **kwargs)
        except Exception:  # noqa: BLE001 - the server is stopped under it
            pass

    return run
