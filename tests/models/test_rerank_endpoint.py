"""Rerank servers as the rerank stage, against a real HTTP server on loopback running kb's own
cross-encoder code (tests/model_server.py: a tiny BERT cross-encoder behind TEI's /rerank and
the /v1/rerank shape): the scores are the model's, the stage reorders the fused head, and a
server that fails or is late leaves the fused order with a note."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "embedding"))

from tiny_bert import write_cross_encoder  # noqa: E402

from kb_search.config import load_config  # noqa: E402
from kb_search.embedding.cross_encoder import load_cross_encoder  # noqa: E402
from kb_search.errors import ConfigError, EndpointError  # noqa: E402
from kb_search.knowledge_base import KnowledgeBase  # noqa: E402
from kb_search.models.rerank_endpoint import RerankEndpoint, RerankSettings  # noqa: E402
from kb_search.models.rerankers import EndpointReranker, reranker_named  # noqa: E402
from kb_testing import HashEmbedder  # noqa: E402
from model_server import Running  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample"
PASSAGES = ["beta gamma index", "vector", "alpha search model note delta", "", "alpha"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    started = Running({}, tmp_path_factory.mktemp("rerank-server"))
    yield started
    started.stop()


@pytest.fixture(autouse=True)
def healthy(server: Running) -> None:
    server.fault("ok")


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory):
    """The same tiny cross-encoder the server runs (same seed), loaded here."""
    work = tmp_path_factory.mktemp("reference")
    return load_cross_encoder("local/ce", work / "cache", write_cross_encoder(work / "ce"))


@pytest.mark.parametrize(("name", "base"), [("tei:ce", ""), ("jina:ce", "/v1"),
                                            ("openai:ce", "/v1"), ("cohere:", "/v1")])  # fmt: skip
def test_each_api_shape_returns_the_cross_encoders_scores_in_passage_order(
    server, reference, name, base
) -> None:
    endpoint = RerankEndpoint(name, RerankSettings(server.url + base, api_key="sk-rr-secret1"))
    scores = endpoint.scores("alpha search", PASSAGES)
    want = reference.score("alpha search", PASSAGES).tolist()
    assert scores == pytest.approx(want, abs=1e-6)
    request = server.stats()["requests"][-1]
    assert request["path"] == ("/rerank" if name.startswith("tei") else "/v1/rerank")
    if not name.startswith("tei"):
        assert request["body"]["documents"] == PASSAGES
        assert ("model" in request["body"]) == bool(name.partition(":")[2])
    assert server.stats()["auth"] == ["Bearer sk-rr-secret1"]


@pytest.mark.parametrize("mode", ["500", "drop", "malformed"])
def test_a_failing_server_is_an_endpoint_error_in_one_line(server, mode) -> None:
    endpoint = RerankEndpoint("tei:ce", RerankSettings(server.url), sleep=lambda s: None)
    server.fault(mode, count=-1)
    with pytest.raises(EndpointError) as caught:
        endpoint.scores("alpha", PASSAGES)
    assert "\n" not in str(caught.value)


def test_a_late_server_is_cut_at_rerank_timeout(server) -> None:
    endpoint = RerankEndpoint("tei:ce", RerankSettings(server.url, timeout_s=0.5))
    server.fault("stall", delay=3)
    started = time.monotonic()
    with pytest.raises(EndpointError, match="0.5 s"):
        endpoint.scores("alpha", PASSAGES)
    assert time.monotonic() - started < 1.2


def test_raw_logits_read_as_probabilities() -> None:
    endpoint = RerankEndpoint("openai:x", RerankSettings("http://127.0.0.1:9"))
    payload = {
        "results": [{"index": 1, "relevance_score": -2.0}, {"index": 0, "relevance_score": 3.0}]
    }
    scores = endpoint._scores(payload, 2)
    assert scores[0] > 0.95 and scores[1] < 0.15
    with pytest.raises(EndpointError, match="scored 1 of 2"):
        endpoint._scores({"results": [{"index": 0, "relevance_score": 0.5}]}, 2)


def _kb(tmp_path: Path, server: Running, reranker: str, **env: str) -> KnowledgeBase:
    values = {
        "KB_DATA_DIR": str(tmp_path / "data"),
        "KB_WORKERS": "0",
        "KB_MODEL_CACHE": str(tmp_path / "models"),
        "KB_RERANKER": reranker,
        "KB_RERANK_ENDPOINT": server.url,
        "KB_RERANK_DEPTH": "6",
        "HOME": str(tmp_path),
        **env,
    }
    return KnowledgeBase(load_config(env=values), embedder=HashEmbedder(), cwd=tmp_path)


def test_search_reranks_its_head_by_the_server_and_falls_back_when_it_fails(
    tmp_path, server, reference
) -> None:
    shutil.copytree(SAMPLE, tmp_path / "notes")
    with _kb(tmp_path, server, "tei:ce") as kb:
        kb.add([tmp_path / "notes"])
        options = kb.search_options(top=10, per_file=0)
        assert isinstance(options.reranker, EndpointReranker)
        fused = kb.search("install git", kb.search_options(top=10, per_file=0, reranker=None))
        response = kb.search("install git", options)
        head = response.results[:6]
        assert {r.chunk_id for r in head} == {r.chunk_id for r in fused.results[:6]}
        scores = [r.score_breakdown["rerank"] for r in head]
        assert scores == sorted(scores, reverse=True) and "rerank" in response.timings_ms
        # reranked: no fallback note (coverage may differ: it grades the new first result)
        assert not any(n.startswith("not reranked") for n in response.notes)
        server.fault("500", count=-1)
        broken = kb.search("install git", options)
        assert [r.chunk_id for r in broken.results] == [r.chunk_id for r in fused.results]
        assert any(n.startswith("not reranked, results in fused order: reranker tei:ce")
                   for n in broken.notes)  # fmt: skip


def test_an_endpoint_reranker_needs_its_endpoint(tmp_path) -> None:
    config = load_config(env={"KB_DATA_DIR": str(tmp_path), "HOME": str(tmp_path),
                              "KB_RERANKER": "tei:x"})  # fmt: skip
    with pytest.raises(ConfigError, match="rerank.endpoint"):
        reranker_named("tei:x", tmp_path, config.values)


def test_a_project_file_names_no_rerank_server_until_trusted(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / ".kb.yaml").write_text(
        "search:\n  reranker: tei:x\nrerank:\n  endpoint: http://evil.example\n"
    )
    env = {"KB_DATA_DIR": str(tmp_path / "d"), "HOME": str(tmp_path)}
    config = load_config(env=env, cwd=tmp_path / "repo")
    assert config["search.reranker"] == "none" and config["rerank.endpoint"] is None


def test_doctor_names_the_rerank_server(kb, sample, environment, server) -> None:
    kb("add", str(sample))
    environment.env.update(KB_RERANKER="tei:ce", KB_RERANK_ENDPOINT=server.url)
    checks = {c["name"]: c for c in kb.json("doctor")["checks"]}
    assert checks["reranker"]["ok"]
    assert checks["reranker"]["detail"].startswith(f"tei:ce (endpoint {server.url}/rerank;")
