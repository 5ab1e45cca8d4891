"""Fusing the legs' rankings into one, with scores in [0, 1].

Two methods (the `search.fusion` setting):

- `convex` (the default): each leg's scores are min-max normalised over its candidates (its
  best = 1, its last = 0) and added with equal weights. A chunk first in both legs scores 1.
- `rrf`: Reciprocal Rank Fusion, normalised so rank 1 in every leg = 1.0.

Why convex: measured with bench/fusion_study.py over five BEIR sets and the docs-QA and
code-QA question sets (docs/results.md), it ranks better than RRF on average and
in leave-one-set-out choice of its one constant; unlike RRF it keeps how far ahead a leg's
best candidates are, so a clear keyword match (an identifier, an error message) or a clear
meaning match is not flattened into "rank 1" like every other query's first hit.
"""

from __future__ import annotations

from typing import Any

from kb_search.errors import SearchError
from kb_search.search.legs import LegResult, leg_label
from kb_search.search.results import Candidate

FUSIONS = ("convex", "rrf")
DEFAULT_FUSION = "convex"
# The lexical leg's share in `convex` (the vector leg has the rest). 0.5, no preference, was
# best on every held-out set in leave-one-set-out choice from 0.3-0.7, and its neighbours
# 0.45 and 0.6 are nearly as good: it is not tuned to one corpus.
LEXICAL_WEIGHT = 0.5
LEG_WEIGHTS = {"lexical": LEXICAL_WEIGHT, "vector": 1.0 - LEXICAL_WEIGHT}


def ran_legs(legs: dict[str, LegResult]) -> list[str]:
    """The legs that ran (found something or nothing); a leg that failed takes no part."""
    return [name for name, leg in legs.items() if leg.status in ("ok", "empty")]


def fuse(legs: dict[str, LegResult], k: int = 60, method: str = DEFAULT_FUSION) -> list[Candidate]:
    """The legs' hits as one ranking, by `method` ("convex" or "rrf"; k is RRF's constant).
    Ties are broken by chunk id: the same DB and query give the same order."""
    if method == "convex":
        return fuse_convex(legs)
    if method == "rrf":
        return fuse_rrf(legs, k)
    raise SearchError(f"unknown fusion {method!r}: use one of {', '.join(FUSIONS)}")


def fuse_rrf(legs: dict[str, LegResult], k: int) -> list[Candidate]:
    """Reciprocal Rank Fusion over the legs that ran, normalised so rank 1 everywhere = 1.0."""
    ran = ran_legs(legs)
    if not ran:
        return []
    scores: dict[int, float] = {}
    breakdown: dict[int, dict[str, Any]] = {}
    for name in ran:
        for rank, (cid, _) in enumerate(legs[name].hits, start=1):
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (k + rank)
        _record(breakdown, name, legs[name])
    best = len(ran) / (k + 1)
    return _ranked({cid: raw / best for cid, raw in scores.items()}, breakdown)


def fuse_convex(legs: dict[str, LegResult]) -> list[Candidate]:
    """Weighted sum of each leg's min-max normalised scores, divided by the weights of the legs
    that ran: in [0, 1], 1 = first in every leg. A leg that ran and found nothing still counts
    in the divisor (the best then scores its partner's weight, as with RRF); a leg that failed
    does not (the other leg's ranking comes through whole)."""
    ran = ran_legs(legs)
    total = sum(LEG_WEIGHTS.get(name, 1.0) for name in ran)
    if not ran or total <= 0:
        return []
    scores: dict[int, float] = {}
    breakdown: dict[int, dict[str, Any]] = {}
    for name in ran:
        weight = LEG_WEIGHTS.get(name, 1.0) / total
        leg = legs[name]
        # A lexical leg that returned every match it has: a chunk without the words scores
        # BM25 0, so 0 is the floor and its last match keeps credit over non-matches.
        floor = 0.0 if name == "lexical" and leg.total <= len(leg.hits) else None
        for cid, value in min_max(strengths(name, leg.hits), floor).items():
            scores[cid] = scores.get(cid, 0.0) + weight * value
        _record(breakdown, name, legs[name])
    return _ranked(scores, breakdown)


def strengths(leg: str, hits: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """The scores min-max works on: BM25 itself (-bm25, undoing the leg's x/(1+|x|) squash,
    whose saturation would crowd the best matches together) and the cosine as it is."""
    if leg != "lexical":
        return hits
    return [(cid, _unsquash(score)) for cid, score in hits]


def _unsquash(score: float) -> float:
    if score >= 1.0:  # x/(1+|x|) never reaches 1: only a hand-made hit does
        return 1e9
    return score / (1.0 - score) if score >= 0 else score / (1.0 + score)


def min_max(hits: list[tuple[int, float]], floor: float | None = None) -> dict[int, float]:
    """Scores mapped onto [0, 1]: the best hit 1, the worst of the candidates (or `floor`,
    when lower) 0; one hit, or all equal, is 1."""
    if not hits:
        return {}
    values = [score for _, score in hits]
    low, high = min(values), max(values)
    if floor is not None:
        low = min(low, floor)
    span = high - low
    return {cid: (score - low) / span if span > 0 else 1.0 for cid, score in hits}


def _record(breakdown: dict[int, dict[str, Any]], name: str, leg: LegResult) -> None:
    label = leg_label(name)
    for rank, (cid, score) in enumerate(leg.hits, start=1):
        entry = breakdown.setdefault(cid, {})
        entry[label] = round(score, 6)
        entry[f"{label}_rank"] = rank


def _ranked(scores: dict[int, float], breakdown: dict[int, dict[str, Any]]) -> list[Candidate]:
    fused = [Candidate(cid, min(1.0, max(0.0, s)), breakdown[cid]) for cid, s in scores.items()]
    fused.sort(key=lambda c: (-c.score, c.chunk_id))
    return fused


def single_leg(legs: dict[str, LegResult], mode: str) -> list[Candidate]:
    """One leg's ranking as candidates (lexical-only or vector-only search)."""
    label = leg_label(mode)
    return [
        Candidate(cid, score, {label: round(score, 6), f"{label}_rank": rank})
        for rank, (cid, score) in enumerate(legs[mode].hits, start=1)
    ]


def complete_breakdown(breakdown: dict[str, Any], legs: dict[str, LegResult]) -> dict[str, Any]:
    """Every leg that ran has its score and rank in the breakdown (null = it did not find it);
    what later stages added (a rerank score) follows."""
    out: dict[str, Any] = {}
    for name in legs:
        label = leg_label(name)
        out[label] = breakdown.get(label)
        out[f"{label}_rank"] = breakdown.get(f"{label}_rank")
    return out | {k: v for k, v in breakdown.items() if k not in out}
