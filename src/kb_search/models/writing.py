"""The model an ingest or a reindex writes vectors with: loaded only when a chunk must be
embedded, and for the Ray executor shipped to the cluster's actors instead of loaded here."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kb_search.errors import ModelUnavailable, UserInputError
from kb_search.store.db import Connection
from kb_search.vectors.model import (
    bind,
    provisioned_info,
    provisioned_tokenizer,
    tokenizer_path,
)

if TYPE_CHECKING:
    from kb_search.ingest.batch_writer import LazyVectors
    from kb_search.ingest.executor import AddOptions, Executor
    from kb_search.vectors.loaded import LoadedModels
    from kb_search.vectors.writer import ChunkEmbedder


def lazy_vectors(models: LoadedModels, conn: Connection, options: AddOptions) -> LazyVectors:
    """What new chunks are embedded with, loaded only when a chunk must be embedded. The
    model's tokenizer (it sizes chunks, and unchanged files are recognised by it) is found
    without loading the model when the model is already provisioned; it goes in `options`."""
    from kb_search.ingest.batch_writer import LazyVectors

    name = models.writing_name(conn)
    if injected := models.injected_named(name):
        known, options.tokenizer_path = True, tokenizer_path(injected)
    else:
        known, options.tokenizer_path = provisioned_tokenizer(models.config, name)
    lazy = LazyVectors(lambda: _writing_vectors(models, conn, options), name)
    if not known:
        lazy.load()  # not provisioned yet (or no model at all): find out now
    return lazy


def _writing_vectors(
    models: LoadedModels, conn: Connection, options: AddOptions
) -> ChunkEmbedder | None:
    """What new chunks are embedded with, or None (with a warning) when no model can be had:
    the ingest then goes on for lexical search."""
    from kb_search.vectors.writer import ChunkEmbedder

    try:
        embedder = models.writing_embedder(conn)
    except ModelUnavailable as exc:
        models.warn(
            f"no embedding model ({exc}); indexing for lexical search only."
            " Run `kb reindex` once the model is available."
        )
        return None
    table = bind(conn, embedder)
    options.tokenizer_path = tokenizer_path(embedder)
    return ChunkEmbedder(embedder, table.name)


def executor_for(models: LoadedModels, conn: Connection, options: AddOptions) -> Executor:
    """The executor `options.executor` names (ingest.executor.EXECUTORS). A remote one joins
    no cluster, and imports nothing of it, until a file must be parsed."""
    from kb_search.ingest.executor import make_executor

    return make_executor(
        options.executor, conn, options, lambda: _shipped_model(models, conn, options)
    )


def _shipped_model(models: LoadedModels, conn: Connection, options: AddOptions) -> Any:
    """The writing model for Ray actors (provisioned, not loaded here); without a model file
    (an in-process model, no model at all) only the tokenizer goes, and this process embeds."""
    from kb_search.ingest.ray_executor import ship_model

    name = models.writing_name(conn)
    info = None
    if models.injected_named(name) is None:
        try:
            info = provisioned_info(models.config, name)
        except ModelUnavailable:
            info = None  # the local source warns and indexes for lexical search
    return ship_model(info, options.tokenizer_path)


@contextlib.contextmanager
def reindex_embedder(
    models: LoadedModels, name: str, executor: str, address: str | None
) -> Iterator[tuple[Any, int]]:
    """The embedder `kb reindex` uses for model `name` and how many chunks it embeds per
    commit: on the Ray cluster at `address`, or here."""
    from kb_search.vectors.reindex import BATCH

    if executor != "ray":
        embedder = models.embedder(name)
        # a remote model: one round of concurrent requests per commit
        yield embedder, getattr(embedder, "round_size", BATCH)
        return
    with _ray_embedder(models, name, address) as remote:
        yield remote, BATCH * 4 * remote.parallel  # several batches for every actor at once


@contextlib.contextmanager
def _ray_embedder(models: LoadedModels, name: str, address: str | None) -> Iterator[Any]:
    """A RemoteEmbedder on the cluster at `address` (batches embedded by its actors)."""
    from kb_search.ingest.ray_executor import Cluster, RemoteEmbedder, ship_model

    info = provisioned_info(models.config, name)
    if info is None:
        raise UserInputError(f"{name} is made in this process: reindex without --executor ray")
    cluster = Cluster(address)
    try:
        stall_s = models.config["ingestion.ray_stall_s"]
        embedder = RemoteEmbedder(cluster, ship_model(info, None), stall_s=stall_s)
        try:
            yield embedder
        finally:
            embedder.close()
    finally:
        cluster.close()
