"""The models a process has loaded: each embedding model by name, and the vector leg (the
query model with an index over the database's vectors) that search uses.

A KnowledgeBase holds one `LoadedModels`; a companion KB (a writer beside a server) shares the
models through `sharing`, but opens a leg of its own over its own connection.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kb_search.config import Config
from kb_search.embedding import is_remote
from kb_search.errors import ConfigError, DBError, EndpointError, ModelUnavailable
from kb_search.profile import Profile
from kb_search.store import db
from kb_search.vectors.model import (
    NO_MODEL,
    ModelChoice,
    TextEmbedder,
    configured_model,
    load_embedder,
    readable_table,
    resolve_db_model,
)

if TYPE_CHECKING:
    from kb_search.store.vectors import Binding, VectorTable
    from kb_search.vectors.index import VectorSearch


@dataclass
class VectorLegState:
    """The vector leg of this KB, or why there is none."""

    search: VectorSearch | None
    table: VectorTable | None
    unavailable: str | None


class LoadedModels:
    """Which model to use and the loaded ones. The SERVE profile (the MCP server, `kb watch`,
    eval) keeps each model once loaded and prepacks its weights; a one-shot call (and the warm
    server, which answers as one) loads fast and keeps nothing. `injected` replaces the
    configured model (tests). `records()` is the connection the DB's model records are read
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

    def sharing(self, records: Callable[[], db.Connection | None]) -> LoadedModels:
        """Another holder over the same loaded models, with its own records and leg."""
        other = LoadedModels(
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
