"""The KnowledgeBase service and the search stages, with the deterministic test embedder:
fast, and no model files needed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kb_search.config import load_config
from kb_search.errors import ModelMismatch, NotFound, UserInputError
from kb_search.knowledge_base import KnowledgeBase
from kb_search.profile import Profile
from kb_search.search.fusion import fuse
from kb_search.search.legs import LegResult
from kb_search.search.pipeline import SearchOptions, above_min_score, prepare, retrieve, with_text
from kb_search.search.rerank import apply_reranker
from kb_search.search.results import Candidate, hydrate
from kb_search.search.shaping import diversify, promote_definitions
from kb_testing import HashEmbedder

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample"


def make_kb(tmp_path: Path, **kwargs) -> KnowledgeBase:
    config = load_config(env={"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"})
    return KnowledgeBase(config, embedder=HashEmbedder(), cwd=tmp_path, **kwargs)


@pytest.fixture
def kb(tmp_path: Path):
    shutil.copytree(SAMPLE, tmp_path / "notes")
    with make_kb(tmp_path) as knowledge_base:
        summary = knowledge_base.add([tmp_path / "notes"])
        assert summary.added == 9 and not summary.failed
        yield knowledge_base


def test_add_binds_the_db_to_the_model_and_search_uses_both_legs(kb):
    assert kb.reads.stats()["model"] == HashEmbedder.name
    response = kb.search("install git from source", kb.search_options())
    assert response.legs == {"lexical": "ok", "vector": "ok"}
    assert response.results[0].source.title == "Git Admin Guide"
    assert response.results[0].score == pytest.approx(1.0)
    vector_only = kb.search("git source", kb.search_options(mode="vector", top=3))
    assert [r.score_breakdown["vector_rank"] for r in vector_only.results] == [1, 2, 3]


def test_doctor_checks_pass_on_a_fresh_index(kb):
    checks = {c.name: c for c in kb.doctor()}
    failed = [c for c in checks.values() if not c.ok]
    assert not failed, failed
    assert checks["vectors_in_sync"].detail == "every chunk has one vector"
    assert checks["model"].detail.startswith(HashEmbedder.name)


def test_doctor_passes_on_a_database_no_add_has_bound_yet(tmp_path):
    """A first `kb add` killed before it embedded leaves a DB with no model recorded: healthy,
    and doctor names the model the next add will bind."""
    with make_kb(tmp_path) as fresh:
        fresh.writer(create=True)  # what `kb add` does before it reads a file
        checks = {c.name: c for c in fresh.doctor()}
        assert all(c.ok for c in checks.values()), [c for c in checks.values() if not c.ok]
        assert checks["model"].detail.startswith(f"{HashEmbedder.name} (not bound yet")


def test_doctor_says_chunks_await_embedding_and_fails_on_orphan_vectors(kb):
    """A DB mid-embedding (text written first, vectors after) is not broken: a warning that
    says how many chunks await embedding. A vector without a chunk is a fault."""
    conn = kb.writer()
    table = conn.execute("SELECT table_name FROM vector_tables").fetchone()[0]
    conn.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT min(id) FROM chunks)")
    check = {c.name: c for c in kb.doctor()}["vectors_in_sync"]
    assert check.ok and check.warning
    assert check.detail.startswith("1 chunks await embedding")
    blob = conn.execute(f"SELECT embedding FROM {table} LIMIT 1").fetchone()[0]
    conn.execute(f"INSERT INTO {table}(rowid, embedding) VALUES (999999, ?)", (blob,))
    check = {c.name: c for c in kb.doctor()}["vectors_in_sync"]
    assert not check.ok
    assert "1 chunks without vectors" in check.detail and "1 orphan vectors" in check.detail


def test_reindex_recreates_a_dropped_vector_table(kb):
    conn = kb.writer()
    table = conn.execute("SELECT table_name FROM vector_tables").fetchone()[0]
    conn.execute(f"DROP TABLE {table}")
    kb.close()
    summary = kb.reindex()
    assert summary.embedded == summary.total_chunks > 0
    assert all(c.ok for c in kb.doctor())


def test_similar_remove_tag_document_chunk(kb, tmp_path):
    doc = kb.reads.document("notes/docs/git-admin.md")
    assert doc.title == "Git Admin Guide" and doc.chunks
    similar = kb.similar(str(doc.document_id), top=3)
    assert similar.results and all(r.source.document_id != doc.document_id for r in similar.results)
    chunk = doc.chunks[0]
    around = kb.reads.chunk(chunk.chunk_id, context=1)
    assert [c.chunk_index for c in around] == [0, 1]
    doc_id, tags = kb.tag(str(doc.document_id), ["zz"])
    assert doc_id == doc.document_id and "zz" in tags
    assert kb.remove([str(doc.document_id)]).removed == [doc.document_id]
    with pytest.raises(NotFound):
        kb.reads.document(str(doc.document_id))
    with pytest.raises(UserInputError, match="chunk id must be a number like 42"):
        kb.reads.chunk("٣")
    with pytest.raises(UserInputError, match="no chunk id '99999999999999999999'"):
        kb.reads.chunk("99999999999999999999")


def test_an_explicit_other_model_is_a_model_error_not_a_db_error(kb, tmp_path):
    kb.close()
    config = load_config(env={"KB_DATA_DIR": str(tmp_path / "data"), "KB_MODEL": "other/model"})
    other = KnowledgeBase(config, cwd=tmp_path)
    with pytest.raises(ModelMismatch, match="kb reindex --model other/model"):
        other.add([tmp_path / "notes"])
    with pytest.raises(ModelMismatch):
        other.search("git", other.search_options())
    other.close()


def test_stages_compose_to_search(kb):
    conn = kb.reader()
    options = kb.search_options(top=3)
    query = prepare(conn, "retry backoff", options)
    leg = kb.vector_leg()
    timings: dict[str, float] = {}
    legs = retrieve(conn, query, options, leg.search, leg.unavailable, timings)
    assert set(legs) == {"lexical", "vector"} and {"lexical", "embed", "vector"} <= set(timings)
    assert all(len(result.hits) <= options.depth() for result in legs.values())
    fused = fuse(legs, options.rrf_k, options.fusion)
    shaped = diversify(conn, promote_definitions(conn, fused, []), options.per_file, False)
    top = above_min_score(shaped, options)[: options.top]
    results = hydrate(conn, top, {})
    whole = kb.search("retry backoff", options)
    assert [r.chunk_id for r in results] == [r.chunk_id for r in whole.results]


class ReverseReranker:
    name = "reverse"

    def rerank(self, query: str, candidates: list[Candidate], deadline=None) -> list[Candidate]:
        assert all(c.text for c in candidates)  # the stage before loaded the text
        out = list(reversed(candidates))
        for rank, candidate in enumerate(out):
            candidate.score = 1.0 - rank / 100
        return out


def test_a_rerank_stage_reorders_the_head_and_sees_chunk_text(kb):
    # per_file=0: no diversity stage after the rerank, to see its order as it is
    plain = kb.search("git", kb.search_options(mode="lexical", top=4, per_file=0))
    options = kb.search_options(
        mode="lexical", top=4, reranker=ReverseReranker(), rerank_depth=4, per_file=0
    )
    reranked = kb.search("git", options)
    assert [r.chunk_id for r in reranked.results] == [r.chunk_id for r in plain.results][::-1]
    assert reranked.results[0].score_breakdown["rerank"] == 1.0
    assert "rerank" in reranked.timings_ms


def test_a_reranker_named_in_the_config_is_used(tmp_path, monkeypatch):
    from kb_search.models import rerankers as rerank

    monkeypatch.setitem(
        rerank.RERANKERS, "reverse", lambda name, cache_dir, settings: ReverseReranker()
    )
    shutil.copytree(SAMPLE, tmp_path / "notes")
    config = load_config(
        env={"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0", "KB_RERANKER": "reverse"}
    )
    with KnowledgeBase(config, embedder=HashEmbedder(), cwd=tmp_path) as knowledge_base:
        knowledge_base.add([tmp_path / "notes"])
        response = knowledge_base.search("git", knowledge_base.search_options(top=3))
        assert all("rerank" in r.score_breakdown for r in response.results)


def test_a_reranker_that_cannot_be_had_is_a_one_line_config_error(tmp_path, monkeypatch):
    from kb_search.errors import ConfigError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    env = {"KB_DATA_DIR": str(tmp_path / "data"), "KB_RERANKER": "nope/no-such-reranker"}
    config = load_config(env={**env, "KB_MODEL_CACHE": str(tmp_path / "models")})
    with pytest.raises(ConfigError) as caught:
        KnowledgeBase(config).search_options()
    message = str(caught.value)
    assert message.startswith("reranker 'nope/no-such-reranker' is not available: ")
    assert "\n" not in message and "HF_HUB_OFFLINE" in message


def test_apply_reranker_keeps_the_tail_below_the_head():
    candidates = [Candidate(i, 1.0 - i / 10, {}, text=f"t{i}") for i in range(5)]
    out = apply_reranker(ReverseReranker(), "q", candidates, depth=2)
    assert [c.chunk_id for c in out] == [1, 0, 2, 3, 4]
    scores = [c.score for c in out]
    assert scores == sorted(scores, reverse=True)


def test_with_text_loads_only_the_head(kb):
    conn = kb.reader()
    ids = [r[0] for r in conn.execute("SELECT id FROM chunks ORDER BY id LIMIT 3")]
    candidates = [Candidate(cid, 1.0, {}) for cid in ids]
    with_text(conn, candidates, 2)
    assert candidates[0].text and candidates[1].text and candidates[2].text is None


def test_fusion_with_a_failed_leg_uses_the_other():
    legs = {"lexical": LegResult("ok", [(5, 0.9)]), "vector": LegResult("error: boom")}
    assert [c.chunk_id for c in fuse(legs, 60)] == [5]


def test_one_shot_kb_uses_sqlite_vec_and_long_lived_the_live_matrix(kb, tmp_path):
    from kb_search.vectors.exact import SqliteVecIndex
    from kb_search.vectors.matrix import LiveMatrixIndex

    assert isinstance(kb.vector_leg().search.index, SqliteVecIndex)
    kb.close()
    with make_kb(tmp_path, profile=Profile.SERVE) as server_kb:
        assert isinstance(server_kb.vector_leg().search.index, LiveMatrixIndex)
        query = "install git from source"
        one_shot = kb.search(query, kb.search_options())
        served = server_kb.search(query, server_kb.search_options())
        assert [r.chunk_id for r in served.results] == [r.chunk_id for r in one_shot.results]


def test_search_options_default_from_config(tmp_path):
    with make_kb(tmp_path) as knowledge_base:
        options = knowledge_base.search_options(top=None, mode=None)
        assert (options.mode, options.top, options.rrf_k) == ("hybrid", 10, 60)
        assert options.fusion == "convex"
        assert isinstance(options, SearchOptions)
