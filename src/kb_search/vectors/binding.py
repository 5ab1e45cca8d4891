"""The embedding model's vectors as a database holds them: binding a DB to a model (its vector
table, its name, dimension and server), switching it to another, and the doctor's check that
every chunk has its vector. Which model to load, and loading it, is `models/`."""

from __future__ import annotations

from kb_search.embedding import TextEmbedder
from kb_search.errors import DBError
from kb_search.store import db
from kb_search.store import vectors as tables
from kb_search.store.vectors import VectorTable


def readable_table(conn: db.Connection, name: str) -> VectorTable:
    """The model's vector table, checked to be readable; DBError says what to run."""
    table = tables.table_for(conn, name)
    if table is None or not tables.table_exists(conn, table):
        raise DBError(f"no vector table for {name}: run `kb reindex`")
    try:
        tables.probe(conn, table.name)
    except db.DatabaseError as exc:
        raise DBError(f"vector table unreadable ({exc}): check `kb doctor`") from exc
    return table


def bind(conn: db.Connection, embedder: TextEmbedder) -> VectorTable:
    """Make sure the embedder's vector table exists; bind an unbound DB to the model. A
    remote model's server is recorded only once it has answered with vectors of the DB's
    dimension (a first bind probes it; a server named anew is probed here): a `kb add` whose
    endpoint does not answer leaves the recorded one as it was."""
    table = tables.ensure_table(conn, embedder.name, embedder.dim)
    bound = tables.db_model(conn)
    endpoint = endpoint_of(embedder)
    if bound is None:
        with db.transaction(conn):
            tables.set_db_model(conn, embedder.name, embedder.dim, embedder.max_tokens, endpoint)
    elif bound == embedder.name and endpoint:
        recorded = tables.recorded_binding(conn, bound)
        if recorded is None or recorded.endpoint != endpoint:
            if (probe := getattr(embedder, "probe", None)) is not None:
                probe()  # EndpointError when it does not answer as this DB needs
            with db.transaction(conn):  # the server moved (`kb init --endpoint`)
                tables.set_db_endpoint(conn, endpoint)
    return table


AWAITING = (
    "chunks await embedding (written and keyword-searchable; the next `kb add`, `kb sync` or"
    " `kb reindex` embeds them)"
)


def switch_model(conn: db.Connection, embedder: TextEmbedder) -> str | None:
    """Point the DB at the embedder's model (inside a write transaction); the previous one."""
    previous = tables.db_model(conn)
    tables.set_db_model(
        conn, embedder.name, embedder.dim, embedder.max_tokens, endpoint_of(embedder)
    )
    return previous


def endpoint_of(embedder: TextEmbedder) -> str | None:
    """A remote model's server as the DB binding records it (no userinfo, no key); None for
    a local model."""
    return getattr(embedder, "recorded_endpoint", None) or getattr(embedder, "endpoint", None)


def vector_sync_detail(conn: db.Connection, name: str) -> tuple[bool, str]:
    """Doctor: does every chunk have exactly one vector of the DB's model? Chunks that only
    lack one are not a fault: they await the embedding phase (ok, said as "N chunks await
    embedding")."""
    table = tables.table_for(conn, name)
    if table is None or not tables.table_exists(conn, table):
        return False, f"no vector table for {name}: run `kb reindex`"
    try:
        missing, orphans = tables.sync_counts(conn, table.name)
    except db.DatabaseError as exc:
        return False, str(exc)
    if missing == 0 and orphans == 0:
        return True, "every chunk has one vector"
    if orphans == 0:
        return True, f"{missing} {AWAITING}"
    return False, f"{missing} chunks without vectors (run `kb reindex`), {orphans} orphan vectors"
