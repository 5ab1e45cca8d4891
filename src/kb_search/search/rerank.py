"""The rerank stage: an optional model that re-scores the fused candidates with their text.

A reranker sees the query and the top `rerank_depth` candidates (text loaded: the chunk with
its title and heading line) and returns them re-scored and re-ordered, scores in [0, 1]. None
is configured by default: `search.reranker` names a cross-encoder (a Hugging Face id such as
cross-encoder/ms-marco-MiniLM-L-6-v2, provisioned like the embedding model: installed package,
cache, or the hub when online), a local directory holding one, or a rerank server
(`tei:NAME`, `openai:NAME`, `jina:NAME`, `cohere:NAME` at `rerank.endpoint`;
`models/rerank_endpoint.py`). A server that fails or answers later than `rerank.timeout_s`
raises RerankFailed: the search keeps the fused order and says so in a note.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kb_search.errors import ConfigError, SearchError
from kb_search.registry import Registry
from kb_search.search.results import Candidate

if TYPE_CHECKING:
    from kb_search.embedding.cross_encoder import CrossEncoder
    from kb_search.models.rerank_endpoint import RerankEndpoint


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


# How every reranker is built: (the `search.reranker` name, the model cache directory, a
# Config's values or None: `rerank.*`, for rerank servers).
RerankerFactory = Callable[[str, Path, Any], Reranker]

# `search.reranker` -> its factory, imported when chosen: a name registered here (a reranker
# made in process, as a test's), else its scheme (`tei:NAME` ... `cohere:NAME`: rerank servers,
# the schemes of models.rerank_endpoint.SCHEMES), else a cross-encoder model.
RERANKERS: Registry[RerankerFactory] = Registry(
    "reranker",
    {
        **{
            f"{scheme}:": "kb_search.search.rerank:endpoint_reranker"
            for scheme in ("tei", "openai", "jina", "cohere")
        },
        "cross-encoder": "kb_search.search.rerank:cross_encoder_reranker",
    },
    ConfigError,
)


def reranker_kind(name: str) -> str:
    """The RERANKERS entry that builds `name`."""
    if name in RERANKERS:
        return name
    scheme, sep, _ = name.partition(":")
    if sep and f"{scheme}:" in RERANKERS:
        return f"{scheme}:"
    return "cross-encoder"


class EndpointReranker:
    """Candidates re-scored by a rerank server (models.rerank_endpoint)."""

    def __init__(self, endpoint: RerankEndpoint) -> None:
        self.endpoint = endpoint
        self.name = endpoint.name
        self.source = f"endpoint {endpoint.url}"  # what `kb doctor` reports

    def rerank(
        self, query: str, candidates: list[Candidate], deadline: float | None = None
    ) -> list[Candidate]:
        from kb_search.errors import EndpointError

        try:
            scores = self.endpoint.scores(query, [c.text or "" for c in candidates], deadline)
        except EndpointError as exc:
            raise RerankFailed(str(exc)) from exc
        for candidate, score in zip(candidates, scores):
            candidate.score = float(score)
        return sorted(candidates, key=lambda c: (-c.score, c.chunk_id))


class CrossEncoderReranker:
    """Candidates re-scored by a cross-encoder reading the query and each chunk together."""

    def __init__(self, model: CrossEncoder) -> None:
        self.model = model
        self.name = model.name

    def rerank(
        self, query: str, candidates: list[Candidate], deadline: float | None = None
    ) -> list[Candidate]:
        from kb_search.embedding.cross_encoder import DeadlineExceeded, error_reason

        texts = [c.text or "" for c in candidates]
        try:
            scores = self.model.score(query, texts, deadline=deadline)
        except DeadlineExceeded as exc:
            raise SearchError(f"the rerank stage ran past the search's budget ({exc})") from exc
        except Exception as exc:  # noqa: BLE001 - onnxruntime's errors have no common base
            raise SearchError(f"reranker {self.name} failed: {error_reason(exc)}") from exc
        for candidate, score in zip(candidates, scores):
            candidate.score = float(score)
        return sorted(candidates, key=lambda c: (-c.score, c.chunk_id))


class LoadedRerankers:
    """Each reranker a process uses, built once (the warm server's threads share them)."""

    def __init__(self, cache_dir: Callable[[], Path], settings: Any = None):
        """`settings`: a Config's values (`rerank.*`, for rerank servers)."""
        self._cache_dir = cache_dir
        self._settings = settings
        self._by_name: dict[str, Reranker | None] = {}
        self._lock = threading.Lock()

    def named(self, name: str) -> Reranker | None:
        with self._lock:
            if name not in self._by_name:
                self._by_name[name] = reranker_named(name, self._cache_dir(), self._settings)
            return self._by_name[name]


def reranker_named(name: str, cache_dir: Path, settings: Any = None) -> Reranker | None:
    """The configured reranker; "none" (the default) is no rerank stage. `tei:`, `openai:`,
    `jina:`, `cohere:` names are rerank servers (`settings`: a Config's values, for
    `rerank.endpoint` and its key). A name that is not registered is a cross-encoder model (a
    directory holding one, or a model id), provisioned into `cache_dir`; ConfigError in one
    line when it cannot be had."""
    if name == "none":
        return None
    return RERANKERS.load(reranker_kind(name))(name, cache_dir, settings)


def endpoint_reranker(name: str, cache_dir: Path, settings: Any) -> Reranker:
    from kb_search.models.rerank_endpoint import rerank_endpoint

    if settings is None:
        raise ConfigError(f"reranker {name!r} needs rerank.endpoint settings")
    return EndpointReranker(rerank_endpoint(name, settings))


def cross_encoder_reranker(name: str, cache_dir: Path, settings: Any) -> Reranker:
    import hashlib  # here: a search without a reranker should not load OpenSSL (~4 ms)

    from kb_search.embedding.cross_encoder import load_cross_encoder
    from kb_search.embedding.variants import join_variant, split_variant

    # A directory is named by an absolute path (the config makes a relative one absolute
    # where it is written): a relative name is a model id, in every process and cwd alike.
    local, variant = Path(name), ""
    if not local.is_dir():
        base, variant = split_variant(name)  # "DIR@int8" or "MODEL@int8": quantised
        local = Path(base)
    source, model = None, name
    if local.is_absolute() and local.is_dir():
        # Two directories of the same name are two models: the name carries where it lives.
        where = hashlib.blake2b(str(local).encode(), digest_size=3).hexdigest()
        source, model = local, join_variant(f"local/{local.name}-{where}", variant)
    try:
        return CrossEncoderReranker(load_cross_encoder(model, cache_dir, source))
    except Exception as exc:  # noqa: BLE001 - not found, offline, not convertible, refused by onnxruntime
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"reranker {name!r} is not available: {reason}") from exc


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
