"""Fusing the legs' rankings into one: Reciprocal Rank Fusion, normalised to [0, 1]."""

from __future__ import annotations

from typing import Any

from kb_search.search.legs import LegResult, leg_label
from kb_search.search.results import Candidate


def fuse(legs: dict[str, LegResult], k: int) -> list[Candidate]:
    """Reciprocal Rank Fusion over the legs that ran, normalised so rank 1 everywhere = 1.0.
    Ties are broken by chunk id: the same DB and query give the same order."""
    ran = [name for name, leg in legs.items() if leg.status in ("ok", "empty")]
    if not ran:
        return []
    scores: dict[int, float] = {}
    breakdown: dict[int, dict[str, Any]] = {}
    for name in ran:
        label = leg_label(name)
        for rank, (cid, score) in enumerate(legs[name].hits, start=1):
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (k + rank)
            entry = breakdown.setdefault(cid, {})
            entry[label] = round(score, 6)
            entry[f"{label}_rank"] = rank
    best = len(ran) / (k + 1)
    fused = [Candidate(cid, raw / best, breakdown[cid]) for cid, raw in scores.items()]
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
