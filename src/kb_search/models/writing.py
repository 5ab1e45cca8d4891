"""The model an ingest or a reindex writes vectors with: loaded only when a chunk must be
embedded (`LazyVectors`), its tokenizer found without loading it where it is provisioned,
and for a remote executor (Ray) shipped to the cluster's actors instead of loaded here.
`loaded.Models` calls these; ingest receives what they return."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from kb_search.errors import ModelUnavailable, UserInputError
from kb_search.executor_choice import ExecutorChoice
from kb_search.models.embedders import provisioned_info, provisioned_tokenizer, tokenizer_path
from kb_search.parsed import ParsedDocument
from kb_search.store.db import Connection
from kb_search.store.vectors import missing_chunk_ids, table_exists, table_for
from kb_search.vectors.binding import bind

if TYPE_CHECKING:
    from kb_search.config import Config
    from kb_search.embedding import TextEmbedder
    from kb_search.ingest.executor import AddOptions, Executor, VectorSource
    from kb_search.vectors.writer import ChunkEmbedder


class Models(Protocol):
    """What writing needs of `loaded.Models` (which calls these functions with itself)."""

    config: Config

    def warn(self, message: str) -> None: ...

    def writing_name(self, conn: Connection) -> str: ...

    def injected_named(self, name: str) -> TextEmbedder | None: ...

    def writing_embedder(self, conn: Connection) -> TextEmbedder: ...

    def embedder(self, name: str, queries_only: bool = False) -> TextEmbedder: ...


@dataclass(frozen=True)
class Writing:
    """What an ingest needs of the model: the vectors it writes with (loaded on first need)
    and the tokenizer.json that sizes chunks (None: the chunker's estimate)."""

    vectors: LazyVectors
    tokenizer_path: str | None


class LazyVectors:
    """A VectorSource whose model is loaded on first need: a run with nothing to embed (a
    no-op `kb add` or `kb sync`, files that failed before) never loads it. The vector table
    of `model` (the writing model), once it exists, gives vectors of identical texts without
    loading the model."""

    def __init__(self, make: Callable[[], VectorSource | None], model: str | None = None):
        self._make = make
        self._source: VectorSource | None = None
        self.model = model
        self.loaded = False

    def _table(self, conn: Connection) -> str | None:
        table = table_for(conn, self.model) if self.model else None
        return table.name if table and table_exists(conn, table) else None

    @property
    def model_loaded(self) -> bool:
        """Whether a model was actually loaded (not only tried)."""
        return self._source is not None

    def load(self) -> VectorSource | None:
        if not self.loaded:
            self.loaded = True
            self._source = self._make()
        return self._source

    def stored_for(
        self, conn: Connection, docs: list[ParsedDocument]
    ) -> list[dict[str, list[bytes | None]]]:
        if self._source is not None:
            return self._source.stored_for(conn, docs)
        from kb_search.vectors.writer import stored_vectors

        return stored_vectors(conn, self._table(conn), docs)

    def pending(self, conn: Connection) -> int:
        """Chunks without a vector of the writing model (all of them while it has no table)."""
        if self.loaded:
            return 0 if self._source is None else self._source.pending(conn)
        table = self._table(conn)
        if table is None:
            from kb_search.store.inventory import chunk_count

            return chunk_count(conn)
        return len(missing_chunk_ids(conn, table))

    def fill(
        self,
        conn: Connection,
        on_more: Callable[[int], None] | None = None,
        on_embedded: Callable[[int], None] | None = None,
        limit: int | None = None,
    ) -> int:
        if self.pending(conn) == 0:
            return 0
        source = self.load()
        return 0 if source is None else source.fill(conn, on_more, on_embedded, limit)


def for_writing(models: Models, conn: Connection) -> Writing:
    """The writing model of the DB on `conn` and its tokenizer, found without loading the
    model when it is already provisioned (unchanged files are recognised by their chunks'
    sizes); a model not provisioned yet (or none at all) is loaded now to find out."""
    name = models.writing_name(conn)
    if injected := models.injected_named(name):
        known, path = True, tokenizer_path(injected)
    else:
        known, path = provisioned_tokenizer(models.config, name)
    loaded: list[str | None] = []
    lazy = LazyVectors(lambda: _writing_vectors(models, conn, loaded.append), name)
    if not known:
        lazy.load()
        path = loaded[0] if loaded else None
    return Writing(lazy, path)


def _writing_vectors(
    models: Models, conn: Connection, tokenizer: Callable[[str | None], None]
) -> ChunkEmbedder | None:
    """What new chunks are embedded with, or None (with a warning) when no model can be had:
    the ingest then goes on for lexical search. `tokenizer` gets the loaded model's."""
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
    tokenizer(tokenizer_path(embedder))
    return ChunkEmbedder(embedder, table.name)


def executor_for(models: Models, conn: Connection, options: AddOptions) -> Executor:
    """The executor `options.executor` names (ingest.executor.EXECUTORS). A remote one joins
    no cluster, and imports nothing of it, until a file must be parsed."""
    from kb_search.ingest.executor import make_executor

    return make_executor(
        options.executor.name, conn, options, lambda: _shipped_model(models, conn, options)
    )


def _shipped_model(models: Models, conn: Connection, options: AddOptions) -> Any:
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
    models: Models, name: str, executor: ExecutorChoice
) -> Iterator[tuple[Any, int]]:
    """The embedder `kb reindex` uses for model `name` and how many chunks it embeds per
    commit: on the Ray cluster `executor` names, or here."""
    from kb_search.vectors.reindex import BATCH

    if executor.name != "ray":
        embedder = models.embedder(name)
        # a remote model: one round of concurrent requests per commit
        yield embedder, getattr(embedder, "round_size", BATCH)
        return
    with _ray_embedder(models, name, executor) as remote:
        yield remote, BATCH * 4 * remote.parallel  # several batches for every actor at once


@contextlib.contextmanager
def _ray_embedder(models: Models, name: str, executor: ExecutorChoice) -> Iterator[Any]:
    """A RemoteEmbedder on the cluster `executor` names (batches embedded by its actors)."""
    from kb_search.ingest.ray_executor import Cluster, RemoteEmbedder, ship_model

    info = provisioned_info(models.config, name)
    if info is None:
        raise UserInputError(f"{name} is made in this process: reindex without --executor ray")
    cluster = Cluster(executor.option("address"))
    try:
        stall_s = executor.option("stall_s")
        embedder = RemoteEmbedder(cluster, ship_model(info, None), stall_s=stall_s)
        try:
            yield embedder
        finally:
            embedder.close()
    finally:
        cluster.close()
