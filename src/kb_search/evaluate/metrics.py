"""Ranking metrics as trec_eval / pytrec_eval compute them (checked against pytrec_eval)."""

from __future__ import annotations

import math

DEPTH = 100  # results per query a run asks for: Recall@100 needs them


def ndcg_at(ranking: list[str], relevant: dict[str, int], k: int = 10) -> float:
    """nDCG with linear gains (as trec_eval / pytrec_eval compute it for BEIR)."""
    gains = [g for g in relevant.values() if g > 0]
    if not gains:
        return 0.0
    dcg = sum(
        relevant.get(doc, 0) / math.log2(i + 2)
        for i, doc in enumerate(ranking[:k])
        if relevant.get(doc, 0) > 0
    )
    ideal = sorted(gains, reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg


def recall_at(ranking: list[str], relevant: dict[str, int], k: int = 100) -> float:
    wanted = {d for d, g in relevant.items() if g > 0}
    if not wanted:
        return 0.0
    return len(wanted.intersection(ranking[:k])) / len(wanted)


def mrr_at(ranking: list[str], relevant: dict[str, int], k: int = 10) -> float:
    for i, doc in enumerate(ranking[:k]):
        if relevant.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def hit_at(ranking: list[str], relevant: dict[str, int], k: int) -> float:
    """1.0 when a relevant document is among the first k, else 0.0."""
    return float(any(relevant.get(doc, 0) > 0 for doc in ranking[:k]))


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile with linear interpolation (numpy's default)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * pct / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
