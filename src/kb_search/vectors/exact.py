"""sqlite-vec KNN straight from the table: nothing to load, right for one-shot CLI calls."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kb_search.store.db import Connection
from kb_search.vectors.index import Hits, exact_subset, ordered, similarities
from kb_search.vectors.tables import VectorTable, knn


@dataclass
class SqliteVecIndex:
    table: VectorTable

    @classmethod
    def open(cls, conn: Connection, table: VectorTable) -> SqliteVecIndex:
        return cls(table)

    def nearest(
        self, conn: Connection, vector: np.ndarray, k: int, allowed: set[int] | None
    ) -> Hits:
        if allowed is not None:
            return exact_subset(conn, self.table.name, vector, k, allowed)
        rows = knn(conn, self.table.name, vector, k)
        if not rows:
            return []
        distances = np.array([r[1] for r in rows], dtype=np.float64)
        return ordered([r[0] for r in rows], similarities(distances), k)
