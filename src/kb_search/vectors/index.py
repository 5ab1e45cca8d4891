"""The vector-index protocol and what every backend shares.

A backend answers `nearest(conn, vector, k, allowed)`: chunk ids with cosine similarity
clipped to [0, 1], best first, ties by chunk id, restricted to `allowed` when given (a
filter). Backends are listed in `kb_search.vectors.BACKENDS`; the config value
`vectors.index` picks one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from kb_search.store.db import Connection
from kb_search.store.vectors import fetch_vectors

if TYPE_CHECKING:
    from kb_search.embedding import TextEmbedder
    from kb_search.store.vectors import VectorTable

Hits = list[tuple[int, float]]
Note = Callable[[str], None]  # a one-line message for the user


class VectorIndex(Protocol):
    def nearest(
        self, conn: Connection, vector: np.ndarray, k: int, allowed: set[int] | None
    ) -> Hits: ...


class IndexOpener(Protocol):
    """How every backend opens (`vectors.BACKENDS`): `note` tells the user something (a
    one-line message, e.g. that an index is being built); a backend that opens at once
    ignores it."""

    def __call__(
        self, conn: Connection, table: VectorTable, note: Note | None = None
    ) -> VectorIndex: ...


def similarities(distances: np.ndarray) -> np.ndarray:
    """Cosine distance -> similarity, clipped into [0, 1] for the JSON contract; a zero vector
    has no direction (its cosine distance is NaN): similarity 0."""
    return np.clip(np.nan_to_num(1.0 - distances, nan=0.0), 0.0, 1.0)


def ordered(ids: list[int], sims: np.ndarray, k: int) -> Hits:
    """Best first; equal scores (to 6 decimals, what the JSON shows) by chunk id."""
    pairs = sorted(zip(ids, sims.tolist()), key=lambda p: (-round(p[1], 6), p[0]))
    return [(cid, float(s)) for cid, s in pairs[:k]]


def top_k(ids: np.ndarray, sims: np.ndarray, k: int) -> Hits:
    """The k best of a similarity vector (argpartition, then an exact, stable order)."""
    sims = np.nan_to_num(sims, nan=0.0)  # a zero vector has no direction: similarity 0
    take = min(len(sims), k * 2)
    if take == 0:
        return []
    top = np.argpartition(-sims, take - 1)[:take] if take < len(sims) else np.arange(len(sims))
    return ordered(ids[top].tolist(), np.clip(sims[top], 0.0, 1.0), k)


def exact_subset(
    conn: Connection, table: str, vector: np.ndarray, k: int, allowed: set[int]
) -> Hits:
    """Exact search over a filtered subset, reading only those vectors."""
    ids, matrix = fetch_vectors(conn, table, allowed)
    if not ids:
        return []
    sims = matrix @ np.asarray(vector, dtype=np.float32)
    return top_k(np.asarray(ids, dtype=np.int64), sims, k)


@dataclass
class VectorSearch:
    """The vector leg of a search: the model embeds the query, an index finds neighbours."""

    embedder: TextEmbedder
    index: VectorIndex

    def embed_query(self, text: str) -> np.ndarray:
        return self.embedder.embed_query(text)

    def nearest(
        self, conn: Connection, vector: np.ndarray, k: int, allowed: set[int] | None
    ) -> Hits:
        return self.index.nearest(conn, vector, k, allowed)
