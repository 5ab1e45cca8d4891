"""Prototype of kb's approximate vector index (usearch HNSW), ready to move behind the
vector-store protocol. Not used by kb yet; `python bench/ann_index.py` checks it against exact
search on generated vectors (recall, filters, updates, save/load).

Choices (measured in docs/scale.md): cosine metric on f32 vectors, connectivity (M) 16,
expansion_add (ef_construction) 200, expansion_search (ef) 128 by default and never below k.
Filters: a selective filter is answered exactly over the allowed subset (vectors from
`exact_source`, in kb the vec0 table); a broad one by over-fetching from the graph and
dropping what is not allowed, widening until k results survive.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
from usearch.index import Index

# (ids, float32 matrix) of the given ids' stored vectors: kb's `vectors.fetch_vectors`.
VectorSource = Callable[[list[int]], tuple[list[int], np.ndarray]]

EXPANSION_SEARCH = 128  # ef: raised to k (and to the over-fetch) when those are larger
EXACT_LIMIT = 20_000  # a filter allowing at most this many ids is searched exactly
MAX_OVERFETCH = 4_096  # the widest graph search made to satisfy a filter


class ApproximateIndex:
    """Approximate nearest chunks by cosine similarity, over an HNSW graph (usearch)."""

    def __init__(
        self,
        dim: int = 384,
        connectivity: int = 16,
        expansion_add: int = 200,
        expansion_search: int = EXPANSION_SEARCH,
        exact_source: VectorSource | None = None,
        exact_limit: int = EXACT_LIMIT,
        max_overfetch: int = MAX_OVERFETCH,
    ) -> None:
        self.dim = dim
        self.expansion_search = expansion_search
        self.exact_source = exact_source
        self.exact_limit = exact_limit
        self.max_overfetch = max_overfetch
        self.index = Index(
            ndim=dim,
            metric="cos",
            dtype="f32",
            connectivity=connectivity,
            expansion_add=expansion_add,
            expansion_search=expansion_search,
        )

    def __len__(self) -> int:
        return len(self.index)

    def build(self, ids: Iterable[int], matrix: np.ndarray, threads: int = 0) -> None:
        """Replace the whole content (`threads=0`: all cores)."""
        self.index.clear()
        keys = np.fromiter(ids, dtype=np.uint64)
        if len(keys):
            self.index.add(keys, _as_matrix(matrix, self.dim), threads=threads)

    def add(self, ids: Iterable[int], vectors: np.ndarray, threads: int = 0) -> None:
        """Insert or replace: an id already present gets the new vector."""
        keys = np.fromiter(ids, dtype=np.uint64)
        if not len(keys):
            return
        present = keys[self.index.contains(keys)]
        if len(present):
            self.index.remove(present)
        self.index.add(keys, _as_matrix(vectors, self.dim), threads=threads)

    def remove(self, ids: Iterable[int]) -> None:
        keys = np.fromiter(ids, dtype=np.uint64)
        if len(keys):
            self.index.remove(keys[self.index.contains(keys)])

    def nearest(
        self, vector: np.ndarray, k: int, allowed: set[int] | None = None
    ) -> list[tuple[int, float]]:
        """Up to k (id, cosine similarity clipped to [0, 1]) best first, ties by id."""
        if k < 1 or not len(self.index):
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if allowed is None:
            return self._graph_search(query, k, None)
        if not allowed:
            return []
        fraction = len(allowed) / len(self.index)
        wanted = math.ceil(2 * k / fraction)
        if len(allowed) <= self.exact_limit or wanted > self.max_overfetch:
            return self._exact_subset(query, k, allowed)
        return self._graph_search(query, k, allowed, wanted)

    def save(self, path: Path | str) -> None:
        self.index.save(str(path))

    @classmethod
    def load(
        cls,
        path: Path | str,
        view: bool = False,
        exact_source: VectorSource | None = None,
        expansion_search: int = EXPANSION_SEARCH,
    ) -> ApproximateIndex:
        """Read a saved index; `view=True` memory-maps it (read-only, near-instant to open:
        right for one-shot CLI searches). The file keeps the graph and its metric, dtype and
        connectivity, not the search-time settings: those come from the arguments."""
        restored = Index.restore(str(path), view=view)
        if restored is None:
            raise ValueError(f"not a usearch index: {path}")
        index = cls.__new__(cls)
        index.dim = restored.ndim
        index.expansion_search = expansion_search
        index.exact_source = exact_source
        index.exact_limit = EXACT_LIMIT
        index.max_overfetch = MAX_OVERFETCH
        index.index = restored
        return index

    def _graph_search(
        self, query: np.ndarray, k: int, allowed: set[int] | None, count: int | None = None
    ) -> list[tuple[int, float]]:
        count = count or k
        while True:
            count = min(count, len(self.index))
            self.index.expansion_search = max(self.expansion_search, count)
            matches = self.index.search(query, count, threads=1)
            pairs = [
                (int(key), 1.0 - float(dist))
                for key, dist in zip(matches.keys, matches.distances)
                if allowed is None or int(key) in allowed
            ]
            if len(pairs) >= k or count >= len(self.index) or allowed is None:
                return _ordered(pairs, k)
            if count * 2 > self.max_overfetch:
                return self._exact_subset(query, k, allowed)
            count *= 2

    def _exact_subset(
        self, query: np.ndarray, k: int, allowed: set[int]
    ) -> list[tuple[int, float]]:
        wanted = sorted(allowed)
        if self.exact_source is not None:
            ids, matrix = self.exact_source(wanted)
        else:
            keys = np.array(wanted, dtype=np.uint64)
            keys = keys[self.index.contains(keys)]
            ids = keys.tolist()
            matrix = np.vstack(self.index.get(keys)) if len(keys) else np.zeros((0, self.dim))
        if not len(ids):
            return []
        matrix = np.asarray(matrix, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1) * max(float(np.linalg.norm(query)), 1e-12)
        sims = (matrix @ query) / np.maximum(norms, 1e-12)
        take = min(len(sims), 2 * k)
        top = np.argpartition(-sims, take - 1)[:take] if take < len(sims) else np.arange(len(sims))
        return _ordered([(int(ids[i]), float(sims[i])) for i in top], k)


def _as_matrix(vectors: np.ndarray, dim: int) -> np.ndarray:
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[1] != dim:
        raise ValueError(f"expected an n x {dim} matrix, got {matrix.shape}")
    return matrix


def _ordered(pairs: list[tuple[int, float]], k: int) -> list[tuple[int, float]]:
    clipped = [(cid, min(1.0, max(0.0, sim))) for cid, sim in pairs]
    clipped.sort(key=lambda p: (-round(p[1], 6), p[0]))
    return clipped[:k]


def _self_check() -> None:
    """Every operation against exact search on clustered vectors (recall, filters, updates,
    save/load); exits with an assertion error when something is off."""
    import tempfile
    import time

    rng = np.random.default_rng(0)
    n, dim = 20_000, 384
    # Clusters with their spread in a 24-dimensional subspace: text embeddings have a low
    # local dimension (~13-23 measured on SciFact); isotropic 384-d noise would not.
    centres = rng.standard_normal((400, dim)).astype(np.float32)
    basis = np.linalg.qr(rng.standard_normal((dim, 24)))[0].T.astype(np.float32)
    spread = rng.standard_normal((n, 24), np.float32) @ basis * 6.0
    data = centres[rng.integers(0, 400, n)] + spread
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    ids = np.arange(1, n + 1) * 3  # chunk ids are not row numbers
    live = np.ones(n, dtype=bool)
    queries = data[rng.integers(0, n, 200)] + 0.05 * rng.standard_normal((200, dim), np.float32)
    row_of = {int(cid): row for row, cid in enumerate(ids)}

    def source(wanted: list[int]) -> tuple[list[int], np.ndarray]:
        rows = [row_of[i] for i in wanted if i in row_of and live[row_of[i]]]
        return ids[rows].tolist(), data[rows]

    def exact(q: np.ndarray, k: int, allowed: set[int] | None) -> list[int]:
        mask = live.copy()
        if allowed is not None:
            mask &= np.isin(ids, list(allowed))
        keys, sims = ids[mask], data[mask] @ q
        return keys[np.lexsort((keys, -sims))][:k].tolist()

    def recall(k: int, allowed: set[int] | None = None) -> float:
        hits = 0
        for q in queries:
            got = [i for i, _ in index.nearest(q, k, allowed)]
            assert allowed is None or set(got) <= allowed
            assert len(got) == len(set(got))
            hits += len(set(got) & set(exact(q, k, allowed)))
        return hits / (k * len(queries))

    # exact_limit lowered so that the 20% filter takes the over-fetching graph path
    index = ApproximateIndex(exact_source=source, exact_limit=1_000)
    t0 = time.perf_counter()
    index.build(ids.tolist(), data)
    print(f"build {n:,}: {time.perf_counter() - t0:.1f} s")
    r10, r100 = recall(10), recall(100)
    print(f"recall@10 {r10:.3f}  recall@100 {r100:.3f}")
    narrow = set(rng.choice(ids, n // 100, replace=False).tolist())
    broad = set(rng.choice(ids, n // 5, replace=False).tolist())
    f1, f20 = recall(10, narrow), recall(10, broad)
    print(f"filtered recall@10: 1% allowed (exact) {f1:.3f}; 20% (graph) {f20:.3f}")
    assert r10 > 0.9 and f1 == 1.0 and f20 > 0.9
    changed = ids[:500].tolist()
    data[:500] = data[500:1000]
    index.add(changed, data[:500])
    index.remove(ids[-500:].tolist())
    live[-500:] = False
    assert len(index) == n - 500
    after = recall(10)
    print(f"after replacing 500 vectors and removing 500 ids: recall@10 {after:.3f}")
    assert after > 0.9
    hit = index.nearest(data[0], 2)
    assert {hit[0][0], hit[1][0]} == {int(ids[0]), int(ids[500])} and hit[1][1] > 0.999, hit
    assert not set(ids[-500:].tolist()) & {i for q in queries for i, _ in index.nearest(q, 50)}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "index.usearch"
        index.save(path)
        for view in (False, True):
            t0 = time.perf_counter()
            loaded = ApproximateIndex.load(path, view=view, exact_source=source)
            opened = time.perf_counter() - t0
            same = all(loaded.nearest(q, 10) == index.nearest(q, 10) for q in queries[:20])
            print(f"load view={view}: {opened * 1000:.1f} ms, same results: {same}")
            assert same
            del loaded
    print("ok")


if __name__ == "__main__":
    _self_check()
