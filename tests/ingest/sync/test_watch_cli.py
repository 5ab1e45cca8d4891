"""`kb watch` and `kb serve --watch` as processes: JSON lines, Ctrl-C (exit 130, the batch in
progress written whole, `kb doctor` ok), searches answered while the watcher writes."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kb_testing import HashEmbedder, document_count

TESTS = Path(__file__).resolve().parents[2]
WRAPPER = f"""\
import sys
sys.path.insert(0, {str(TESTS)!r})
from kb_testing import register_test_embedder
register_test_embedder()
from kb_search.cli import main

if __name__ == "__main__":
    main()
"""


@pytest.fixture(scope="module")
def kb_test_script(tmp_path_factory) -> Path:
    """`kb` with the test embedder registered (guarded: parser workers re-import it)."""
    script = tmp_path_factory.mktemp("bin") / "kb_with_test_model.py"
    script.write_text(WRAPPER)
    return script


class Lines:
    """A pipe read on a thread, so a test can wait for a line with a deadline."""

    def __init__(self, stream):
        self.seen: list[str] = []
        self._queue: queue.Queue[str] = queue.Queue()
        self._pump_thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._pump_thread.start()

    def _pump(self, stream) -> None:
        for line in stream:
            self._queue.put(line)

    def wait_for(self, text: str, seconds: float = 30) -> str:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                line = self._queue.get(timeout=0.05)
            except queue.Empty:
                continue
            self.seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"no line with {text!r} in {seconds} s: {self.seen}")

    def rest(self, seconds: float = 30) -> list[str]:
        """Every line, once the process has ended and its pipe is read to the end."""
        self._pump_thread.join(seconds)
        assert not self._pump_thread.is_alive(), f"the pipe did not close in {seconds} s"
        while not self._queue.empty():
            self.seen.append(self._queue.get())
        return self.seen


@pytest.fixture
def setup(tmp_path: Path, kb_test_script: Path, model_cache: Path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "alpha.md").write_text("# Alpha\n\nThe first note.\n")
    env = dict(
        os.environ,
        HOME=str(tmp_path),
        KB_DATA_DIR=str(tmp_path / "data"),
        KB_MODEL=HashEmbedder.name,
        KB_MODEL_CACHE=str(model_cache),
        HF_HUB_OFFLINE="1",
    )
    command = [sys.executable, str(kb_test_script)]
    done = subprocess.run([*command, "add", str(notes)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return notes, env, command, tmp_path / "data" / "kb.db"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(
    command: list[str], env: dict, *args: str, cwd: Path | None = None
) -> tuple[subprocess.Popen, Lines, Lines]:
    process = subprocess.Popen(
        [*command, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
    )
    return process, Lines(process.stdout), Lines(process.stderr)


def test_ctrl_c_finishes_the_batch_then_exits_130_with_a_consistent_db(setup):
    notes, env, command, db_path = setup
    process, out, err = start(command, env, "watch", "--format", "json")
    try:
        err.wait_for("Watching")
        initial = json.loads(out.wait_for('"initial_sync"'))
        assert initial["added"] == 0 and initial["unchanged"] == 1
        for i in range(40):
            (notes / f"n{i:02}.md").write_text(f"# Note {i}\n\nword{i} in a burst\n")
        deadline = time.monotonic() + 20
        while document_count(db_path) < 2 and time.monotonic() < deadline:
            time.sleep(0.005)
        process.send_signal(signal.SIGINT)  # most likely while the batch is being written
        assert process.wait(timeout=30) == 130
    finally:
        process.kill()
    stderr = "".join(err.rest())
    assert "Traceback" not in stderr
    assert "Stopped watching" in stderr
    batches = [json.loads(line) for line in out.rest() if line.strip()]
    assert all(b["event"] in ("initial_sync", "sync") for b in batches)
    # every batch the watcher started was written whole and reported
    written = sum(b["added"] for b in batches)
    assert written >= 1
    assert document_count(db_path) == 1 + written
    doctor = subprocess.run([*command, "doctor", "--format", "json"], env=env,
                            capture_output=True, text=True)  # fmt: skip
    assert json.loads(doctor.stdout)["ok"], doctor.stdout
    # what the interrupted watcher did not get to, the next sync picks up
    sync = subprocess.run([*command, "sync", "--format", "json"], env=env,
                          capture_output=True, text=True)  # fmt: skip
    assert json.loads(sync.stdout)["added"] == 40 - written
    assert document_count(db_path) == 41


def test_idle_ctrl_c_stops_at_once_and_human_lines_say_what_changed(setup):
    notes, env, command, db_path = setup
    process, out, err = start(command, env, "watch", "--format", "human", cwd=notes.parent)
    try:
        err.wait_for("Watching 1 folder")
        (notes / "alpha.md").rename(notes / "beta.md")
        line = out.wait_for("renamed", seconds=10)
        assert "1 renamed: notes/alpha.md -> notes/beta.md" in line
        (notes / "beta.md").unlink()
        assert "1 deleted: notes/beta.md" in out.wait_for("deleted", seconds=10)
        started = time.monotonic()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 130
        assert time.monotonic() - started < 3
    finally:
        process.kill()
    assert "Traceback" not in "".join(err.rest())


# Files written at once while searches run: enough that indexing them outlasts a few searches
# even when the machine is loaded (with 60, a loaded run once indexed them all between two).
BATCH = 150


def test_serve_watch_keeps_answering_searches_while_it_indexes(setup):
    import anyio
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    notes, env, command, db_path = setup
    port = free_port()
    process, _, err = start(command, env, "serve", "--transport", "http", "--port", str(port),
                            "--watch")  # fmt: skip
    answered: list[int] = []
    during: list[int] = []  # documents in the DB at each search made while the batch is written

    async def search(client: Client, word: str) -> int:
        """A hybrid search: the vector leg follows the table while the watcher writes."""
        result = await client.call_tool("search", {"query": word, "compact": True})
        assert not result.is_error, result.content
        answer = json.loads(result.content[0].text)
        assert "legs" not in answer, answer  # compact answers name legs only when one failed
        answered.append(1)
        return sum(word in hit["text"] for hit in answer["results"])

    async def check() -> None:
        async with Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp")) as client:
            assert await search(client, "first") == 1
            # a batch that takes a while to write: searches are answered meanwhile
            for j in range(BATCH):
                (notes / f"b{j:02}.md").write_text(f"# B {j}\n\nfiller{j} text\n")
            deadline = time.monotonic() + 30
            while document_count(db_path) < BATCH + 1:
                assert time.monotonic() < deadline, "the batch was not indexed"
                assert await search(client, "first") == 1
                during.append(document_count(db_path))
            # one edit: searchable within 2 s
            for i in range(3):
                (notes / "alpha.md").write_text(f"# Alpha\n\nThe first note, edit{i}.\n")
                written = time.monotonic()
                while await search(client, f"edit{i}") == 0:
                    assert time.monotonic() - written < 2.0, "not searchable within 2 s"
                    await anyio.sleep(0.01)

    try:
        err.wait_for("Watching 1 folder")  # after "listening on": the port is open
        anyio.run(check)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        finally:
            process.kill()
    assert any(1 < n < BATCH + 1 for n in during), during  # answered while the batch was written
    assert document_count(db_path) == BATCH + 1
    assert "Traceback" not in "".join(err.rest())
