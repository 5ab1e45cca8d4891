"""The rerank stage: an optional model that re-scores the fused candidates with their text.

A reranker sees the query and the top `rerank_depth` candidates (text loaded: the chunk with
its title and heading line) and returns them re-scored and re-ordered, scores in [0, 1]. None
is configured by default: `search.reranker` names a cross-encoder (a Hugging Face id such as
cross-encoder/ms-marco-MiniLM-L-6-v2, provisioned like the embedding model: installed package,
cache, or the hub when online), a local directory holding one, or a rerank server
(`tei:NAME`, `openai:NAME`, `jina:NAME`, `cohere:NAME` at `rerank.endpoint`;
`models/rerank_endpoint.py`). A server that fails or answers later than `rerank.timeout_s`
raises RerankFailed: the search keeps the fused order and says so in a note. Which reranker a
name means, and building it once, is `models/` (`rerankers.py`, `loaded.Models.reranker`).
"""

from __future__ import annotations

from typing import Protocol

from kb_search.errors import SearchError
from kb_search.search.results import Candidate


class Reranker(Protocol):
    name: str

    def rerank(
        self, query: str, candidates: list[Candidate], deadline: float | None = None
    ) -> list[Candidate]:
        """The candidates re-scored in [0, 1], best first; `deadline` (time.monotonic()) is
        the search's budget: past it, stop with SearchError."""
        ...


class RerankFailed(SearchError):
    """The rerank stage could not score the candidates: the fused order stands."""


def apply_reranker(
    reranker: Reranker | None,
    query: str,
    candidates: list[Candidate],
    depth: int,
    deadline: float | None = None,
) -> list[Candidate]:
    """Rerank the first `depth` candidates; the rest keep their order after them."""
    if reranker is None or not candidates:
        return candidates
    head, tail = candidates[:depth], candidates[depth:]
    reranked = reranker.rerank(query, head, deadline=deadline)
    for candidate in reranked:
        candidate.breakdown["rerank"] = round(candidate.score, 6)
    floor = min((c.score for c in reranked), default=0.0)
    for candidate in tail:  # never above a reranked candidate: scores stay non-increasing
        candidate.score = min(candidate.score, floor)
    return reranked + tail
