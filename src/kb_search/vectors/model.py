"""The embedding model as a database sees it: provisioning, the model check, the vector leg."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kb_search.config import Config
from kb_search.store import db


class ModelMismatch(db.DBError):
    """The configured model is not the one the database was built with."""


@dataclass
class ModelChoice:
    name: str  # canonical model id
    explicit: bool  # set by flag, environment or a config file (not the built-in default)


def canonical(name: str) -> str:
    from kb_search.embedding.provision import canonical_name

    return canonical_name(name)


def configured_model(config: Config, override: str | None = None) -> ModelChoice:
    if override:
        return ModelChoice(canonical(override), True)
    return ModelChoice(canonical(config["model"]), config.sources["model"] != "default")


def model_cache_dir(config: Config) -> Path:
    cache = config["model_cache"]
    return Path(cache).expanduser() if cache else config.data_dir / "models"


def load_embedder(config: Config, name: str, one_shot: bool = False) -> Any:
    """Provision (converting to ONNX once, cached under the data dir) and load a model.

    `one_shot`: the process embeds a query or two and exits (CLI search): load fast."""
    from kb_search.embedding import ModelNotAvailableError
    from kb_search.embedding import load_embedder as load

    source = config["model_source"]
    try:
        embedder = load(
            name, model_cache_dir(config), Path(source) if source else None, prepack=not one_shot
        )
    except ModelNotAvailableError as exc:
        raise db.DBError(str(exc).splitlines()[0]) from exc
    prefix_q, prefix_p = config["query_prefix"], config["passage_prefix"]
    if prefix_q or prefix_p:
        from dataclasses import replace

        embedder.info = replace(
            embedder.info,
            query_prefix=prefix_q or embedder.info.query_prefix,
            passage_prefix=prefix_p or embedder.info.passage_prefix,
        )
    return embedder


def resolve_db_model(conn: db.Connection, choice: ModelChoice) -> str | None:
    """The model to use with this DB; a hard error when an explicit choice contradicts it."""
    built_with = db.get_meta(conn, "model_name")
    if built_with is None:
        return None
    if choice.explicit and canonical(built_with) != choice.name:
        raise ModelMismatch(
            f"this database was built with {built_with}, not {choice.name}: run "
            f"`kb reindex --model {choice.name}` to switch, or use --model/KB_MODEL={built_with}"
        )
    return built_with


def model_for_search(
    config: Config, conn: db.Connection, one_shot: bool = True
) -> tuple[Any, str | None]:
    """(VectorSearch, None) or (None, why the vector leg cannot run)."""
    from kb_search.vectors.tables import SqliteVecIndex, VectorSearch, vector_table

    name = resolve_db_model(conn, configured_model(config))
    if name is None:
        return None, "no embedding model in this database: run `kb init` then `kb reindex`"
    found = vector_table(conn, name)
    if found is None:
        return None, f"no vector table for {name}: run `kb reindex`"
    try:
        conn.execute(f"SELECT rowid FROM {found[0]} LIMIT 1").fetchone()
    except db.DatabaseError as exc:
        return None, f"vector table unreadable ({exc}): check `kb doctor`"
    try:
        embedder = load_embedder(config, name, one_shot=one_shot)
    except db.DBError as exc:
        return None, str(exc)
    return VectorSearch(embedder, SqliteVecIndex(found[0], found[1])), None


def prepare_for_writing(config: Config, conn: db.Connection) -> tuple[Any, str] | None:
    """The embedder and vector table that `kb add` writes to; provisions on first use.

    None when no model can be had: the caller ingests lexically and says so loudly.
    """
    from kb_search.vectors.tables import ensure_vector_table, set_db_model

    choice = configured_model(config)
    name = resolve_db_model(conn, choice) or choice.name
    embedder = load_embedder(config, name)
    table = ensure_vector_table(conn, embedder.name, embedder.dim)
    if db.get_meta(conn, "model_name") is None:
        set_db_model(conn, embedder)
    return embedder, table


def model_checks(config: Config, conn: db.Connection) -> list[Any]:
    """Doctor checks: the model loads and matches the DB; every chunk has exactly one vector."""
    from kb_search.doctor import Check
    from kb_search.vectors.tables import vector_table

    checks = []
    try:
        name = resolve_db_model(conn, configured_model(config))
    except ModelMismatch as exc:
        return [Check("model", False, str(exc))]
    if name is None:
        return [Check("model", False, "no embedding model recorded: run `kb init`")]
    try:
        embedder = load_embedder(config, name)
        checks.append(Check("model", True, f"{name} ({embedder.dim} dims, {embedder.info.source})"))
    except db.DBError as exc:
        checks.append(Check("model", False, str(exc)))
    found = vector_table(conn, name)
    if found is None:
        return [*checks, Check("vectors_in_sync", False, f"no vector table for {name}")]
    try:
        missing, orphans = conn.execute(
            f"SELECT (SELECT count(*) FROM chunks WHERE id NOT IN (SELECT rowid FROM {found[0]})),"
            f" (SELECT count(*) FROM {found[0]} WHERE rowid NOT IN (SELECT id FROM chunks))"
        ).fetchone()
    except db.DatabaseError as exc:
        return [*checks, Check("vectors_in_sync", False, str(exc))]
    ok = missing == 0 and orphans == 0
    detail = (
        "every chunk has one vector"
        if ok
        else f"{missing} chunks without vectors (run `kb reindex`), {orphans} orphan vectors"
    )
    checks.append(Check("vectors_in_sync", ok, detail))
    return checks
