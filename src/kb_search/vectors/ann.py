"""Approximate nearest neighbours (usearch HNSW) for large vector tables.

The graph lives next to the DB, `<db>.ann/<vector table>.*`, and is stamped with what it
covers: the table, the model, the graph parameters, a cheap signature of the DB's state (vector
count, chunk count, largest chunk id, newest document time) and, per indexed chunk, its id and a
64-bit hash of its content hash. Chunk ids are reused when a document is re-added, so ids alone
could not tell a changed vector from an unchanged one. On open and before each search the
signature is compared; when it differs, the per-chunk keys are diffed against the DB and only
new, changed and deleted chunks are applied to the graph (a full rebuild only when there is no
usable file). A one-shot process memory-maps the file (`view`): opening costs milliseconds.

Writing is atomic: the graph and its keys go to files named for a fresh generation, then the
stamp (the commit point) is replaced in one `os.replace`; a crash before that leaves the old
stamp pointing at the old, complete files.

Filters: a filter that allows few chunks is searched exactly over those chunks' vectors (taken
from the graph's own storage); a broad one over-fetches from the graph, drops what it does not
allow and widens until k results survive, then falls back to exact. Parameters (M 16,
ef_construction 200, ef 512) come from `bench/ann.py`; `docs/scale.md` has the numbers.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kb_search.store.db import Connection, data_version, database_file, read_snapshot
from kb_search.store.inventory import chunk_hashes, chunk_state
from kb_search.store.vectors import (
    VectorTable,
    count_vectors_quickly,
    fetch_vectors,
    vector_ids,
)
from kb_search.vectors.index import Hits, ordered, top_k

FORMAT = 1
CONNECTIVITY = 16  # M: links per node
EXPANSION_ADD = 200  # ef_construction
# ef, the search breadth, grows with the index: at a fixed ef recall falls as the graph grows
# (generated 384-d, M 16: ef 512 gives R@10 0.987 at 100k, 0.975 at 300k, 0.937 at 1M, where
# ef 1024 gives 0.963 and ef 2048 0.977 at 13.9 ms; bench/ann.py, docs/scale.md). So it
# doubles with every doubling past 300k chunks, up to a cap; raised to k and to any over-fetch.
EXPANSION_SEARCH = 512
EXPANSION_FROM = 300_000
EXPANSION_MAX = 4096
MAX_OVERFETCH = 16_384  # the widest graph search made to satisfy a filter (ef = this)
EXACT_SHARE = 0.02  # a filter allowing at most this share of the chunks is searched exactly
BUILD_BATCH = 50_000  # vectors read from the vec0 table per step of a build

Note = Callable[[str], None]


def ann_available() -> str | None:
    """None when usearch imports, else why not (the `ann` extra is not installed)."""
    try:
        _usearch_index()
    except ImportError as exc:
        return f"usearch is not installed ({exc}): pip install 'kb-search[ann]'"
    return None


def ann_folder(db_file: Path) -> Path:
    return db_file.with_name(db_file.name + ".ann")


def signature(conn: Connection, table: VectorTable) -> list:
    """Cheap to read, and changes whenever a vector or a chunk is written or deleted."""
    return [count_vectors_quickly(conn, table.name), *chunk_state(conn)]


@dataclass
class Stamp:
    """What a saved graph covers; the stamp file is the commit point of a save."""

    table: str
    model: str
    dim: int
    connectivity: int
    expansion_add: int
    signature: list
    count: int
    graph_file: str
    keys_file: str
    saved_at: float
    format: int = FORMAT

    def matches(self, table: VectorTable) -> bool:
        return (
            self.format == FORMAT
            and (self.table, self.model, self.dim) == (table.name, table.model, table.dim)
            and (self.connectivity, self.expansion_add) == (CONNECTIVITY, EXPANSION_ADD)
        )


@dataclass
class AnnState:
    """What `kb doctor` reports about a table's saved graph."""

    path: str | None
    state: str  # missing | fresh | stale | unreadable | other-parameters | in-memory
    count: int | None = None
    detail: str = ""


@dataclass
class Changes:
    added: int = 0
    removed: int = 0
    rebuilt: bool = False
    saved: bool = False


@dataclass
class AnnIndex:
    """usearch HNSW over one vec0 table, kept in step with the DB (see the module docs)."""

    table: VectorTable
    folder: Path | None
    graph: Any
    keys: np.ndarray  # int64 chunk ids, sorted
    hashes: np.ndarray  # uint64 content-hash digests, aligned with keys
    stamp_signature: list | None = None
    exact_share: float = EXACT_SHARE
    note: Note | None = None
    last_changes: Changes = field(default_factory=Changes)
    lock: threading.Lock = field(default_factory=threading.Lock)
    seen: threading.local = field(default_factory=threading.local)

    # ---- opening -----------------------------------------------------------------------------

    @classmethod
    def open(cls, conn: Connection, table: VectorTable, note: Note | None = None) -> AnnIndex:
        """The saved graph (memory-mapped) brought up to date, or a new one built and saved."""
        db_file = database_file(conn)
        folder = ann_folder(db_file) if db_file is not None else None
        index = cls(table, folder, None, _empty_ids(), _empty_hashes(), note=note)
        index._load_saved()
        index.refresh(conn, save=True)
        return index

    def _load_saved(self) -> None:
        stamp = read_stamp(self.folder, self.table) if self.folder else None
        if stamp is None or not stamp.matches(self.table):
            return
        try:
            graph = _restore(self.folder / stamp.graph_file, view=True)
            with np.load(self.folder / stamp.keys_file) as saved:
                keys, hashes = saved["keys"], saved["hashes"]
        except (OSError, ValueError, KeyError, RuntimeError):
            return  # unreadable or half-deleted: rebuilt below
        if len(graph) != len(keys) or len(keys) != stamp.count:
            return
        self.graph, self.keys, self.hashes = graph, keys, hashes
        self.stamp_signature = stamp.signature

    def __len__(self) -> int:
        return len(self.keys)

    # ---- keeping up with the DB --------------------------------------------------------------

    def refresh(self, conn: Connection, save: bool = False) -> Changes:
        """Apply what changed in the DB since the graph was made; `save` writes it back."""
        version = data_version(conn)
        if getattr(self.seen, "version", None) == (id(conn), version) and self.graph is not None:
            return Changes()
        # one snapshot for the signature, the keys and the vectors
        with self.lock, read_snapshot(conn):
            current = signature(conn, self.table)
            if current == self.stamp_signature and self.graph is not None:
                changes = Changes()
            else:
                changes = self._catch_up(conn)
                self.stamp_signature = current
            self.seen.version = (id(conn), version)
            if save and (changes.added or changes.removed or changes.rebuilt):
                changes.saved = self.save()
            self.last_changes = changes
            return changes

    def _catch_up(self, conn: Connection) -> Changes:
        ids, hashes = chunk_keys(conn)
        embedded = np.isin(ids, np.array(vector_ids(conn, self.table.name), dtype=np.int64))
        ids, hashes = ids[embedded], hashes[embedded]  # a chunk without a vector is not indexed
        if self.graph is None:
            return self._build(conn, ids, hashes)
        gone = ~np.isin(self.keys, ids)
        stored = np.isin(ids, self.keys)
        # a kept id whose content hash changed: its vector changed (ids are reused)
        positions = np.searchsorted(self.keys, ids[stored])
        changed = ids[stored][self.hashes[positions] != hashes[stored]]
        remove = np.concatenate([self.keys[gone], changed])
        add = np.concatenate([ids[~stored], changed])
        self._writable()
        if len(remove):
            self.graph.remove(remove.astype(np.uint64))
        added_ids, vectors = fetch_vectors(conn, self.table.name, add.tolist())
        if added_ids:
            self.graph.add(np.array(added_ids, dtype=np.uint64), vectors, threads=0)
        self._set_keys(ids, hashes, np.array(added_ids, dtype=np.int64), remove)
        return Changes(added=len(added_ids), removed=len(remove))

    def _build(self, conn: Connection, ids: np.ndarray, hashes: np.ndarray) -> Changes:
        started = time.perf_counter()
        if self.note and len(ids) > BUILD_BATCH:
            self.note(
                f"building the approximate vector index for {len(ids):,} chunks"
                f" (once; it is kept in {self.folder or 'memory'})"
            )
        self.graph = _new_graph(self.table.dim)
        indexed: list[np.ndarray] = []
        for start in range(0, len(ids), BUILD_BATCH):
            batch = ids[start : start + BUILD_BATCH].tolist()
            got, vectors = fetch_vectors(conn, self.table.name, batch)
            if got:
                self.graph.add(np.array(got, dtype=np.uint64), vectors, threads=0)
                indexed.append(np.array(got, dtype=np.int64))
        self.keys = np.concatenate(indexed) if indexed else _empty_ids()
        self.keys.sort()
        self.hashes = hashes[np.searchsorted(ids, self.keys)] if len(self.keys) else _empty_hashes()
        if self.note and len(ids) > BUILD_BATCH:
            self.note(f"approximate vector index built in {time.perf_counter() - started:.0f} s")
        return Changes(added=len(self.keys), rebuilt=True)

    def _set_keys(
        self, ids: np.ndarray, hashes: np.ndarray, added: np.ndarray, removed: np.ndarray
    ) -> None:
        keep = self.keys[~np.isin(self.keys, removed)]
        keys = np.union1d(keep, added)  # sorted
        self.keys = keys[np.isin(keys, ids)]
        self.hashes = hashes[np.searchsorted(ids, self.keys)]

    def _writable(self) -> None:
        """A memory-mapped graph is read-only: load it into memory before changing it."""
        if getattr(self.graph, "_kb_view", False):
            # copied from the mapping, not reloaded: another process may have replaced the file
            self.graph = self.graph.copy()
            self.graph._kb_view = False

    # ---- saving ------------------------------------------------------------------------------

    def save(self) -> bool:
        """Write graph + keys under a new generation, then the stamp; False when the folder
        cannot be written (a read-only copy): the graph then serves this process only."""
        if self.folder is None or self.stamp_signature is None:
            return False
        generation = f"{int(time.time())}-{uuid.uuid4().hex[:8]}"
        base = self.table.name
        graph_file, keys_file = f"{base}.{generation}.usearch", f"{base}.{generation}.keys.npz"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with _folder_lock(self.folder, base):
                self.graph.save(str(self.folder / graph_file))
                _fsync(self.folder / graph_file)
                with open(self.folder / keys_file, "wb") as fh:
                    np.savez(fh, keys=self.keys, hashes=self.hashes)
                    fh.flush()
                    os.fsync(fh.fileno())
                stamp = Stamp(
                    table=base,
                    model=self.table.model,
                    dim=self.table.dim,
                    connectivity=CONNECTIVITY,
                    expansion_add=EXPANSION_ADD,
                    signature=self.stamp_signature,
                    count=len(self.keys),
                    graph_file=graph_file,
                    keys_file=keys_file,
                    saved_at=time.time(),
                )
                write_stamp(self.folder, stamp)
                _remove_unreferenced(self.folder, base, {graph_file, keys_file})
        except (OSError, RuntimeError):  # read-only folder, disk full
            for name in (graph_file, keys_file):
                (self.folder / name).unlink(missing_ok=True)
            return False
        return True

    # ---- searching ---------------------------------------------------------------------------

    def nearest(
        self, conn: Connection, vector: np.ndarray, k: int, allowed: set[int] | None
    ) -> Hits:
        self.refresh(conn)
        if k < 1 or not len(self.keys):
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if allowed is None:
            return self._graph_search(query, k, None, k)
        if not allowed:
            return []
        share = len(allowed) / len(self.keys)
        wanted = math.ceil(2 * k / share)
        if wanted > MAX_OVERFETCH or share <= self.exact_share:
            return self._exact(query, k, allowed)
        return self._graph_search(query, k, allowed, wanted)

    def _graph_search(
        self, query: np.ndarray, k: int, allowed: set[int] | None, count: int
    ) -> Hits:
        while True:
            count = min(count, len(self.keys))
            self.graph.expansion_search = max(search_expansion(len(self.keys)), count)
            matches = self.graph.search(query, count, threads=1)
            keys = np.asarray(matches.keys, dtype=np.int64)
            sims = 1.0 - np.asarray(matches.distances, dtype=np.float64)
            if allowed is not None:
                keep = np.fromiter((int(c) in allowed for c in keys), dtype=bool, count=len(keys))
                keys, sims = keys[keep], sims[keep]
            if len(keys) >= k or allowed is None:
                return ordered(keys.tolist(), np.clip(sims, 0.0, 1.0), k)
            # Asked for every vector and still short: an HNSW graph need not reach every node,
            # so a filtered search that widened this far is answered exactly.
            if count >= len(self.keys) or count * 2 > MAX_OVERFETCH:
                return self._exact(query, k, allowed)
            count *= 2

    def _exact(self, query: np.ndarray, k: int, allowed: set[int]) -> Hits:
        """Exact cosine over the allowed chunks, their vectors read from the graph."""
        wanted = np.fromiter(allowed, dtype=np.int64, count=len(allowed))
        wanted = wanted[np.isin(wanted, self.keys)]
        if not len(wanted):
            return []
        matrix = np.asarray(self.graph.get(wanted.astype(np.uint64)), dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1) * max(float(np.linalg.norm(query)), 1e-12)
        return top_k(wanted, (matrix @ query) / np.maximum(norms, 1e-12), k)


def search_expansion(size: int) -> int:
    """The ef for an index of `size` vectors: 512 up to 300k, doubled for every doubling
    beyond (1M: 2048), at most 4096."""
    ef = EXPANSION_SEARCH
    while ef < EXPANSION_MAX and size > EXPANSION_FROM * ef // EXPANSION_SEARCH:
        ef *= 2
    return ef


def chunk_keys(conn: Connection) -> tuple[np.ndarray, np.ndarray]:
    """Every chunk id (sorted) and a 64-bit digest of its content hash, which decides its
    vector."""
    rows = chunk_hashes(conn)
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    hashes = np.fromiter((_digest(r[1]) for r in rows), dtype=np.uint64, count=len(rows))
    return ids, hashes


def _digest(content_hash: str) -> int:
    try:
        return int(content_hash[:16], 16)
    except ValueError:  # not hex: hash it
        import hashlib

        return int.from_bytes(hashlib.blake2b(content_hash.encode(), digest_size=8).digest())


# ---- files -----------------------------------------------------------------------------------


def stamp_path(folder: Path, table: str) -> Path:
    return folder / f"{table}.json"


def read_stamp(folder: Path, table: VectorTable) -> Stamp | None:
    try:
        data = json.loads(stamp_path(folder, table.name).read_text(encoding="utf-8"))
        return Stamp(**data)
    except (OSError, ValueError, TypeError):
        return None


def write_stamp(folder: Path, stamp: Stamp) -> None:
    final = stamp_path(folder, stamp.table)
    temporary = final.with_name(f".{final.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8") as fh:
            json.dump(asdict(stamp), fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temporary, final)
    finally:
        temporary.unlink(missing_ok=True)


def ann_state(conn: Connection, table: VectorTable) -> AnnState:
    """The saved graph of this table as `kb doctor` reports it (reads the stamp only)."""
    db_file = database_file(conn)
    if db_file is None:
        return AnnState(None, "in-memory")
    folder = ann_folder(db_file)
    path = str(stamp_path(folder, table.name))
    if not stamp_path(folder, table.name).exists():
        return AnnState(path, "missing")
    stamp = read_stamp(folder, table)
    if stamp is None or not (folder / stamp.graph_file).exists():
        return AnnState(path, "unreadable", detail="rebuilt on next use")
    if not stamp.matches(table):
        return AnnState(path, "other-parameters", stamp.count, "rebuilt on next use")
    if stamp.signature != signature(conn, table):
        return AnnState(path, "stale", stamp.count, "updated incrementally on next use")
    return AnnState(path, "fresh", stamp.count)


def _remove_unreferenced(folder: Path, table: str, keep: set[str]) -> None:
    """Best effort, never raises: the new stamp is already in place (a file another process
    still maps cannot be deleted on Windows; the next save tries again)."""
    for path in folder.glob(f"{table}.*"):
        if path.name not in keep and path.suffix in (".usearch", ".npz"):
            try:
                path.unlink(missing_ok=True)
            except OSError:
                pass


class _folder_lock:
    """One writer of a table's files at a time (two one-shot searches may both catch up)."""

    def __init__(self, folder: Path, table: str) -> None:
        self.path = folder / f".{table}.lock"
        self.fh: Any = None

    def __enter__(self) -> None:
        self.fh = open(self.path, "a+")
        try:
            import fcntl

            fcntl.flock(self.fh, fcntl.LOCK_EX)
        except ImportError:  # Windows: no flock; generations still never overwrite a file
            pass

    def __exit__(self, *exc: object) -> None:
        self.fh.close()  # closing releases the lock


def _fsync(path: Path) -> None:
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


def _new_graph(dim: int) -> Any:
    Index = _usearch_index()
    return Index(
        ndim=dim,
        metric="cos",
        dtype="f32",
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
        expansion_search=EXPANSION_SEARCH,
    )


def _restore(path: Path, view: bool) -> Any:
    graph = _usearch_index().restore(str(path), view=view)
    if graph is None:
        raise ValueError(f"not a usearch index: {path}")
    graph._kb_view, graph._kb_path = view, str(path)
    return graph


def _usearch_index() -> Any:
    """usearch's Index class, with onnxruntime imported first when it is installed: usearch
    (its numkong kernels) loaded before onnxruntime made creating an ONNX Runtime session
    segfault here (onnxruntime 1.32, usearch 2.26, numkong 7.8), e.g. a process that opened the
    ANN index before it loaded the model."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        pass
    from usearch.index import Index

    return Index


def _empty_ids() -> np.ndarray:
    return np.zeros(0, dtype=np.int64)


def _empty_hashes() -> np.ndarray:
    return np.zeros(0, dtype=np.uint64)
