"""The candidates of the ANN benchmark behind one small interface.

Ids are row numbers of the benchmark matrix (0..n-1, appended rows after). All vectors are unit
length, so inner product = cosine similarity. Every search is one query at a time on one thread,
as a `kb search` or an MCP request would run it.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


@dataclass
class Allowed:
    """One filter (the ids a search may return) in each form a library wants it."""

    ids: np.ndarray  # sorted row ids
    mask: np.ndarray  # bool, one per row
    members: set[int] = field(default_factory=set)
    bitmap: Any = None  # faiss.IDSelectorBitmap, built on demand

    @classmethod
    def of(cls, ids: np.ndarray, n: int) -> Allowed:
        mask = np.zeros(n, dtype=bool)
        mask[ids] = True
        return cls(np.sort(ids), mask, set(ids.tolist()))

    @property
    def fraction(self) -> float:
        return len(self.ids) / len(self.mask)


def top_rows(sims: np.ndarray, k: int) -> np.ndarray:
    take = min(k, len(sims))
    top = np.argpartition(-sims, take - 1)[:take] if take < len(sims) else np.arange(len(sims))
    return top[np.lexsort((top, -sims[top]))]


def post_filter(search: Any, query: np.ndarray, k: int, allowed: Allowed, limit: int) -> np.ndarray:
    """Ask an unfiltered index for enough candidates that k survive the filter (on average),
    then drop the rest: the only way to filter a library without a native filter."""
    want = min(limit, math.ceil(k / allowed.fraction * 2))
    found = search(query, want)
    return found[allowed.mask[found]][:k]


class Exact:
    """A numpy matrix, searched with one matrix-vector product + argpartition (MatrixIndex)."""

    name = "numpy-exact"
    sweep: list[int] = [0]
    native_filter = True

    def __init__(self, **_: Any) -> None:
        self.matrix = np.zeros((0, 0), dtype=np.float32)

    def build(self, vectors: np.ndarray, threads: int, folder: Path) -> None:
        self.matrix = np.ascontiguousarray(vectors, dtype=np.float32)

    def save(self, folder: Path) -> None:
        np.save(folder / "matrix.npy", self.matrix)

    def load(self, folder: Path) -> None:
        self.matrix = np.load(folder / "matrix.npy")

    def tune(self, value: int) -> None:
        pass

    def search(self, query: np.ndarray, k: int) -> np.ndarray:
        return top_rows(self.matrix @ query, k)

    def filtered(self, query: np.ndarray, k: int, allowed: Allowed) -> np.ndarray:
        # Exact over the subset: gather the allowed rows, then the same product.
        return allowed.ids[top_rows(self.matrix[allowed.ids] @ query, k)]

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        assert ids[0] == len(self.matrix)
        self.matrix = np.concatenate([self.matrix, vectors])

    def remove(self, ids: np.ndarray) -> bool:
        self.matrix[ids] = 0.0  # a zero row never outranks a real match
        return True

    def replace(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        self.matrix[ids] = vectors


class SqliteVec:
    """sqlite-vec's vec0 KNN (brute force inside SQLite), as `kb search` uses it today."""

    name = "sqlite-vec"
    sweep: list[int] = [0]
    native_filter = True

    def __init__(self, **_: Any) -> None:
        self.conn: Any = None
        self.path: Path | None = None

    def _connect(self, path: Path) -> None:
        import sqlean

        from kb_search.store.db import load_vec_extension

        self.conn = sqlean.connect(str(path), isolation_level=None)
        problem = load_vec_extension(self.conn)
        if problem is not None:
            raise RuntimeError(f"sqlite-vec does not load: {problem}")
        self.path = path

    def build(self, vectors: np.ndarray, threads: int, folder: Path) -> None:
        # Built in a working copy: the update measurements that follow must not touch the
        # saved file the query phase loads.
        (folder / "work").mkdir(exist_ok=True)
        self._connect(folder / "work" / "vec.db")
        self.conn.execute(
            "CREATE VIRTUAL TABLE v USING vec0(embedding float[384] distance_metric=cosine)"
        )
        self.add(np.arange(len(vectors)), vectors)

    def save(self, folder: Path) -> None:
        assert self.path is not None  # every insert is committed: the file is consistent
        shutil.copyfile(self.path, folder / "vec.db")

    def load(self, folder: Path) -> None:
        self._connect(folder / "vec.db")
        self.conn.execute("SELECT count(*) FROM v").fetchone()

    def tune(self, value: int) -> None:
        pass

    def search(self, query: np.ndarray, k: int) -> np.ndarray:
        rows = self.conn.execute(
            "SELECT rowid FROM v WHERE embedding MATCH ? AND k = ? ORDER BY distance",
            (query.astype(np.float32).tobytes(), k),
        ).fetchall()
        return np.array([r[0] for r in rows], dtype=np.int64)

    def filtered(self, query: np.ndarray, k: int, allowed: Allowed) -> np.ndarray:
        # What kb does today for a filtered CLI search: fetch the allowed vectors, then numpy.
        ids: list[int] = []
        blobs: list[bytes] = []
        wanted = allowed.ids.tolist()
        for start in range(0, len(wanted), 900):
            part = wanted[start : start + 900]
            marks = ",".join("?" * len(part))
            for rowid, blob in self.conn.execute(
                f"SELECT rowid, embedding FROM v WHERE rowid IN ({marks})", part
            ):
                ids.append(rowid)
                blobs.append(blob)
        matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), -1)
        return np.array(ids, dtype=np.int64)[top_rows(matrix @ query, k)]

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        self.conn.execute("BEGIN")
        self.conn.executemany(
            "INSERT INTO v(rowid, embedding) VALUES (?, ?)",
            ((int(i), v.tobytes()) for i, v in zip(ids, np.asarray(vectors, dtype=np.float32))),
        )
        self.conn.execute("COMMIT")

    def remove(self, ids: np.ndarray) -> bool:
        self.conn.execute("BEGIN")
        self.conn.executemany("DELETE FROM v WHERE rowid = ?", ((int(i),) for i in ids))
        self.conn.execute("COMMIT")
        return True

    def replace(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        self.add(ids, vectors)


class Hnswlib:
    name = "hnswlib"
    sweep = [16, 32, 64, 128, 256, 512, 1024, 2048]
    native_filter = True  # a Python callable per visited node

    def __init__(self, M: int = 16, ef_construction: int = 200, **_: Any) -> None:
        import hnswlib

        self.lib = hnswlib
        self.M, self.ef_construction = M, ef_construction
        self.index: Any = None

    def build(self, vectors: np.ndarray, threads: int, folder: Path) -> None:
        self.index = self.lib.Index(space="ip", dim=vectors.shape[1])
        self.index.init_index(
            max_elements=len(vectors),
            M=self.M,
            ef_construction=self.ef_construction,
            allow_replace_deleted=True,
        )
        self.index.add_items(vectors, np.arange(len(vectors)), num_threads=threads)

    def save(self, folder: Path) -> None:
        self.index.save_index(str(folder / "hnswlib.bin"))

    def load(self, folder: Path) -> None:
        self.index = self.lib.Index(space="ip", dim=384)
        self.index.load_index(str(folder / "hnswlib.bin"), allow_replace_deleted=True)

    def tune(self, value: int) -> None:
        self.index.set_ef(value)

    def search(self, query: np.ndarray, k: int) -> np.ndarray:
        labels, _ = self.index.knn_query(query, k=k, num_threads=1)
        return labels[0].astype(np.int64)

    def filtered(self, query: np.ndarray, k: int, allowed: Allowed) -> np.ndarray:
        k = min(k, len(allowed.ids))
        labels, _ = self.index.knn_query(
            query, k=k, num_threads=1, filter=allowed.members.__contains__
        )
        return labels[0].astype(np.int64)

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        # New ids take the slots of deleted ones first; grow only for the rest.
        free = self.index.get_max_elements() - self.index.get_current_count()
        deleted = self.index.get_current_count() - self.index.element_count
        needed = len(ids) - free - deleted
        if needed > 0:
            self.index.resize_index(self.index.get_max_elements() + needed)
        self.index.add_items(vectors, ids, num_threads=2, replace_deleted=True)

    def remove(self, ids: np.ndarray) -> bool:
        for i in ids.tolist():
            self.index.mark_deleted(i)
        return True

    def replace(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        # With slot reuse on, hnswlib refuses to add a deleted label again: unmark it, then
        # adding it moves the point to its new vector (updatePoint repairs its links).
        for i in ids.tolist():
            self.index.unmark_deleted(i)
        self.index.add_items(vectors, ids, num_threads=2)


class USearch:
    name = "usearch"
    sweep = [16, 32, 64, 128, 256, 512, 1024, 2048]
    native_filter = False  # the Python API has no predicate: post-filtering only

    def __init__(
        self,
        M: int = 16,
        ef_construction: int = 128,
        dtype: str = "f32",
        view: bool = False,
        **_: Any,
    ) -> None:
        from usearch.index import Index

        self.Index = Index
        self.M, self.ef_construction, self.dtype, self.view = M, ef_construction, dtype, view
        self.index: Any = None

    def _new(self) -> Any:
        return self.Index(
            ndim=384,
            metric="ip",
            dtype=self.dtype,
            connectivity=self.M,
            expansion_add=self.ef_construction,
        )

    def build(self, vectors: np.ndarray, threads: int, folder: Path) -> None:
        self.index = self._new()
        self.index.add(np.arange(len(vectors)), vectors, threads=threads)

    def save(self, folder: Path) -> None:
        self.index.save(str(folder / "usearch.bin"))

    def load(self, folder: Path) -> None:
        self.index = self._new()
        if self.view:
            self.index.view(str(folder / "usearch.bin"))  # memory-mapped, pages read on demand
        else:
            self.index.load(str(folder / "usearch.bin"))

    def tune(self, value: int) -> None:
        self.index.expansion_search = value

    def search(self, query: np.ndarray, k: int) -> np.ndarray:
        return np.asarray(self.index.search(query, k, threads=1).keys, dtype=np.int64)

    def filtered(self, query: np.ndarray, k: int, allowed: Allowed) -> np.ndarray:
        return post_filter(self.search, query, k, allowed, limit=4096)

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        self.index.add(ids, vectors, threads=2)

    def remove(self, ids: np.ndarray) -> bool:
        self.index.remove(ids)
        return True

    def replace(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        self.index.add(ids, vectors, threads=2)


class FaissHNSW:
    name = "faiss-hnsw"
    sweep = [16, 32, 64, 128, 256, 512, 1024, 2048]
    native_filter = True  # IDSelectorBitmap, checked in C++

    def __init__(self, M: int = 16, ef_construction: int = 200, **_: Any) -> None:
        import faiss

        self.faiss = faiss
        self.M, self.ef_construction = M, ef_construction
        self.index: Any = None
        self.ef = 16

    def build(self, vectors: np.ndarray, threads: int, folder: Path) -> None:
        self.faiss.omp_set_num_threads(threads)
        self.index = self.faiss.IndexHNSWFlat(384, self.M, self.faiss.METRIC_INNER_PRODUCT)
        self.index.hnsw.efConstruction = self.ef_construction
        self.index.add(np.ascontiguousarray(vectors))
        self.faiss.omp_set_num_threads(1)

    def save(self, folder: Path) -> None:
        self.faiss.write_index(self.index, str(folder / "faiss.index"))

    def load(self, folder: Path) -> None:
        self.faiss.omp_set_num_threads(1)
        self.index = self.faiss.read_index(str(folder / "faiss.index"))

    def tune(self, value: int) -> None:
        self.ef = value

    def _params(self, k: int, selector: Any = None) -> Any:
        return self.faiss.SearchParametersHNSW(efSearch=max(self.ef, k), sel=selector)

    def search(self, query: np.ndarray, k: int) -> np.ndarray:
        _, labels = self.index.search(query[None, :], k, params=self._params(k))
        return labels[0]

    def filtered(self, query: np.ndarray, k: int, allowed: Allowed) -> np.ndarray:
        if allowed.bitmap is None:
            allowed.bitmap = _bitmap(self.faiss, allowed.mask)
        _, labels = self.index.search(query[None, :], k, params=self._params(k, allowed.bitmap[0]))
        found = labels[0]
        return found[found >= 0]

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        assert ids[0] == self.index.ntotal
        self.faiss.omp_set_num_threads(2)
        self.index.add(np.ascontiguousarray(vectors))
        self.faiss.omp_set_num_threads(1)

    def remove(self, ids: np.ndarray) -> bool:
        return False  # IndexHNSW has no remove_ids: a delete means a rebuild

    def replace(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        raise NotImplementedError


def _bitmap(faiss: Any, mask: np.ndarray) -> tuple[Any, np.ndarray]:
    # The selector keeps a raw pointer: the packed bits travel with it so they stay alive.
    bits = np.packbits(mask, bitorder="little")
    return faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bits)), bits


class FaissIVF:
    """IVF-Flat (exact distances inside the probed lists) or IVF-PQ (compressed codes)."""

    name = "faiss-ivf"
    sweep = [4, 8, 16, 32, 64, 128]
    native_filter = True

    def __init__(self, nlist: int = 1024, pq: int = 0, **_: Any) -> None:
        import faiss

        self.faiss = faiss
        self.nlist, self.pq = nlist, pq
        self.index: Any = None
        self.nprobe = 8

    def build(self, vectors: np.ndarray, threads: int, folder: Path) -> None:
        faiss = self.faiss
        faiss.omp_set_num_threads(threads)
        quantizer = faiss.IndexFlatIP(384)
        if self.pq:
            self.index = faiss.IndexIVFPQ(
                quantizer, 384, self.nlist, self.pq, 8, faiss.METRIC_INNER_PRODUCT
            )
        else:
            self.index = faiss.IndexIVFFlat(quantizer, 384, self.nlist, faiss.METRIC_INNER_PRODUCT)
        rng = np.random.default_rng(1)
        sample = vectors[
            np.sort(rng.choice(len(vectors), min(len(vectors), self.nlist * 50), replace=False))
        ]
        self.index.train(np.ascontiguousarray(sample))
        self.index.add_with_ids(np.ascontiguousarray(vectors), np.arange(len(vectors)))
        self.index.quantizer_trains_alone = 0
        faiss.omp_set_num_threads(1)

    def save(self, folder: Path) -> None:
        self.faiss.write_index(self.index, str(folder / "faiss.index"))

    def load(self, folder: Path) -> None:
        self.faiss.omp_set_num_threads(1)
        self.index = self.faiss.read_index(str(folder / "faiss.index"))

    def tune(self, value: int) -> None:
        self.nprobe = value

    def search(self, query: np.ndarray, k: int) -> np.ndarray:
        params = self.faiss.SearchParametersIVF(nprobe=self.nprobe)
        _, labels = self.index.search(query[None, :], k, params=params)
        found = labels[0]
        return found[found >= 0]

    def filtered(self, query: np.ndarray, k: int, allowed: Allowed) -> np.ndarray:
        if allowed.bitmap is None:
            allowed.bitmap = _bitmap(self.faiss, allowed.mask)
        params = self.faiss.SearchParametersIVF(nprobe=self.nprobe, sel=allowed.bitmap[0])
        _, labels = self.index.search(query[None, :], k, params=params)
        found = labels[0]
        return found[found >= 0]

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        self.faiss.omp_set_num_threads(2)
        self.index.add_with_ids(np.ascontiguousarray(vectors), ids.astype(np.int64))
        self.faiss.omp_set_num_threads(1)

    def remove(self, ids: np.ndarray) -> bool:
        self.index.remove_ids(self.faiss.IDSelectorBatch(ids.astype(np.int64)))
        return True

    def replace(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        self.add(ids, vectors)


CANDIDATES: dict[str, type] = {
    c.name: c for c in (Exact, SqliteVec, Hnswlib, USearch, FaissHNSW, FaissIVF)
}


def make(name: str, params: dict[str, Any]) -> Any:
    return CANDIDATES[name](**params)


def label(name: str, params: dict[str, Any]) -> str:
    if not params:
        return name
    return name + "(" + ",".join(f"{k}={v}" for k, v in params.items()) + ")"


def file_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
