"""A reranker behind HTTP: `tei:NAME` (text-embeddings-inference's `/rerank`) or a
`/v1/rerank` API (`openai:NAME`, `jina:NAME`, `cohere:NAME`: vLLM, llama.cpp's server,
Infinity, Jina, Cohere; all take {model, query, documents} and answer {results: [{index,
relevance_score}]}). `rerank.endpoint` names the base URL (http://localhost:8080 for TEI,
http://localhost:8000/v1 for vLLM); `/rerank` is added.

Scores in [0, 1] come back as they are; servers that return raw logits (llama.cpp) get a
sigmoid, so a score always reads as a relevance probability. One request per search, with a
total deadline and at most one quick retry: a search must answer soon.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kb_search.errors import ConfigError, EndpointError
from kb_search.models.wire import Deadline, checked_endpoint, client, open_response, read_json

SCHEMES = ("tei", "openai", "jina", "cohere")
ATTEMPTS = 2


@dataclass(frozen=True)
class RerankSettings:
    endpoint: str
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 3.0


class RerankEndpoint:
    """Relevance of passages to a query, scored by a rerank server."""

    def __init__(
        self, name: str, settings: RerankSettings, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        scheme, _, model = name.partition(":")
        if scheme not in SCHEMES:
            raise ConfigError(f"reranker {name!r}: use one of {', '.join(SCHEMES)} before the ':'")
        self.name, self.scheme, self.model = name, scheme, model
        self.settings = settings
        self._sleep = sleep
        self._http = client()

    @property
    def url(self) -> str:
        base = self.settings.endpoint
        return base if base.endswith("/rerank") else base + "/rerank"

    def scores(
        self, query: str, texts: Sequence[str], deadline: float | None = None
    ) -> list[float]:
        """One score per text, in their order; EndpointError when the server fails, answers
        late (`rerank.timeout_s`, or `deadline`, a time.monotonic() value) or answers nonsense."""
        if not texts:
            return []
        limit = Deadline(self.settings.timeout_s, not_after=deadline)
        what = f"reranker {self.name} at"
        body = self._body(query, list(texts))
        key = self.settings.api_key
        response, stack = open_response(
            self._http, self.url, body, limit, ATTEMPTS, what, key, self._sleep
        )
        with stack:
            payload = read_json(response, limit, f"{what} {self.url}")
        return self._scores(payload, len(texts))

    def close(self) -> None:
        self._http.close()

    def _body(self, query: str, texts: list[str]) -> dict[str, Any]:
        if self.scheme == "tei":
            return {"query": query, "texts": texts, "truncate": True, "raw_scores": False}
        body: dict[str, Any] = {"query": query, "documents": texts, "top_n": len(texts)}
        if self.model:
            body["model"] = self.model
        return body

    def _scores(self, payload: Any, count: int) -> list[float]:
        try:
            rows = payload if self.scheme == "tei" else payload["results"]
            key = "score" if self.scheme == "tei" else "relevance_score"
            found = {int(row["index"]): float(row[key]) for row in rows}
        except (KeyError, TypeError, ValueError):
            raise EndpointError(
                f"reranker {self.name} at {self.url} answered JSON that is not a rerank answer"
            ) from None
        if sorted(found) != list(range(count)) or not all(map(math.isfinite, found.values())):
            raise EndpointError(
                f"reranker {self.name} at {self.url} scored {len(found)} of {count} passages"
                " (or gave a score that is not a number)"
            )
        scores = [found[i] for i in range(count)]
        if any(s < 0 or s > 1 for s in scores):  # raw logits: read as probabilities
            scores = [1 / (1 + math.exp(-max(min(s, 50.0), -50.0))) for s in scores]
        return scores


def rerank_endpoint(name: str, values: Any) -> RerankEndpoint:
    """The endpoint reranker `name` with a Config's `rerank.*` values."""
    endpoint = values["rerank.endpoint"]
    if not endpoint:
        raise ConfigError(
            f"reranker {name!r} needs its server's base URL: set rerank.endpoint"
            " (KB_RERANK_ENDPOINT), e.g. http://localhost:8080"
        )
    settings = RerankSettings(
        endpoint=checked_endpoint(endpoint, "rerank.endpoint"),
        api_key=values["rerank.api_key"],
        timeout_s=values["rerank.timeout_s"],
    )
    return RerankEndpoint(name, settings)
