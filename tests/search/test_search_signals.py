"""Stable ranking (a top N is the prefix of every larger top M) and honest signals."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kb_search.config import load_config
from kb_search.knowledge_base import KnowledgeBase
from kb_testing import HashEmbedder

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample"
QUERIES = [
    "how do I roll back",
    "install git from source",
    "retry with exponential backoff",
    "backup window database",
    "timeouts",
    "夜景",
    "meeting notes decisions",
]


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    root = tmp_path_factory.mktemp("signals")
    shutil.copytree(SAMPLE, root / "notes")
    config = load_config(env={"KB_DATA_DIR": str(root / "data"), "KB_WORKERS": "0"})
    with KnowledgeBase(config, embedder=HashEmbedder(), cwd=root) as knowledge_base:
        knowledge_base.add([root / "notes"])
        yield knowledge_base


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "vector"])
@pytest.mark.parametrize("query", QUERIES)
def test_a_smaller_top_is_a_prefix_of_a_larger_one(kb, query, mode):
    ranked = {
        top: [r.chunk_id for r in kb.search(query, kb.search_options(mode=mode, top=top)).results]
        for top in (1, 3, 10, 50)
    }
    for small, large in ((1, 3), (3, 10), (10, 50)):
        assert ranked[small] == ranked[large][:small], (small, large)


@pytest.mark.parametrize("query", QUERIES[:4])
def test_the_prefix_holds_with_rrf_fusion_too(kb, query):
    def ranked(top: int) -> list[int]:
        options = kb.search_options(top=top, fusion="rrf")
        return [r.chunk_id for r in kb.search(query, options).results]

    assert ranked(3) == ranked(10)[:3]


def test_a_query_no_chunk_contains_says_so(kb):
    response = kb.search("zzqx wordz", kb.search_options())
    assert response.total_matches == 0
    assert response.legs["lexical"] == "empty" and response.results
    assert any("ranked by meaning alone" in note for note in response.notes)


def test_a_query_of_common_words_only_says_so(kb):
    response = kb.search("how do I", kb.search_options(mode="lexical"))
    assert any("all common ones" in note for note in response.notes)
    assert not kb.search("install git", kb.search_options()).notes


def test_min_score_says_what_it_removed_and_keeps_the_match_count(kb):
    plain = kb.search("retry", kb.search_options(top=5))
    strict = kb.search("retry", kb.search_options(top=5, min_score=0.99))
    assert strict.total_matches == plain.total_matches > 0
    assert len(strict.results) < 5
    assert any("under --min-score 0.99" in note for note in strict.notes)
