"""The rerank stage: an optional model that re-scores the fused candidates with their text.

A reranker sees the query and the top `rerank_depth` candidates (text loaded) and returns
them re-scored and re-ordered, scores in [0, 1]. None is configured by default.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from kb_search.errors import ConfigError
from kb_search.search.results import Candidate


class Reranker(Protocol):
    name: str

    def rerank(self, query: str, candidates: list[Candidate]) -> list[Candidate]: ...


# name (the `search.reranker` setting) -> a function that builds the reranker.
RERANKERS: dict[str, Callable[[], Reranker]] = {}


def reranker_named(name: str) -> Reranker | None:
    """The configured reranker; "none" (the default) is no rerank stage."""
    if name == "none":
        return None
    if name not in RERANKERS:
        known = ", ".join(["none", *sorted(RERANKERS)])
        raise ConfigError(f"unknown reranker {name!r}: use one of {known}")
    return RERANKERS[name]()


def apply_reranker(
    reranker: Reranker | None, query: str, candidates: list[Candidate], depth: int
) -> list[Candidate]:
    """Rerank the first `depth` candidates; the rest keep their order after them."""
    if reranker is None or not candidates:
        return candidates
    head, tail = candidates[:depth], candidates[depth:]
    reranked = reranker.rerank(query, head)
    for candidate in reranked:
        candidate.breakdown["rerank"] = round(candidate.score, 6)
    floor = min((c.score for c in reranked), default=0.0)
    for candidate in tail:  # never above a reranked candidate: scores stay non-increasing
        candidate.score = min(candidate.score, floor)
    return reranked + tail
