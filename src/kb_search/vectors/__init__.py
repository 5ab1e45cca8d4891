"""Vectors: the tables (`tables`), the model binding (`model`), the indexes that search them
(`exact`, `matrix`), embedding new chunks (`writer`) and `reindex`.

An index backend is one class with `open(conn, table)` and `nearest(...)` (see
`index.VectorIndex`), listed in BACKENDS under the name the `vectors.index` setting uses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kb_search.store.db import Connection
    from kb_search.vectors.index import VectorIndex
    from kb_search.vectors.tables import VectorTable


def _sqlite_vec() -> Callable:
    from kb_search.vectors.exact import SqliteVecIndex

    return SqliteVecIndex.open


def _matrix() -> Callable:
    from kb_search.vectors.matrix import MatrixIndex

    return MatrixIndex.open


def _live_matrix() -> Callable:
    from kb_search.vectors.matrix import LiveMatrixIndex

    return LiveMatrixIndex.open


# name -> a function returning the backend's `open(conn, table)`; imported on first use.
BACKENDS: dict[str, Callable[[], Callable[[Connection, VectorTable], VectorIndex]]] = {
    "sqlite-vec": _sqlite_vec,
    "matrix": _matrix,
    "live-matrix": _live_matrix,
}


def open_index(conn: Connection, table: VectorTable, backend: str) -> VectorIndex:
    from kb_search.errors import ConfigError

    if backend not in BACKENDS:
        raise ConfigError(
            f"unknown vector index {backend!r}: use one of {', '.join(sorted(BACKENDS))}"
        )
    return BACKENDS[backend]()(conn, table)
