"""Vectors: the model binding (`model`) and the models a process has loaded (`loaded`), the
indexes that search them (`exact`, `matrix`, `ann`), embedding new chunks (`writer`) and
`reindex`; their SQL is `store/vectors.py`.

An index backend is one class with `open(conn, table)` and `nearest(...)` (see
`index.VectorIndex`), listed in BACKENDS under the name the `vectors.index` setting uses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kb_search.profile import Profile
    from kb_search.store.db import Connection
    from kb_search.store.vectors import VectorTable
    from kb_search.vectors.index import VectorIndex


def _sqlite_vec() -> Callable:
    from kb_search.vectors.exact import SqliteVecIndex

    return SqliteVecIndex.open


def _shortlist() -> Callable:
    from kb_search.vectors.exact import ShortlistIndex

    return ShortlistIndex.open_loading


def _matrix() -> Callable:
    from kb_search.vectors.matrix import MatrixIndex

    return MatrixIndex.open


def _live_matrix() -> Callable:
    from kb_search.vectors.matrix import LiveMatrixIndex

    return LiveMatrixIndex.open


def _ann() -> Callable:
    from kb_search.vectors.ann import AnnIndex

    return AnnIndex.open


# name -> a function returning the backend's `open(conn, table)`; imported on first use.
BACKENDS: dict[str, Callable[[], Callable[[Connection, VectorTable], VectorIndex]]] = {
    "sqlite-vec": _sqlite_vec,
    # sqlite-vec's answers from memory: what the warm server uses where a one-shot call
    # would use sqlite-vec (Profile.WARM)
    "sqlite-vec-shortlist": _shortlist,
    "matrix": _matrix,
    "live-matrix": _live_matrix,
    "ann": _ann,
}
# backends whose `open` also takes `note` (a one-line message for the user, e.g. "building")
TAKES_NOTE = {"ann", "sqlite-vec-shortlist"}


def choose_backend(
    conn: Connection,
    setting: str,
    profile: Profile,
    ann_min_chunks: int,
) -> str:
    """`vectors.index`: a named backend, or `auto`: the approximate index from
    `ann_min_chunks` chunks on (0: never) when usearch is installed, else exact search
    (sqlite-vec in a one-shot call, the live matrix in `kb serve`). The warm server gets
    sqlite-vec's answers, shortlisted from memory, wherever a one-shot call would use
    sqlite-vec."""
    backend = setting
    if setting == "auto":
        backend = "live-matrix" if profile.keeps_models else "sqlite-vec"
        if ann_min_chunks > 0:
            from kb_search.store.inventory import chunk_count

            if chunk_count(conn) >= ann_min_chunks:
                from kb_search.vectors.ann import ann_available

                if ann_available() is None:
                    backend = "ann"
    if profile.answers_as_one_shot and backend == "sqlite-vec":
        return "sqlite-vec-shortlist"
    return backend


def open_index(
    conn: Connection,
    table: VectorTable,
    backend: str,
    note: Callable[[str], None] | None = None,
) -> VectorIndex:
    from kb_search.errors import ConfigError

    if backend not in BACKENDS:
        raise ConfigError(
            f"unknown vector index {backend!r}: use one of {', '.join(sorted(BACKENDS))}"
        )
    if backend == "ann":
        from kb_search.vectors.ann import ann_available

        missing = ann_available()
        if missing is not None:
            raise ConfigError(f"vectors.index is ann but {missing}")
    opener = BACKENDS[backend]()
    if backend in TAKES_NOTE:
        return opener(conn, table, note=note)
    return opener(conn, table)
