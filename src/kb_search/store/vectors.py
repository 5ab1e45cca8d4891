"""Every SQL statement against vector tables: one sqlite-vec `vec0` table per model.

`vector_tables(model, table_name, dim)` registers them; the DB's own model is the `meta`
row `model_name`. Nothing outside this module names a vec table in SQL.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kb_search.errors import DBError
from kb_search.store.db import (
    Connection,
    get_meta,
    load_vec_extension,
    rows_in,
    set_meta,
    transaction,
)

if TYPE_CHECKING:
    import numpy as np

MAX_KNN = 4096  # sqlite-vec's largest k


@dataclass(frozen=True)
class VectorTable:
    model: str
    name: str
    dim: int


def table_name_for(model: str) -> str:
    """`vec_<slug>_<hash>`: readable, and two models can never share a table."""
    import hashlib  # here: a lexical search imports this module but names no table (~4 ms)

    slug = re.sub(r"[^a-z0-9]+", "_", model.rsplit("/", 1)[-1].lower()).strip("_")[:32]
    digest = hashlib.blake2b(model.encode(), digest_size=4).hexdigest()
    return f"vec_{slug}_{digest}"


def to_blob(vector: np.ndarray) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype=np.float32).tobytes()


def require_extension(conn: Connection) -> None:
    problem = load_vec_extension(conn)
    if problem is not None:
        raise DBError(f"the sqlite-vec extension does not load ({problem}): vectors unavailable")


# ---- the registry of tables ----------------------------------------------------------------


def table_for(conn: Connection, model: str) -> VectorTable | None:
    row = conn.execute(
        "SELECT table_name, dim FROM vector_tables WHERE model = ?", (model,)
    ).fetchone()
    return VectorTable(model, row[0], row[1]) if row else None


def all_tables(conn: Connection) -> list[VectorTable]:
    rows = conn.execute("SELECT model, table_name, dim FROM vector_tables ORDER BY model")
    return [VectorTable(*r) for r in rows]


def table_exists(conn: Connection, table: VectorTable) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table.name,)
    ).fetchone()
    return row is not None


def ensure_table(conn: Connection, model: str, dim: int) -> VectorTable:
    """The model's vec0 table, created (or recreated, when the dimension changed or the table
    itself went missing) as needed."""
    require_extension(conn)
    with transaction(conn):
        existing = table_for(conn, model)
        if existing and existing.dim != dim:
            conn.execute(f"DROP TABLE IF EXISTS {existing.name}")
            conn.execute("DELETE FROM vector_tables WHERE model = ?", (model,))
            existing = None
        name = existing.name if existing else table_name_for(model)
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING vec0("
            f"embedding float[{dim}] distance_metric=cosine)"
        )
        if existing is None:
            conn.execute(
                "INSERT INTO vector_tables(model, table_name, dim, created_at) VALUES (?,?,?,?)",
                (model, name, dim, time.time()),
            )
    return VectorTable(model, name, dim)


def drop_other_tables(conn: Connection, keep_model: str) -> list[str]:
    """After a model switch has finished, drop the vectors of every other model."""
    dropped = []
    with transaction(conn):
        for table in all_tables(conn):
            if table.model != keep_model:
                conn.execute(f"DROP TABLE IF EXISTS {table.name}")
                conn.execute("DELETE FROM vector_tables WHERE model = ?", (table.model,))
                dropped.append(table.model)
    return dropped


# ---- the model binding ---------------------------------------------------------------------


def db_model(conn: Connection) -> str | None:
    return get_meta(conn, "model_name")


def set_db_model(
    conn: Connection, name: str, dim: int, max_tokens: int, endpoint: str | None = None
) -> None:
    """Record the model this DB's vectors come from, and for a remote model the server that
    computes them (never its API key); call inside a write transaction."""
    set_meta(conn, "model_name", name)
    set_meta(conn, "embedding_dim", str(dim))
    set_meta(conn, "model_max_tokens", str(max_tokens))
    set_meta(conn, "model_endpoint", endpoint or "")


def set_db_endpoint(conn: Connection, endpoint: str) -> None:
    """The bound remote model's server moved (`kb init --endpoint`); inside a transaction."""
    set_meta(conn, "model_endpoint", endpoint)


@dataclass(frozen=True)
class Binding:
    """What the DB records of one model: its vector length, input limit, server."""

    dim: int
    max_tokens: int | None
    endpoint: str | None


def recorded_binding(conn: Connection, model: str) -> Binding | None:
    """The DB's record of `model` (the bound model's meta rows, else its vector table's
    dimension); None when the DB knows nothing of it."""
    if db_model(conn) == model:
        dim, tokens = get_meta(conn, "embedding_dim"), get_meta(conn, "model_max_tokens")
        if dim:
            endpoint = get_meta(conn, "model_endpoint") or None
            return Binding(int(dim), int(tokens) if tokens else None, endpoint)
    table = table_for(conn, model)
    return Binding(table.dim, None, None) if table else None


# ---- rows ----------------------------------------------------------------------------------


def insert_vectors(
    conn: Connection, table: str, chunk_ids: Sequence[int], blobs: Sequence[bytes | None]
) -> None:
    """Store one vector per chunk (None = not embedded); inside the caller's transaction."""
    conn.executemany(
        f"INSERT INTO {table}(rowid, embedding) VALUES (?, ?)",
        [(cid, blob) for cid, blob in zip(chunk_ids, blobs) if blob is not None],
    )


def replace_vectors(conn: Connection, table: str, rows: Sequence[tuple[int, bytes]]) -> None:
    """Overwrite the vectors of these chunks; inside the caller's transaction."""
    if not rows:
        return
    conn.execute(f"DELETE FROM {table} WHERE rowid IN ({','.join(str(cid) for cid, _ in rows)})")
    conn.executemany(f"INSERT INTO {table}(rowid, embedding) VALUES (?, ?)", rows)


def delete_document_vectors(conn: Connection, document_id: int) -> None:
    """Remove a document's vectors from every model's table (before its chunks go); a table
    that went missing is skipped (`kb reindex` recreates it)."""
    for table in all_tables(conn):
        if not table_exists(conn, table):
            continue
        conn.execute(
            f"DELETE FROM {table.name} WHERE rowid IN"
            " (SELECT id FROM chunks WHERE document_id = ?)",
            (document_id,),
        )


def clear_table(conn: Connection, table: str) -> None:
    with transaction(conn):
        conn.execute(f"DELETE FROM {table}")


def missing_chunk_ids(conn: Connection, table: str) -> list[int]:
    """Chunks with no vector in `table` (what an ingest's embedding phase and a resumed
    reindex still have to embed), by id: the order they were written in."""
    sql = "SELECT id FROM chunks WHERE id NOT IN (SELECT rowid FROM {}) ORDER BY id"
    try:  # sqlite-vec's rowid shadow table: no scan of the vectors themselves
        return [r[0] for r in conn.execute(sql.format(f"{table}_rowids"))]
    except Exception:  # noqa: BLE001 - another sqlite-vec layout
        return [r[0] for r in conn.execute(sql.format(table))]


def embedding_coverage(conn: Connection) -> tuple[int, int] | None:
    """(chunks, chunks with a vector of the DB's model); None when no model is bound or its
    table cannot be read. Cheap: the documents' chunk counts and the rowid shadow table."""
    model = db_model(conn)
    table = table_for(conn, model) if model else None
    if table is None:
        return None
    chunks = conn.execute("SELECT coalesce(sum(chunk_count), 0) FROM documents").fetchone()[0]
    vectors = count_vectors_quickly(conn, table.name)
    return None if vectors is None else (chunks, min(vectors, chunks))


def without_vectors(conn: Connection, chunk_ids: Iterable[int]) -> set[int]:
    """Those of these chunks that have no vector of the DB's model yet (none when no model
    is bound): a search over a partly embedded index fuses them over the lexical leg alone."""
    model = db_model(conn)
    table = table_for(conn, model) if model else None
    wanted = sorted(set(chunk_ids))
    if table is None or not wanted:
        return set()
    found: set[int] = set()
    sql = "SELECT rowid FROM {} WHERE rowid IN ({})"
    for start in range(0, len(wanted), 900):  # stay under SQLite's parameter limit
        part = wanted[start : start + 900]
        marks = ",".join("?" * len(part))
        try:  # sqlite-vec's rowid shadow table: no read of the vectors themselves
            rows = conn.execute(sql.format(f"{table.name}_rowids", marks), part)
        except Exception:  # noqa: BLE001 - another sqlite-vec layout
            rows = conn.execute(sql.format(table.name, marks), part)
        found.update(r[0] for r in rows)
    return set(wanted) - found


def sync_counts(conn: Connection, table: str) -> tuple[int, int]:
    """(chunks without a vector, vectors without a chunk)."""
    return conn.execute(
        f"SELECT (SELECT count(*) FROM chunks WHERE id NOT IN (SELECT rowid FROM {table})),"
        f" (SELECT count(*) FROM {table} WHERE rowid NOT IN (SELECT id FROM chunks))"
    ).fetchone()


def count_vectors(conn: Connection, table: str) -> int | None:
    """Vectors in a table; None when it cannot be read (the extension did not load)."""
    try:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    except Exception:  # noqa: BLE001 - reported as unknown, e.g. by `kb stats`
        return None


def count_vectors_quickly(conn: Connection, table: str) -> int | None:
    """count(*) of a vec0 table without its full scan: sqlite-vec keeps one row per vector in
    the shadow table `<table>_rowids` (2 ms against 110 ms at 300k); the scan if that fails."""
    try:
        return conn.execute(f"SELECT count(*) FROM {table}_rowids").fetchone()[0]
    except Exception:  # noqa: BLE001 - another sqlite-vec layout: count the slow way
        return count_vectors(conn, table)


def vector_ids(conn: Connection, table: str) -> list[int]:
    """The chunk ids that have a vector in `table` (from the `<table>_rowids` shadow table
    when it reads: no scan of the vectors)."""
    try:
        return [r[0] for r in conn.execute(f"SELECT rowid FROM {table}_rowids")]
    except Exception:  # noqa: BLE001 - another sqlite-vec layout
        return [r[0] for r in conn.execute(f"SELECT rowid FROM {table}")]


def probe(conn: Connection, table: str) -> None:
    """Raise if the table cannot be read (cheap: one row)."""
    conn.execute(f"SELECT rowid FROM {table} LIMIT 1").fetchone()


def vectors_by_hash(conn: Connection, table: str, hashes: list[str]) -> dict[str, bytes]:
    """Stored vectors for chunks with these content hashes (re-embedding only what changed)."""
    found: dict[str, bytes] = {}
    sql = (
        f"SELECT c.content_hash, v.embedding FROM chunks c JOIN {table} v ON v.rowid = c.id"
        " WHERE c.content_hash IN ({marks})"
    )
    for digest, blob in rows_in(conn, sql, hashes):
        found.setdefault(digest, blob)
    return found


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
    return ids, _matrix(blobs)


def all_vectors(conn: Connection, table: str) -> tuple[list[int], np.ndarray]:
    """Every vector of a table, by rowid."""
    rows = conn.execute(f"SELECT rowid, embedding FROM {table} ORDER BY rowid").fetchall()
    return [r[0] for r in rows], _matrix([r[1] for r in rows])


def _matrix(blobs: list[bytes]) -> np.ndarray:
    # numpy is imported here, not at the top: a lexical search never needs it (~80 ms).
    import numpy as np

    if not blobs:
        return np.zeros((0, 0), dtype=np.float32)
    return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)


def knn(conn: Connection, table: str, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
    """sqlite-vec's exact KNN: (chunk id, cosine distance), nearest first."""
    return conn.execute(
        f"SELECT rowid, distance FROM {table} WHERE embedding MATCH ? AND k = ?"
        " ORDER BY distance",
        (to_blob(vector), min(k, MAX_KNN)),
    ).fetchall()


def hashes_with_vectors(conn: Connection, table: str, path: str) -> list[str]:
    """Hashes of the chunk texts of the document at `path` that have a vector in `table`."""
    rows = conn.execute(
        f"SELECT c.content_hash FROM chunks c JOIN documents d ON d.id = c.document_id"
        f" JOIN {table} v ON v.rowid = c.id WHERE d.path = ?",
        (path,),
    )
    return [row[0] for row in rows if row[0]]


def binding(conn: Connection) -> list[list[Any]]:
    """The model settings and vector tables a DB is bound to, in a stable order: a change
    (a reindex with another model) tells a long-lived process its model is the wrong one."""
    meta = conn.execute("SELECT key, value FROM meta WHERE key LIKE 'model%'").fetchall()
    tables = conn.execute("SELECT model, table_name, dim FROM vector_tables").fetchall()
    return sorted(map(list, meta)) + sorted(map(list, tables))


def cosine_distances(conn: Connection, query: bytes, rows: list[tuple[int, bytes]]) -> list:
    """(id, distance) for each (id, vector blob), computed by sqlite-vec itself, so that a
    shortlist from memory answers to the last digit as a vec0 KNN would."""
    values = ",".join("(?, ?)" for _ in rows)
    params: list[Any] = [query]
    for chunk_id, blob in rows:
        params += [chunk_id, blob]
    return conn.execute(
        f"SELECT c.column1, vec_distance_cosine(c.column2, ?) FROM (VALUES {values}) AS c",
        params,
    ).fetchall()
