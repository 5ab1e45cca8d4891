"""sqlite-vec's exact KNN: straight from the table (nothing to load, right for one-shot CLI
calls), or shortlisted from memory for a process that answers as one-shot calls do.

Both ask for `TIE_MARGIN` more neighbours than wanted and cut with `index.ordered`, so chunks
tied at the k-th distance (duplicate chunks) are chosen by chunk id, not by scan order: the
two give the same hits, scored by sqlite-vec's own distance function, to the last digit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from kb_search.store.db import Connection, database_file
from kb_search.store.vectors import MAX_KNN, VectorTable, cosine_distances, knn, to_blob
from kb_search.vectors.index import Hits, Note, exact_subset, ordered, similarities

if TYPE_CHECKING:
    from kb_search.vectors.matrix import LiveMatrixIndex

TIE_MARGIN = 16


@dataclass
class SqliteVecIndex:
    table: VectorTable

    @classmethod
    def open(cls, conn: Connection, table: VectorTable, note: Note | None = None) -> SqliteVecIndex:
        return cls(table)

    def nearest(
        self, conn: Connection, vector: np.ndarray, k: int, allowed: set[int] | None
    ) -> Hits:
        if allowed is not None:
            return exact_subset(conn, self.table.name, vector, k, allowed)
        rows = knn(conn, self.table.name, vector, min(k + TIE_MARGIN, MAX_KNN))
        return _ordered_rows(rows, k)


@dataclass
class ShortlistIndex:
    """The warm server's index: a live in-memory matrix shortlists twice the neighbours
    wanted (float32 dot products), then sqlite-vec's `vec_distance_cosine` scores the
    shortlist, giving exactly the distances its KNN gives (~4 ms instead of ~27 at 27k
    chunks). The shortlist's margin covers the last-bit differences between the two.

    Until the matrix is loaded (`live` None), sqlite-vec's KNN answers: the same hits."""

    table: VectorTable
    live: LiveMatrixIndex | None = None
    loaded: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def open(cls, conn: Connection, table: VectorTable) -> ShortlistIndex:
        from kb_search.vectors.matrix import LiveMatrixIndex

        index = cls(table, LiveMatrixIndex.open(conn, table))
        index.loaded.set()
        return index

    @classmethod
    def open_loading(
        cls, conn: Connection, table: VectorTable, note: Callable[[str], None] | None = None
    ) -> ShortlistIndex:
        """At once, the matrix loading on a thread of its own: vec0 gives its rows up slowly
        (~1 s at 27k vectors), and the warm server should not make its first clients wait
        for what only makes their answers faster."""
        path = database_file(conn)
        if not path:  # an in-memory database: no second connection can see it
            return cls.open(conn, table)
        index = cls(table)
        threading.Thread(
            target=index._load, args=(path, note), name="shortlist-load", daemon=True
        ).start()
        return index

    @property
    def in_memory(self) -> bool:
        """The matrix is loaded (False while it loads, or when loading failed)."""
        return self.live is not None

    def _load(self, path: Path, note: Callable[[str], None] | None) -> None:
        from kb_search.store import db
        from kb_search.vectors.matrix import LiveMatrixIndex

        try:
            conn = db.connect(path, readonly=True)
            try:
                self.live = LiveMatrixIndex.open(conn, self.table)
            finally:
                conn.close()
        except Exception as exc:  # noqa: BLE001 - the KNN keeps answering, only slower
            if note is not None:
                note(f"vectors stay on sqlite-vec's KNN: loading them failed ({exc})")
        finally:
            self.loaded.set()

    def nearest(
        self, conn: Connection, vector: np.ndarray, k: int, allowed: set[int] | None
    ) -> Hits:
        if allowed is not None:
            return exact_subset(conn, self.table.name, vector, k, allowed)
        if self.live is None:
            return SqliteVecIndex(self.table).nearest(conn, vector, k, None)
        self.live.refresh(conn)
        index = self.live.index  # one snapshot: a refresh may replace it meanwhile
        if index is None or not len(index):
            return []
        wanted = min(k + TIE_MARGIN, MAX_KNN)
        sims = index.matrix @ np.asarray(vector, dtype=np.float32)
        take = min(len(sims), 2 * wanted)
        rows = np.argpartition(-sims, take - 1)[:take] if take < len(sims) else range(len(sims))
        scored = _sqlite_vec_distances(conn, vector, index.ids, index.matrix, rows)
        scored.sort(key=lambda row: row[1])  # nearest first, as the KNN returns them
        return _ordered_rows(scored[:wanted], k)


def _sqlite_vec_distances(
    conn: Connection, vector: np.ndarray, ids: np.ndarray, matrix: np.ndarray, rows
) -> list[tuple[int, float]]:
    return cosine_distances(
        conn, to_blob(vector), [(int(ids[row]), matrix[row].tobytes()) for row in rows]
    )


def _ordered_rows(rows: list[tuple[int, float]], k: int) -> Hits:
    if not rows:
        return []
    distances = np.array([r[1] for r in rows], dtype=np.float64)
    return ordered([r[0] for r in rows], similarities(distances), k)
