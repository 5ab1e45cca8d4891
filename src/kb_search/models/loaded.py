"""`Models`: every model a KnowledgeBase uses, loaded when first needed and kept as its
profile says (the table of who loads which model, when, for whom: `models/__init__.py`).

A KnowledgeBase holds one `Models`; a companion KB (a writer beside a server) shares the
embedding models through `sharing`, but opens a leg of its own over its own connection.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kb_search.config import Config
from kb_search.embedding import TextEmbedder, is_remote
from kb_search.errors import ConfigError, DBError, EndpointError, ModelUnavailable
from kb_search.executor_choice import ExecutorChoice
from kb_search.models.embedders import (
    NO_MODEL,
    ModelChoice,
    configured_model,
    load_embedder,
    model_cache_dir,
    resolve_db_model,
)
from kb_search.profile import Profile
from kb_search.store import db
from kb_search.vectors.binding import readable_table

if TYPE_CHECKING:
    from kb_search.ingest.executor import AddOptions, Executor
    from kb_search.models.chat import ChatModel
    from kb_search.models.writing import Writing
    from kb_search.search.rerank import Reranker
    from kb_search.store.vectors import Binding, VectorTable
    from kb_search.vectors.index import VectorSearch


@dataclass
class VectorLegState:
    """The vector leg of this KB, or why there is none."""

    search: VectorSearch | None
    table: VectorTable | None
    unavailable: str | None


class Models:
    """Which model to use and the loaded ones. The SERVE profile (the MCP server, `kb watch`,
    eval) keeps each embedding model once loaded and prepacks its weights; a one-shot call (and
    the warm server, which answers as one) loads fast and keeps nothing. Rerankers and the chat
    model are built once per holder in every profile. `injected` replaces the configured
    embedding model (tests). `records()` is the connection the DB's model records are read
    from, None while no DB exists."""

    def __init__(
        self,
        config: Config,
        *,
        profile: Profile = Profile.ONE_SHOT,
        injected: TextEmbedder | None = None,
        warn: Callable[[str], None] = lambda _message: None,
        records: Callable[[], db.Connection | None] = lambda: None,
    ):
        self.config = config
        self.profile = profile
        self.injected = injected
        self.warn = warn
        self._records = records
        self._by_name: dict[str, TextEmbedder] = {}
        self._by_name_lock = threading.Lock()
        self._leg: VectorLegState | None = None
        self._leg_lock = threading.Lock()
        self.load_ms = 0.0  # how long opening the vector leg (model + index) took
        self._rerankers: dict[str, Reranker | None] = {}
        self._chat: ChatModel | None = None
        self._lock = threading.Lock()  # rerankers and the chat model: each built once

    def sharing(self, records: Callable[[], db.Connection | None]) -> Models:
        """Another holder over the same loaded embedding models, with its own records and leg."""
        other = Models(
            self.config,
            profile=self.profile,
            injected=self.injected,
            warn=self.warn,
            records=records,
        )
        other._by_name, other._by_name_lock = self._by_name, self._by_name_lock
        return other

    # ---- which model -------------------------------------------------------------------------

    def choice(self) -> ModelChoice:
        """The configured model (the injected one when there is one)."""
        if self.injected is not None:
            return ModelChoice(self.injected.name, True)
        return configured_model(self.config)

    def injected_named(self, name: str) -> TextEmbedder | None:
        return self.injected if self.injected is not None and self.injected.name == name else None

    def writing_name(self, conn: db.Connection) -> str:
        """The model new vectors come from: the DB's own, else the configured one.
        ModelMismatch when an explicit choice contradicts the DB."""
        choice = self.choice()
        return resolve_db_model(conn, choice) or choice.name

    # ---- loading -----------------------------------------------------------------------------

    def embedder(self, name: str, queries_only: bool = False) -> TextEmbedder:
        """The model called `name` (the injected one when it has that name). `queries_only`
        in a one-shot process loads it fast, for a query or two."""
        if injected := self.injected_named(name):
            return injected
        if not self.profile.keeps_models:
            recorded = self._recorded_binding(name)
            return load_embedder(self.config, name, one_shot=queries_only, recorded=recorded)
        with self._by_name_lock:  # `kb watch` syncs many times, the server searches many times
            if name not in self._by_name:
                recorded = self._recorded_binding(name)
                self._by_name[name] = load_embedder(self.config, name, recorded=recorded)
            return self._by_name[name]

    def writing_embedder(self, conn: db.Connection) -> TextEmbedder:
        return self.embedder(self.writing_name(conn))

    def _recorded_binding(self, name: str) -> Binding | None:
        """What the DB records of model `name` (a remote model's dimension and server), None
        when it has no record or no DB exists yet."""
        from kb_search.store.vectors import recorded_binding

        if not is_remote(name):
            return None
        try:
            conn = self._records()
            return None if conn is None else recorded_binding(conn, name)
        except db.DatabaseError:
            return None

    # ---- for ingest and reindex (models/writing.py) ---------------------------------------------

    def for_writing(self, conn: db.Connection) -> Writing:
        """The lazily loaded writing model of the DB on `conn` and its tokenizer path."""
        from kb_search.models.writing import for_writing

        return for_writing(self, conn)

    def executor(self, conn: db.Connection, options: AddOptions) -> Executor:
        """The executor `options.executor` names, shipped the writing model if it is remote."""
        from kb_search.models.writing import executor_for

        return executor_for(self, conn, options)

    @contextlib.contextmanager
    def reindex_embedder(self, name: str, executor: ExecutorChoice) -> Iterator[tuple[Any, int]]:
        """The embedder `kb reindex` uses for `name` (here, or on `executor`'s cluster) and how
        many chunks it embeds per commit."""
        from kb_search.models.writing import reindex_embedder

        with reindex_embedder(self, name, executor) as pair:
            yield pair

    # ---- rerankers and the chat model ---------------------------------------------------------

    def reranker(self, name: str | None = None) -> Reranker | None:
        """The rerank stage `name` means (default: `search.reranker`; "none": no stage), built
        once; ConfigError in one line when it cannot be had."""
        from kb_search.models.rerankers import reranker_named

        name = name or self.config["search.reranker"]
        with self._lock:
            if name not in self._rerankers:
                cache = model_cache_dir(self.config)
                self._rerankers[name] = reranker_named(name, cache, self.config.values)
            return self._rerankers[name]

    def chat(self) -> ChatModel:
        """The configured chat model (`llm.*`), built once; ConfigError saying how to set one
        when none is."""
        from kb_search.models.chat import HOW_TO_SET, chat_model

        with self._lock:
            if self._chat is None:
                self._chat = chat_model(self.config.values)
                if self._chat is None:
                    raise ConfigError(f"no chat model is configured: {HOW_TO_SET}")
            return self._chat

    # ---- the vector leg ----------------------------------------------------------------------

    @property
    def leg_loaded(self) -> bool:
        return self._leg is not None

    def vector_leg(self, reader: Callable[[], db.Connection]) -> VectorLegState:
        """The vector leg (model + index over the DB's vectors), loaded once over `reader()`."""
        if self._leg is None:
            with self._leg_lock:
                if self._leg is None:
                    started = time.perf_counter()
                    self._leg = self._open_leg(reader())
                    self.load_ms = (time.perf_counter() - started) * 1000
        return self._leg

    def forget_leg(self) -> None:
        self._leg = None

    def _open_leg(self, conn: db.Connection) -> VectorLegState:
        from kb_search.vectors import open_index
        from kb_search.vectors.index import VectorSearch

        name = resolve_db_model(conn, self.choice())
        if name is None:
            return VectorLegState(None, None, NO_MODEL)
        try:
            table = readable_table(conn, name)
            embedder = self.embedder(name, queries_only=True)
        except (DBError, ModelUnavailable, ConfigError) as exc:
            return VectorLegState(None, None, str(exc))
        index = open_index(conn, table, self._index_backend(conn), note=self.warn)
        if self.profile.keeps_models:
            # The first ONNX run is slow; pay it now. A remote model's server that is down now
            # may answer later: each query tries it, and says so in `legs` when it fails.
            with contextlib.suppress(EndpointError):
                embedder.embed_query("warm up")
        return VectorLegState(VectorSearch(embedder, index), table, None)

    def _index_backend(self, conn: db.Connection) -> str:
        from kb_search.vectors import choose_backend

        setting, threshold = self.config["vectors.index"], self.config["vectors.ann_min_chunks"]
        return choose_backend(conn, setting, self.profile, threshold)
