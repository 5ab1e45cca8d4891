"""Fusion of the two legs: convex combination of min-max scores (default) and RRF."""

from __future__ import annotations

import pytest

from kb_search.errors import SearchError
from kb_search.search.fusion import LEXICAL_WEIGHT, fuse, min_max
from kb_search.search.legs import LegResult, lexical_score


@pytest.fixture(autouse=True)
def no_single_leg_floor(monkeypatch):
    """These tests check the min-max arithmetic alone; the floor a leg's top chunks keep
    (SOLO_SHARE) is tested in test_phrasing.py."""
    from kb_search.search import fusion

    monkeypatch.setattr(fusion, "SOLO_SHARE", 0.0)


def lexical(*bm25: tuple[int, float], total: int = 1000) -> LegResult:
    """A lexical leg from (chunk id, -bm25) pairs, scored as the real leg scores them; by
    default its matches go on past the candidates (total > hits)."""
    return LegResult("ok", [(cid, lexical_score(-x)) for cid, x in bm25], total=total)


def test_convex_scores_of_hand_made_legs():
    legs = {
        "lexical": lexical((1, 9.0), (2, 5.0), (3, 1.0)),
        "vector": LegResult("ok", [(4, 0.8), (1, 0.6), (2, 0.4)]),
    }
    scores = {c.chunk_id: c.score for c in fuse(legs)}
    # lexical min-max over -bm25: 1 -> 1.0, 2 -> 0.5, 3 -> 0.0; vector: 4 -> 1, 1 -> .5, 2 -> 0
    assert LEXICAL_WEIGHT == 0.5
    assert scores == pytest.approx({1: 0.75, 2: 0.25, 4: 0.5, 3: 0.0})
    assert [c.chunk_id for c in fuse(legs)] == [1, 4, 2, 3]


def test_a_lexical_leg_with_all_its_matches_keeps_credit_for_the_last():
    """Every match returned: the floor is BM25 0 (no match), not the last match."""
    legs = {
        "lexical": lexical((1, 9.0), (2, 4.5), (3, 3.0), total=3),
        "vector": LegResult("ok", [(4, 0.8), (3, 0.6), (1, 0.4)]),
    }
    scores = {c.chunk_id: c.score for c in fuse(legs)}
    assert scores == pytest.approx({1: 0.5, 2: 0.25, 3: 1 / 6 + 0.25, 4: 0.5})


def test_convex_keeps_how_far_ahead_a_leg_s_best_is():
    """RRF sees ranks only; convex sees that lexical's first is far ahead of its second."""
    legs = {
        "lexical": lexical((1, 20.0), (2, 2.0), (3, 1.9), (4, 1.8)),
        "vector": LegResult("ok", [(2, 0.70), (3, 0.69), (1, 0.40), (4, 0.39)]),
    }
    assert fuse(legs, method="convex")[0].chunk_id == 1
    assert fuse(legs, method="rrf")[0].chunk_id == 2


def test_first_in_both_legs_scores_one_and_scores_stay_in_range():
    legs = {
        "lexical": lexical((7, 3.0), (8, 2.0), (9, 1.0)),
        "vector": LegResult("ok", [(7, 0.9), (9, 0.5), (10, 0.1)]),
    }
    fused = fuse(legs)
    assert fused[0].chunk_id == 7 and fused[0].score == pytest.approx(1.0)
    assert all(0.0 <= c.score <= 1.0 for c in fused)
    assert [c.score for c in fused] == sorted((c.score for c in fused), reverse=True)
    assert fused[0].breakdown == {"fts": pytest.approx(0.75), "fts_rank": 1,
                                  "vector": 0.9, "vector_rank": 1}  # fmt: skip


def test_a_leg_that_matched_nothing_halves_the_best_score():
    legs = {"lexical": LegResult("empty"), "vector": LegResult("ok", [(3, 0.9), (1, 0.5)])}
    fused = fuse(legs)
    assert [c.chunk_id for c in fused] == [3, 1]
    assert [c.score for c in fused] == pytest.approx([0.5, 0.0])


def test_one_leg_only_passes_its_ranking_through():
    legs = {"lexical": lexical((5, 4.0), (6, 2.0)), "vector": LegResult("error: no model")}
    fused = fuse(legs)
    assert [(c.chunk_id, c.score) for c in fused] == [(5, pytest.approx(1.0)), (6, 0.0)]
    assert fuse({"lexical": LegResult("error: x"), "vector": LegResult("error: y")}) == []


def test_ties_are_broken_by_chunk_id():
    legs = {
        "lexical": lexical((2, 5.0), (1, 1.0)),
        "vector": LegResult("ok", [(1, 0.9), (2, 0.1)]),
    }
    assert [c.chunk_id for c in fuse(legs)] == [1, 2]


def test_min_max_edges():
    assert min_max([]) == {}
    assert min_max([(1, 0.3)]) == {1: 1.0}
    assert min_max([(1, 0.3), (2, 0.3)]) == {1: 1.0, 2: 1.0}
    assert min_max([(1, 0.9), (2, 0.5), (3, 0.1)]) == pytest.approx({1: 1.0, 2: 0.5, 3: 0.0})


def test_rrf_stays_selectable_and_unknown_fusion_is_refused():
    legs = {
        "lexical": LegResult("ok", [(1, 0.9), (2, 0.5)]),
        "vector": LegResult("ok", [(1, 0.8), (3, 0.7)]),
    }
    fused = fuse(legs, 60, "rrf")
    assert fused[0].score == pytest.approx(1.0)
    assert fused[1].score == pytest.approx((1 / 62) / (2 / 61))
    with pytest.raises(SearchError, match="unknown fusion 'borda'"):
        fuse(legs, 60, "borda")
