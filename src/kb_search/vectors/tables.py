"""Vector storage (one sqlite-vec `vec0` table per model) and nearest-neighbour search."""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kb_search.models import ParsedDocument
from kb_search.store.db import (
    Connection,
    DBError,
    get_meta,
    load_vec_extension,
    set_meta,
    transaction,
)
from kb_search.store.documents import content_hash, embedding_text


def table_name_for(model: str) -> str:
    """`vec_<slug>_<hash>`: readable, and two models can never share a table."""
    slug = re.sub(r"[^a-z0-9]+", "_", model.rsplit("/", 1)[-1].lower()).strip("_")[:32]
    digest = hashlib.blake2b(model.encode(), digest_size=4).hexdigest()
    return f"vec_{slug}_{digest}"


def to_blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def require_extension(conn: Connection) -> None:
    problem = load_vec_extension(conn)
    if problem is not None:
        raise DBError(f"the sqlite-vec extension does not load ({problem}): vectors unavailable")


def vector_table(conn: Connection, model: str) -> tuple[str, int] | None:
    row = conn.execute(
        "SELECT table_name, dim FROM vector_tables WHERE model = ?", (model,)
    ).fetchone()
    return (row[0], row[1]) if row else None


def ensure_vector_table(conn: Connection, model: str, dim: int) -> str:
    """Create the model's vec0 table if needed (recreated when the dimension changed)."""
    require_extension(conn)
    with transaction(conn):
        existing = vector_table(conn, model)
        table = existing[0] if existing else table_name_for(model)
        if existing and existing[1] != dim:
            conn.execute(f"DROP TABLE IF EXISTS {existing[0]}")
            conn.execute("DELETE FROM vector_tables WHERE model = ?", (model,))
            existing, table = None, table_name_for(model)
        if existing is None:
            conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0("
                f"embedding float[{dim}] distance_metric=cosine)"
            )
            conn.execute(
                "INSERT INTO vector_tables(model, table_name, dim, created_at) VALUES (?,?,?,?)",
                (model, table, dim, time.time()),
            )
    return table


def set_db_model(conn: Connection, embedder: Any, in_transaction: bool = False) -> None:
    """Record the model this DB's vectors come from (name, dimension, max tokens)."""
    if not in_transaction:
        with transaction(conn):
            set_db_model(conn, embedder, in_transaction=True)
        return
    set_meta(conn, "model_name", embedder.name)
    set_meta(conn, "embedding_dim", str(embedder.dim))
    set_meta(conn, "model_max_tokens", str(embedder.max_tokens))


def drop_other_tables(conn: Connection, keep_model: str) -> list[str]:
    """After a model switch has finished, drop the vectors of every other model."""
    dropped = []
    with transaction(conn):
        for model, table in conn.execute("SELECT model, table_name FROM vector_tables").fetchall():
            if model != keep_model:
                conn.execute(f"DROP TABLE IF EXISTS {table}")
                conn.execute("DELETE FROM vector_tables WHERE model = ?", (model,))
                dropped.append(model)
    return dropped


def db_model(conn: Connection) -> str | None:
    return get_meta(conn, "model_name")


def missing_chunk_ids(conn: Connection, table: str) -> list[int]:
    """Chunks with no vector in `table` (what a resumed reindex still has to embed)."""
    return [
        r[0]
        for r in conn.execute(
            f"SELECT id FROM chunks WHERE id NOT IN (SELECT rowid FROM {table}) ORDER BY id"
        )
    ]


def vectors_by_hash(conn: Connection, table: str, hashes: list[str]) -> dict[str, bytes]:
    """Stored vectors for chunks with these content hashes (re-embedding only what changed)."""
    found: dict[str, bytes] = {}
    for start in range(0, len(hashes), 500):
        part = hashes[start : start + 500]
        marks = ",".join("?" * len(part))
        for digest, blob in conn.execute(
            f"SELECT c.content_hash, v.embedding FROM chunks c JOIN {table} v ON v.rowid = c.id"
            f" WHERE c.content_hash IN ({marks})",
            part,
        ):
            found.setdefault(digest, blob)
    return found


def _scores(distances: np.ndarray) -> np.ndarray:
    # cosine distance -> similarity, clipped into [0, 1] for the JSON contract
    return np.clip(1.0 - distances, 0.0, 1.0)


@dataclass
class SqliteVecIndex:
    """Queries the vec0 table directly: nothing to load, best for one-shot CLI calls."""

    table: str
    dim: int

    def nearest(
        self, conn: Connection, vector: np.ndarray, k: int, allowed: set[int] | None
    ) -> list[tuple[int, float]]:
        if allowed is not None:
            return _brute_force_subset(conn, self.table, vector, k, allowed)
        rows = conn.execute(
            f"SELECT rowid, distance FROM {self.table} WHERE embedding MATCH ? AND k = ?"
            " ORDER BY distance",
            (to_blob(vector), min(k, 4096)),
        ).fetchall()
        if not rows:
            return []
        ids = [r[0] for r in rows]
        sims = _scores(np.array([r[1] for r in rows], dtype=np.float64))
        return _ordered(ids, sims, k)


def _ordered(ids: list[int], sims: np.ndarray, k: int) -> list[tuple[int, float]]:
    pairs = sorted(zip(ids, sims.tolist()), key=lambda p: (-round(p[1], 6), p[0]))
    return [(cid, float(s)) for cid, s in pairs[:k]]


def fetch_vectors(
    conn: Connection, table: str, chunk_ids: Iterable[int]
) -> tuple[list[int], np.ndarray]:
    """The stored vectors of these chunks (those that have one), as ids + a float32 matrix."""
    wanted = sorted(set(chunk_ids))
    ids: list[int] = []
    blobs: list[bytes] = []
    for start in range(0, len(wanted), 900):  # stay under SQLite's parameter limit
        part = wanted[start : start + 900]
        marks = ",".join("?" * len(part))
        for rowid, blob in conn.execute(
            f"SELECT rowid, embedding FROM {table} WHERE rowid IN ({marks})", part
        ):
            ids.append(rowid)
            blobs.append(blob)
    if not ids:
        return [], np.zeros((0, 0), dtype=np.float32)
    return ids, np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), -1)


def _brute_force_subset(
    conn: Connection, table: str, vector: np.ndarray, k: int, allowed: set[int]
) -> list[tuple[int, float]]:
    ids, matrix = fetch_vectors(conn, table, allowed)
    if not ids:
        return []
    sims = np.clip(matrix @ np.asarray(vector, dtype=np.float32), 0.0, 1.0)
    top = np.argsort(-sims, kind="stable")[: k * 2]
    return _ordered([ids[i] for i in top], sims[top], k)


@dataclass
class MatrixIndex:
    """All vectors in one numpy matrix: ~0.7 ms per query at 22k x 384, for long-lived
    processes (the MCP server, `kb eval`). Reload when the table changes."""

    table: str
    ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    position: dict[int, int] = field(default_factory=dict)

    @classmethod
    def load(cls, conn: Connection, table: str) -> MatrixIndex:
        rows = conn.execute(f"SELECT rowid, embedding FROM {table} ORDER BY rowid").fetchall()
        index = cls(table)
        if rows:
            index.ids = np.array([r[0] for r in rows], dtype=np.int64)
            index.matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(
                len(rows), -1
            )
            index.position = {int(cid): i for i, cid in enumerate(index.ids)}
        return index

    def nearest(
        self, conn: Connection, vector: np.ndarray, k: int, allowed: set[int] | None
    ) -> list[tuple[int, float]]:
        if not len(self.ids):
            return []
        query = np.asarray(vector, dtype=np.float32)
        if allowed is not None:
            rows = np.array([self.position[c] for c in allowed if c in self.position], dtype=int)
            if not len(rows):
                return []
            sims = self.matrix[rows] @ query
            ids = self.ids[rows]
        else:
            sims = self.matrix @ query
            ids = self.ids
        take = min(len(sims), k * 2)
        top = np.argpartition(-sims, take - 1)[:take] if take < len(sims) else np.arange(len(sims))
        return _ordered(ids[top].tolist(), np.clip(sims[top], 0.0, 1.0), k)


@dataclass
class VectorSearch:
    """The vector leg of a search: an embedder for the query plus an index to search."""

    embedder: Any
    index: Any

    def embed_query(self, text: str) -> np.ndarray:
        return self.embedder.embed_query(text)

    def nearest(
        self, conn: Connection, vector: np.ndarray, k: int, allowed: set[int] | None
    ) -> list[tuple[int, float]]:
        return self.index.nearest(conn, vector, k, allowed)


@dataclass
class ChunkEmbedder:
    """Vectors for parsed documents, re-using stored vectors of identical chunk text."""

    embedder: Any
    table: str
    batch_chunks: int = 64

    def vectors_for(
        self, conn: Connection, docs: list[ParsedDocument]
    ) -> list[dict[str, list[bytes | None]]]:
        texts = [[embedding_text(d.title, c) for c in d.chunks] for d in docs]
        hashes = {t: content_hash(t) for doc_texts in texts for t in doc_texts}
        known = vectors_by_hash(conn, self.table, list(set(hashes.values())))
        todo = sorted({t for t, h in hashes.items() if h not in known})
        if todo:
            fresh = self.embedder.embed_passages(todo)
            for text, vector in zip(todo, fresh):
                known[hashes[text]] = to_blob(vector)
        return [{self.table: [known[hashes[t]] for t in doc_texts]} for doc_texts in texts]
