import json
from importlib import resources

import jsonschema
import pytest

pytestmark = pytest.mark.model


@pytest.fixture
def indexed(kb, sample):
    kb("add", str(sample))
    return kb


def schema():
    text = resources.files("kb_search").joinpath("schemas/search_response.schema.json").read_text()
    return json.loads(text)


def test_vector_mode_finds_meaning_without_shared_words(indexed):
    res = indexed.json(
        "search", "letting bread rise before baking", "--mode", "vector", "--top", "3"
    )
    jsonschema.validate(res, schema())
    assert res["legs"] == {"vector": "ok"}
    assert res["results"][0]["source"]["title"] == "Kitchen notes"
    assert all(r["score_breakdown"]["vector"] == r["score"] for r in res["results"])


def test_hybrid_fuses_both_legs(indexed):
    res = indexed.json("search", "retry transient HTTP errors with backoff")
    jsonschema.validate(res, schema())
    assert res["mode"] == "hybrid" and res["legs"] == {"lexical": "ok", "vector": "ok"}
    top = res["results"][0]
    assert top["score_breakdown"]["fts_rank"] is not None
    assert top["score_breakdown"]["vector_rank"] is not None
    assert 0 < top["score"] <= 1
    assert set(res["timings_ms"]) >= {"lexical", "embed", "vector", "total"}
    again = indexed.json("search", "retry transient HTTP errors with backoff")
    assert [r["chunk_id"] for r in again["results"]] == [r["chunk_id"] for r in res["results"]]


def test_filters_apply_to_the_vector_leg(indexed):
    res = indexed.json(
        "search", "how do I back up repositories", "--mode", "vector", "--type", "code"
    )
    assert res["results"] and {r["source"]["type"] for r in res["results"]} == {"code"}
    res = indexed.json(
        "search", "how do I back up repositories", "--mode", "vector", "--tag", "git"
    )
    assert {r["source"]["title"] for r in res["results"]} == {"Git Admin Guide"}


def test_model_recorded_and_mismatch_is_a_hard_error(indexed, environment):
    stats = indexed.json("stats")
    assert stats["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert stats["embedding_dim"] == 384
    environment.env["KB_MODEL"] = "intfloat/e5-small-v2"
    result = indexed("search", "backup", ok=False)
    assert result.exit_code == 1
    assert "kb reindex --model intfloat/e5-small-v2" in result.stderr


def test_reindex_full_and_missing_only(indexed):
    first = indexed.json("reindex")
    assert first["embedded"] == 0 and first["already_present"] == first["total_chunks"]
    full = indexed.json("reindex", "--full")
    assert full["embedded"] == full["total_chunks"] > 0
    assert indexed.json("doctor")["ok"]


def test_unchanged_chunks_are_not_re_embedded(indexed, sample, monkeypatch):
    from kb_search.vectors import writer as vectors

    calls = []
    original = vectors._embedded  # every embedder's texts pass here (batched or at once)

    def spy(embedder, texts, counted):
        calls.append(len(texts))
        return original(embedder, texts, counted)

    monkeypatch.setattr(vectors, "_embedded", spy)
    doc = sample / "docs" / "git-admin.md"
    doc.write_text(
        doc.read_text() + "\n## Mirrors\n\nMirror repositories with `git clone --mirror`.\n"
    )
    indexed("add", str(sample))
    assert sum(calls) == 1  # only the new/changed chunk


def test_similar(indexed):
    doc = indexed.json("list", "--tag", "git")["documents"][0]
    res = indexed.json("similar", str(doc["document_id"]), "--top", "3")
    assert res["results"] and doc["document_id"] not in [
        r["source"]["document_id"] for r in res["results"]
    ]
    chunk_id = indexed.json("show", str(doc["document_id"]))["chunks"][0]["chunk_id"]
    near = indexed.json("similar", str(chunk_id), "--chunk", "--top", "2")
    assert chunk_id not in [r["chunk_id"] for r in near["results"]]
