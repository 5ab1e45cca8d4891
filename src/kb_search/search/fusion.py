"""Fusing the legs' rankings into one, with scores in [0, 1].

Two methods (the `search.fusion` setting):

- `convex` (the default): each leg's scores are min-max normalised over its candidates (its
  best = 1, its last = 0) and added with equal weights. A chunk first in both legs scores 1.
- `rrf`: Reciprocal Rank Fusion, normalised so rank 1 in every leg = 1.0.

Both fuse a list of `Ranking`s: each leg of the query (phrasing 0) and of each variant
phrasing the caller added (`--also`, MCP `variants`), a variant weighing VARIANT_WEIGHT of the
query. Every candidate records which rankings found it (`found_by`).

While an index is partly embedded (an ingest's embedding phase has not finished), a chunk
without a vector yet cannot be found by a vector leg. Its missing vector is not evidence
against it: such a chunk (`unembedded`) is fused over the rankings it can appear in (the
lexical ones), divided by their weights alone, so a keyword-exact document that is not yet
embedded is not ranked under chunks found by meaning among the few embedded ones. A chunk
with a vector is fused exactly as before, so a fully embedded index ranks as it always did.

Why convex: measured with bench/fusion_study.py over five BEIR sets and the docs-QA and
code-QA question sets (docs/results.md), it ranks better than RRF on average and
in leave-one-set-out choice of its one constant; unlike RRF it keeps how far ahead a leg's
best candidates are, so a clear keyword match (an identifier, an error message) or a clear
meaning match is not flattened into "rank 1" like every other query's first hit.
"""

from __future__ import annotations

from dataclasses import dataclass
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
# A variant phrasing (an agent's keywords or rephrasing) weighs this much of the query itself:
# the first phrasing weighs most (measured below).
VARIANT_WEIGHT = 0.85
# A chunk in the top SOLO_DEPTH of one of the query's legs scores at least SOLO_SHARE of its
# normalised score there (times the query's share of the weights when variants take part).
# 0.55 at depth 3 measured neutral to slightly positive on every shared set (`python -m bench
# phrasing`); 0.65+ costs medline up to 0.007 nDCG. Imputing the other leg's mean instead of
# 0 was worse on docs-qa. VARIANT_WEIGHT: 0.5 < 0.7 < 0.85 on docs-qa and code-qa; with
# typed phrasings in their other leg (CROSS_SHARE), 0.85 over 0.7 lifted hit@1 on docs-qa
# (.792 -> .812) and pg-qa (.868 -> .897) and kept negation-qa (`python -m bench
# phrasing_forms`). Kept under 1: the query weighs most.
SOLO_SHARE = 0.55
SOLO_DEPTH = 3
# A typed phrasing ("lex: ..." or "vec: ...") is searched in its other leg too, at this share
# of its weight. Kept to their one leg, typed phrasings ranked below the same phrasings
# plain (both legs) on docs-qa and pg-qa (hit@1 .802 vs .823, .838 vs .882), above them on
# a held-out folder. At 0.5 they rank within a question of plain ones on docs-qa and above
# them on pg-qa; 0.75 and 1.0 (plain) gave pg-qa back (`python -m bench phrasing_forms`;
# a share for one direction only was worse: docs/results.md).
CROSS_SHARE = 0.5


@dataclass
class Ranking:
    """One leg's ranking for one phrasing, with its weight in the fusion."""

    phrasing: int  # 0 = the query itself, 1.. = its variants in the order given
    leg: str  # "lexical" or "vector"
    result: LegResult
    weight: float

    @property
    def ran(self) -> bool:
        return self.result.status in ("ok", "empty")


def rankings_of(
    legs: dict[str, LegResult], phrasing: int = 0, use: str = "both"
) -> list[Ranking]:
    """The legs of one phrasing as rankings: each leg's share of the phrasing's weight; a
    typed phrasing (`use` "lexical" or "vector") weighs CROSS_SHARE of that in its other leg."""
    weight = 1.0 if phrasing == 0 else VARIANT_WEIGHT
    return [
        Ranking(
            phrasing,
            name,
            leg,
            weight * LEG_WEIGHTS.get(name, 1.0) * (1.0 if use in ("both", name) else CROSS_SHARE),
        )
        for name, leg in legs.items()
    ]


def fuse(
    legs: dict[str, LegResult],
    k: int = 60,
    method: str = DEFAULT_FUSION,
    unembedded: frozenset[int] = frozenset(),
) -> list[Candidate]:
    """The legs' hits as one ranking, by `method` ("convex" or "rrf"; k is RRF's constant);
    `unembedded`: candidates with no vector yet, fused over the lexical rankings alone.
    Ties are broken by chunk id: the same DB and query give the same order."""
    return fuse_rankings(rankings_of(legs), k, method, unembedded)


def fuse_rankings(
    rankings: list[Ranking],
    k: int = 60,
    method: str = DEFAULT_FUSION,
    unembedded: frozenset[int] = frozenset(),
) -> list[Candidate]:
    """Every phrasing's leg rankings as one ranking (see `fuse`)."""
    if method == "convex":
        return fuse_convex(rankings, unembedded)
    if method == "rrf":
        return fuse_rrf(rankings, k, unembedded)
    raise SearchError(f"unknown fusion {method!r}: use one of {', '.join(FUSIONS)}")


def fuse_rrf(
    rankings: list[Ranking], k: int, unembedded: frozenset[int] = frozenset()
) -> list[Candidate]:
    """Weighted Reciprocal Rank Fusion over the rankings that ran, normalised so rank 1
    everywhere = 1.0 (for an `unembedded` chunk: rank 1 in every lexical ranking)."""
    ran = [r for r in rankings if r.ran]
    best = sum(r.weight for r in ran) / (k + 1)
    if not ran or best <= 0:
        return []
    best_without = keyword_weight(ran) / (k + 1)
    scores: dict[int, float] = {}
    breakdown: dict[int, dict[str, Any]] = {}
    found: Found = {}
    for ranking in ran:
        for rank, (cid, _) in enumerate(ranking.result.hits, start=1):
            scores[cid] = scores.get(cid, 0.0) + ranking.weight / (k + rank)
        _record(breakdown, found, ranking)
    return _ranked(
        {
            cid: raw / (best_without if cid in unembedded and best_without > 0 else best)
            for cid, raw in scores.items()
        },
        breakdown,
        found,
    )


def keyword_weight(ran: list[Ranking]) -> float:
    """The weight of the rankings a chunk without a vector can appear in."""
    return sum(r.weight for r in ran if r.leg != "vector")


def fuse_convex(
    rankings: list[Ranking], unembedded: frozenset[int] = frozenset()
) -> list[Candidate]:
    """Weighted sum of each ranking's min-max normalised scores, divided by the weights of the
    rankings that ran: in [0, 1], 1 = first everywhere. A leg that ran and found nothing
    still counts in the divisor (the best then scores its partner's weight, as with RRF); a
    leg that failed does not (the other leg's ranking comes through whole).

    A chunk one leg ranks near the top keeps at least SOLO_SHARE of that leg's normalised
    score, so a clear single-leg match (first by meaning, absent from the keyword leg) is not
    buried under chunks both legs rank middling.

    An `unembedded` chunk (no vector yet) is divided by the weights of the lexical rankings
    alone, and its floor is the query's share of those: it is fused over the legs it can have."""
    ran = [r for r in rankings if r.ran]
    total = sum(r.weight for r in ran)
    if not ran or total <= 0:
        return []
    total_without = keyword_weight(ran) or total
    scores: dict[int, float] = {}
    solo: dict[int, float] = {}
    breakdown: dict[int, dict[str, Any]] = {}
    found: Found = {}
    # the query's share of the whole: the floor is the query's, diluted like its legs
    query_share = sum(r.weight for r in ran if r.phrasing == 0) / total
    share_without = (
        sum(r.weight for r in ran if r.phrasing == 0 and r.leg != "vector") / total_without
    )
    for ranking in ran:
        weight = ranking.weight / total
        weight_without = ranking.weight / total_without
        leg = ranking.result
        # A lexical leg that returned every match it has: a chunk without the words scores
        # BM25 0, so 0 is the floor and its last match keeps credit over non-matches.
        floor = 0.0 if ranking.leg == "lexical" and leg.total <= len(leg.hits) else None
        normalised = min_max(strengths(ranking.leg, leg.hits), floor)
        for rank, (cid, _) in enumerate(leg.hits, start=1):
            value = normalised[cid]
            if cid in unembedded:  # only a lexical ranking can hold it
                scores[cid] = scores.get(cid, 0.0) + weight_without * value
                share = share_without
            else:
                scores[cid] = scores.get(cid, 0.0) + weight * value
                share = query_share
            if rank <= SOLO_DEPTH and ranking.phrasing == 0:
                solo[cid] = max(solo.get(cid, 0.0), SOLO_SHARE * share * value)
        _record(breakdown, found, ranking)
    fused = {cid: max(s, solo.get(cid, 0.0)) for cid, s in scores.items()}
    return _ranked(fused, breakdown, found)


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


Found = dict[int, list[list[Any]]]  # chunk id -> [phrasing, leg, rank] of each finding


def _record(breakdown: dict[int, dict[str, Any]], found: Found, ranking: Ranking) -> None:
    """The query's own legs go to the breakdown (fts, vector); every ranking that found a
    chunk, the query's and its variants', goes to its `found_by`."""
    label = leg_label(ranking.leg)
    for rank, (cid, score) in enumerate(ranking.result.hits, start=1):
        entry = breakdown.setdefault(cid, {})
        if ranking.phrasing == 0:
            entry[label] = round(score, 6)
            entry[f"{label}_rank"] = rank
        found.setdefault(cid, []).append([ranking.phrasing, ranking.leg, rank])


def _ranked(
    scores: dict[int, float], breakdown: dict[int, dict[str, Any]], found: Found
) -> list[Candidate]:
    fused = [
        Candidate(cid, min(1.0, max(0.0, s)), breakdown[cid], found_by=found[cid])
        for cid, s in scores.items()
    ]
    fused.sort(key=tie_order)
    return fused


def tie_order(candidate: Candidate) -> tuple[float, int, int, int]:
    """Higher score first; on a tie (to 1e-9), the chunk more rankings found, then the one
    the query itself ranked higher, then the lower chunk id (the same DB and query give the
    same order)."""
    found = candidate.found_by
    query_ranks = [rank for phrasing, _, rank in found if phrasing == 0]
    return (
        -round(candidate.score, 9),
        -len(found),
        min(query_ranks, default=1 << 30),
        candidate.chunk_id,
    )


def single_leg(legs: dict[str, LegResult], mode: str) -> list[Candidate]:
    """One leg's ranking as candidates (lexical-only or vector-only search)."""
    label = leg_label(mode)
    return [
        Candidate(
            cid, score, {label: round(score, 6), f"{label}_rank": rank}, found_by=[[0, mode, rank]]
        )
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
