"""Vectors: a DB's binding to its embedding model (`binding`), the indexes that search its
vectors (`exact`, `matrix`, `ann`), embedding new chunks (`writer`) and `reindex`; their SQL is
`store/vectors.py`. Which model, and loading it, is `models/`.

An index backend is one class with `open(conn, table)` and `nearest(...)` (see
`index.VectorIndex`), listed in BACKENDS under the name the `vectors.index` setting uses;
every backend's `open` takes `note` (a one-line message for the user), used or not. The
snapshot `matrix.MatrixIndex` is not a choice of its own: `live-matrix` keeps one in step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kb_search.errors import ConfigError
from kb_search.registry import Registry

if TYPE_CHECKING:
    from kb_search.profile import Profile
    from kb_search.store.db import Connection
    from kb_search.store.vectors import VectorTable
    from kb_search.vectors.index import IndexOpener, VectorIndex

# name -> the backend's `open` (one signature: `index.IndexOpener`), imported on first use.
BACKENDS: Registry[IndexOpener] = Registry(
    "vector index",
    {
        "sqlite-vec": "kb_search.vectors.exact:SqliteVecIndex.open",
        "live-matrix": "kb_search.vectors.matrix:LiveMatrixIndex.open",
        "ann": "kb_search.vectors.ann:AnnIndex.open",
    },
    ConfigError,
)

# sqlite-vec's answers from memory: what the warm server opens where a one-shot call opens
# sqlite-vec (Profile.WARM). Not a name a user chooses: `sqlite-vec` gets it there.
WARM_SQLITE_VEC = "sqlite-vec-shortlist"


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
    if setting == WARM_SQLITE_VEC:
        BACKENDS.where(setting)  # not a user's choice: the error lists the backends
    if setting == "auto":
        backend = "live-matrix" if profile.keeps_models else "sqlite-vec"
        if ann_min_chunks > 0:
            from kb_search.store.inventory import chunk_count

            if chunk_count(conn) >= ann_min_chunks:
                from kb_search.vectors.ann import ann_available

                if ann_available() is None:
                    backend = "ann"
    if profile.answers_as_one_shot and backend == "sqlite-vec":
        return WARM_SQLITE_VEC
    return backend


def open_index(
    conn: Connection,
    table: VectorTable,
    backend: str,
    note: Callable[[str], None] | None = None,
) -> VectorIndex:
    if backend == WARM_SQLITE_VEC:
        from kb_search.vectors.exact import ShortlistIndex

        return ShortlistIndex.open_loading(conn, table, note=note)
    BACKENDS.where(backend)  # an unknown name: the error lists the backends
    if backend == "ann":
        from kb_search.vectors.ann import ann_available

        missing = ann_available()
        if missing is not None:
            raise ConfigError(f"vectors.index is ann but {missing}")
    return BACKENDS.load(backend)(conn, table, note=note)
