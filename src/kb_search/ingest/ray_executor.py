"""Ingestion on a Ray cluster (`--executor ray`, the `kb-search[ray]` extra).

Files fan out to long-lived actors, one per CPU of the cluster, that parse, chunk and embed
with the same code as the local workers: each actor runs a one-process `ParserPool` (the
same per-file time limit and memory cap) and holds the embedding model, which reaches it
once through the object store and is written to the actor's own temp dir. Nodes need not
share the driver's disk: file bytes travel through the object store and are parsed from a
temp file. Outcomes and their vectors stream back (`ray.wait`) to the one local writer,
which still writes one transaction per document, so a lost worker (its files are sent
again) or a killed driver (the rerun skips what was written) leaves a consistent DB. A worker
that answers nothing for `ingestion.ray_stall_s` (a frozen node, a call stuck in native code)
is killed and treated as lost.

`ray` is imported only inside functions: this module is cheap to import, and a run with
nothing to parse never starts or joins a cluster.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb_search.errors import UserInputError
from kb_search.formats.reader import read_user_file
from kb_search.ingest.workers import Outcome, ParseJob, ParserPool
from kb_search.parsed import ParsedDocument
from kb_search.store.documents import content_hash, embedding_text

if TYPE_CHECKING:
    import numpy as np

    from kb_search.embedding.provision import ModelInfo
    from kb_search.ingest.executor import AddOptions, Candidate, VectorSource
    from kb_search.store.db import Connection

RAY_MISSING = "the Ray executor needs Ray: pip install 'kb-search[ray]'"
OBJECT_STORE_BYTES = 200 * 1024 * 1024  # a local cluster started for the run
WORKER_MEMORY_BYTES = 512 * 1024 * 1024  # scheduling reservation per actor: model + a batch
IN_FLIGHT_PER_WORKER = 2  # one parsing, one queued: no idle round trip between files
CLIENT_ATTEMPTS = 3  # connecting through Ray Client (ray://)
ATTEMPTS = 3  # a file whose worker dies this many times fails (it may be what kills it)
WAIT_TICK_S = 1.0  # how often the driver looks for a stalled worker while it waits
TOKENIZER = "tokenizer.json"
STALL_S = 900.0  # `ingestion.ray_stall_s` where the executor's choice does not say


@dataclass
class ShippedModel:
    """What the actors need of the model: its ModelInfo (None: the driver embeds, e.g. an
    in-process test embedder) and the files to materialise (the tokenizer sizes chunks)."""

    info: ModelInfo | None
    files: dict[str, bytes] = field(default_factory=dict)


def ship_model(info: ModelInfo | None, tokenizer_path: str | None) -> ShippedModel:
    """Read a provisioned model directory (or only the tokenizer) for the object store."""
    files: dict[str, bytes] = {}
    if info is not None:
        files = {name: (info.path / name).read_bytes() for name in info.files}
    elif tokenizer_path:
        files = {TOKENIZER: Path(tokenizer_path).read_bytes()}
    return ShippedModel(info, files)


# ---- the cluster -------------------------------------------------------------------------------


def require_ray() -> None:
    """UserInputError when Ray is not installed (found without importing it)."""
    import importlib.util

    try:
        found = importlib.util.find_spec("ray") is not None
    except ValueError:  # in sys.modules as None: made unimportable
        found = False
    if not found:
        raise UserInputError(RAY_MISSING)


def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise UserInputError(RAY_MISSING) from exc
    return ray


class Cluster:
    """A connection for one run: to `address` ("auto", "ray://host:port", "host:port"), or a
    local Ray started for the run (small object store) and stopped after it."""

    def __init__(self, address: str | None):
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # offline-first: no phoning home
        self.ray = import_ray()
        _errors_to_stderr(self.ray)
        self.owned = not self.ray.is_initialized()
        if not self.owned:
            return
        quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR}
        try:
            if address and address.startswith("ray://"):
                self._client_init(address, quiet)
            elif address:
                self.ray.init(address=address, include_dashboard=False, **quiet)
            else:
                self.ray.init(
                    num_cpus=os.cpu_count() or 1,
                    object_store_memory=OBJECT_STORE_BYTES,
                    include_dashboard=False,
                    **quiet,
                )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = f"reach the Ray cluster at {address}" if address else "start a local Ray"
            raise UserInputError(f"cannot {where}: {_gist(exc)}") from exc

    def _client_init(self, address: str, quiet: dict[str, Any]) -> None:
        """Ray Client: the head starts a server process per client, which a busy head may not
        get up in time ("Initialization failure from server"); a second try usually gets it."""
        for attempt in range(1, CLIENT_ATTEMPTS + 1):
            try:
                self.ray.init(address=address, **quiet)
                return
            except ConnectionAbortedError:
                if attempt == CLIENT_ATTEMPTS:
                    raise
                time.sleep(2.0 * attempt)

    def cpus(self) -> int:
        return max(1, int(self.ray.cluster_resources().get("CPU", 1)))

    def close(self) -> None:
        if self.owned and self.ray.is_initialized():
            self.ray.shutdown()


def _gist(exc: BaseException) -> str:
    """One line: the message's first line, and its last when the first only introduces a
    remote traceback (Ray Client's "Initialization failure from server:")."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    return lines[0] if len(lines) == 1 or not lines[0].endswith(":") else f"{lines[0]} {lines[-1]}"


def _errors_to_stderr(ray: Any) -> None:
    """Ray prints the cluster's error messages ("a worker died...") on the driver's stdout,
    where kb writes its JSON: send them to stderr (a private hook; left alone if it moved)."""
    module = getattr(getattr(ray, "_private", None), "worker", None)
    original = getattr(module, "print_to_stdstream", None)
    if original is None or getattr(original, "kb_stderr", False):
        return

    def to_stderr(data: dict, ignore_prefix: bool) -> None:
        original({**data, "is_err": True}, ignore_prefix)

    to_stderr.kb_stderr = True  # type: ignore[attr-defined]
    module.print_to_stdstream = to_stderr


class Workers:
    """One RemoteWorker actor per cluster CPU; a dead one is replaced on demand."""

    def __init__(self, cluster: Cluster, job: ParseJob, timeout_s: float, model: ShippedModel):
        ray = cluster.ray
        self.ray = ray
        self._model_ref = ray.put(model)  # once for the run, whatever the number of actors
        actor = ray.remote(num_cpus=1, memory=WORKER_MEMORY_BYTES, max_restarts=0)(RemoteWorker)
        # Inside a list, so Ray does not resolve it as an argument: the raylet admits a task only
        # when its arguments fit a share of the object store, and it kept counting the pinned
        # model of an actor whose driver was killed, so a rerun's actors waited for memory forever.
        # The actor fetches the model itself (`ray.get`), never gated on that count.
        self._make = lambda: actor.remote(job, timeout_s, [self._model_ref])
        self.actors = [self._make() for _ in range(cluster.cpus())]

    def replace(self, index: int, dead: Any) -> Any:
        """A new actor in slot `index` unless `dead` was replaced already."""
        if self.actors[index] is dead:
            self.ray.kill(dead, no_restart=True)
            self.actors[index] = self._make()
        return self.actors[index]

    def close(self) -> None:
        try:
            refs = [actor.close.remote() for actor in self.actors]
            self.ray.wait(refs, num_returns=len(refs), timeout=5)
        except Exception:  # noqa: BLE001 - dead actors or a lost connection: kill below
            pass
        for actor in self.actors:
            try:
                self.ray.kill(actor, no_restart=True)
            except Exception:  # noqa: BLE001 - a dead actor or a lost connection: nothing to stop
                pass
        self.actors = []


def _dead_worker_errors(ray: Any) -> tuple[type[BaseException], ...]:
    names = ("RayActorError", "ActorDiedError", "ActorUnavailableError", "WorkerCrashedError")
    return tuple(getattr(ray.exceptions, name) for name in names if hasattr(ray.exceptions, name))


# ---- the actor ---------------------------------------------------------------------------------


class RemoteWorker:
    """Lives on a cluster node for the whole run: the model written once to its temp dir and
    loaded once, a parser process with the local limits, files parsed from temp copies."""

    def __init__(self, job: ParseJob, timeout_s: float, model_ref: list[Any]):
        import ray

        model: ShippedModel = ray.get(model_ref[0])
        self.home = _scratch_dir()
        model_dir = self.home / "model"
        model_dir.mkdir()
        for name, data in model.files.items():
            (model_dir / name).write_bytes(data)
        self.embedder = None
        if model.info is not None:
            from kb_search.embedding.embedder import Embedder

            self.embedder = Embedder(replace(model.info, path=model_dir), threads=1)
        tokenizer = str(model_dir / TOKENIZER) if TOKENIZER in model.files else None
        job = replace(job, tokenizer_path=tokenizer if job.tokenizer_path else None)
        self.parser = ParserPool(job, workers=1, timeout_s=timeout_s)

    def pid(self) -> int:
        return os.getpid()

    def close(self) -> None:
        """Stop the parser process and remove the temp dir (a killed actor's goes when the
        next actor on its node starts)."""
        self.parser.close()
        shutil.rmtree(self.home, ignore_errors=True)

    def process(
        self, key: int, name: str, data: bytes, known: list[str]
    ) -> tuple[Outcome, dict[str, bytes]]:
        """Parse one file (its bytes, under its own name: the name decides the format) and
        embed the chunk texts whose hashes are not `known` to have a stored vector."""
        folder = self.home / "files" / str(key)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        try:
            path.write_bytes(data)
            outcomes = list(self.parser.parse([(key, path)]))
            outcome = outcomes[0] if outcomes else Outcome(key, "error", reason="no outcome")
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        vectors: dict[str, bytes] = {}
        if outcome.status == "ok" and self.embedder is not None and outcome.document:
            vectors = embed_new(self.embedder, outcome.document, set(known))
        return outcome, vectors

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.embedder.embed_passages(texts)


def embed_new(embedder: Any, document: ParsedDocument, known: set[str]) -> dict[str, bytes]:
    """Vectors of a document's chunk texts by content hash, the `known` ones left out."""
    from kb_search.store.vectors import to_blob

    texts = {embedding_text(document.title, chunk) for chunk in document.chunks}
    todo = sorted(t for t in texts if content_hash(t) not in known)
    if not todo:
        return {}
    vectors = embedder.embed_passages(todo)
    return {content_hash(text): to_blob(vector) for text, vector in zip(todo, vectors)}


def _scratch_dir() -> Path:
    """This process's temp dir; those of processes that died (a killed actor) are removed."""
    base = Path(tempfile.gettempdir()) / f"kb-ray-{os.getuid() if hasattr(os, 'getuid') else 0}"
    base.mkdir(parents=True, exist_ok=True)
    for old in base.iterdir():
        if old.name.isdigit() and not _alive(int(old.name)):
            shutil.rmtree(old, ignore_errors=True)
    home = base / str(os.getpid())
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir()
    atexit.register(shutil.rmtree, home, True)
    return home


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


# ---- the driver --------------------------------------------------------------------------------


@dataclass
class _Task:
    key: int
    path: Path
    stored_path: str  # the document's key in the DB (its old vectors are reused)
    attempt: int = 1
    slot: int = 0
    actor: Any = None  # the handle it went to (its slot may hold a replacement by now)
    stalled: bool = False  # its worker was killed for answering nothing while it ran
    dispatched: bool = False  # reported as sent (once, whatever the attempts)


def ray_executor(
    conn: Connection, options: AddOptions, shipped_model: Callable[[], ShippedModel]
) -> RayExecutor:
    """The executor `--executor ray` names (ingest.executor.EXECUTORS); a one-line error,
    before anything is written, when Ray is not installed."""
    require_ray()
    return RayExecutor(conn, options, shipped_model)


class RayExecutor:
    """The Executor for `--executor ray`: parses and embeds on the cluster; the writer takes
    the vectors computed there (`vectors`), embedding locally only what it still lacks."""

    def __init__(
        self,
        conn: Connection,
        options: AddOptions,
        model: Callable[[], ShippedModel],
    ):
        self.conn = conn
        self.options = options
        # a worker silent this long is hung: killed, its file sent again (0: no limit)
        self.stall_s: float = options.executor.option("stall_s", STALL_S)
        self._model = model
        self.shipped: ShippedModel | None = None
        self.computed: dict[str, bytes] = {}  # content hash -> vector, until written
        self._stopped: list[Any] = []  # actors killed for answering nothing (see _stop_stalled)

    def vectors(self, local: VectorSource | None) -> VectorSource | None:
        return RemoteVectors(self, local)

    def parse(
        self, todo: dict[int, Candidate], dispatched: Callable[[int], None] | None = None
    ) -> Iterator[Outcome]:
        tasks = [_Task(key, c.item.path, c.record.path) for key, c in todo.items()]
        if tasks:  # else no cluster is started or joined
            yield from self._run(tasks, dispatched)

    def _job(self) -> ParseJob:
        o = self.options
        return ParseJob(o.settings, o.max_file_bytes, o.ocr, o.tokenizer_path, o.memory_mb)

    def _run(
        self, tasks: list[_Task], dispatched: Callable[[int], None] | None
    ) -> Iterator[Outcome]:
        self.shipped = self._model()
        cluster = Cluster(self.options.executor.option("address"))
        workers: Workers | None = None
        try:
            workers = Workers(cluster, self._job(), self.options.timeout_s, self.shipped)
            yield from self._stream(cluster.ray, workers, deque(tasks), dispatched)
        finally:
            if workers is not None:
                workers.close()
            cluster.close()

    def _stream(
        self,
        ray: Any,
        workers: Workers,
        queue: deque[_Task],
        dispatched: Callable[[int], None] | None,
    ) -> Iterator[Outcome]:
        running: dict[Any, _Task] = {}
        load = [0] * len(workers.actors)
        # When each slot's actor last answered (or took a call while it had none): calls run one
        # at a time in an actor, so an actor silent for longer than the stall limit is hung.
        busy_since: dict[int, float] = {}
        checked = time.monotonic()
        lost = _dead_worker_errors(ray)

        def submit() -> Outcome | None:
            """Send the next file to the least busy actor; an Outcome when it cannot go."""
            task = queue.popleft()
            try:
                data = read_user_file(task.path)
            except OSError as exc:
                return Outcome(task.key, "error", reason=f"cannot read file: {exc.strerror}")
            task.slot = min(range(len(load)), key=load.__getitem__)
            task.actor = workers.actors[task.slot]
            if not any(t.actor is task.actor for t in running.values()):
                busy_since[task.slot] = time.monotonic()  # idle until now (or just replaced)
            ref = task.actor.process.remote(task.key, task.path.name, data, self._known(task))
            running[ref] = task
            load[task.slot] += 1
            if dispatched is not None and not task.dispatched:
                dispatched(task.key)
            task.dispatched = True
            return None

        def fill() -> Iterator[Outcome]:
            while queue and min(load) < IN_FLIGHT_PER_WORKER:
                refused = submit()
                if refused is not None:
                    yield refused

        yield from fill()
        while running:
            ready, _ = ray.wait(list(running), num_returns=1, timeout=WAIT_TICK_S)
            for ref in ready:
                task = running.pop(ref)
                load[task.slot] -= 1
                if task.actor is workers.actors[task.slot]:
                    busy_since[task.slot] = time.monotonic()  # it answered
                outcome = self._result(ray, ref, task, lost, workers, queue)
                if outcome is not None:
                    yield outcome
            if time.monotonic() - checked >= WAIT_TICK_S:  # also while others keep answering
                checked = time.monotonic()
                self._stop_stalled(ray, workers, running, busy_since)
            yield from fill()

    def _stop_stalled(
        self,
        ray: Any,
        workers: Workers,
        running: dict[Any, _Task],
        busy_since: dict[int, float],
    ) -> None:
        """Kill each actor that has answered nothing for the stall limit: its calls then come
        back as a lost worker's do. The file it was on counts an attempt; the files queued
        behind it are sent again as they were."""
        limit = self.stall_s
        if limit <= 0:
            return  # 0: no limit
        now = time.monotonic()
        for slot, since in busy_since.items():
            actor = workers.actors[slot]
            calls = [t for t in running.values() if t.actor is actor]
            if now - since < limit or not calls or self._was_stopped(actor):
                continue
            log = logging.getLogger(__name__)
            try:
                ray.kill(actor, no_restart=True)
            except Exception as exc:  # noqa: BLE001 - dead, or unreachable: try again next tick
                log.warning("Ray worker silent for %.1f s, not killed yet: %s", now - since, exc)
                continue
            calls[0].stalled = True  # the first sent of its calls still out: the one it is on
            self._stopped.append(actor)
            log.warning(
                "Ray worker silent for %.1f s on %s: killed, its files sent again",
                now - since,
                calls[0].path,
            )

    def _was_stopped(self, actor: Any) -> bool:
        return any(stopped is actor for stopped in self._stopped)

    def _result(
        self,
        ray: Any,
        ref: Any,
        task: _Task,
        lost: tuple[type[BaseException], ...],
        workers: Workers,
        queue: deque[_Task],
    ) -> Outcome | None:
        """The task's Outcome, or None when its worker died and the file was sent again."""
        try:
            outcome, vectors = ray.get(ref)
        except lost as exc:
            workers.replace(task.slot, task.actor)
            if not task.stalled and self._was_stopped(task.actor):
                queue.appendleft(replace(task))  # queued behind the stalled call: not its doing
                return None
            if task.stalled and task.attempt >= ATTEMPTS:
                limit = self.stall_s
                reason = f"Ray worker silent for {limit:g} s, {ATTEMPTS} times on this file"
                return Outcome(task.key, "error", reason=reason)
            if task.attempt >= ATTEMPTS:
                why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                reason = f"Ray worker died {ATTEMPTS} times on this file ({why})"
                return Outcome(task.key, "error", reason=reason)
            queue.appendleft(replace(task, attempt=task.attempt + 1, stalled=False))
            return None
        except ray.exceptions.RayError as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return Outcome(task.key, "error", reason=f"Ray task failed: {first}")
        self.computed.update(vectors)
        outcome.key = task.key
        return outcome

    def _known(self, task: _Task) -> list[str]:
        """Hashes of the chunk texts the document had that have a stored vector: a changed
        file re-embeds only its changed chunks, as in a local run."""
        table = self._table_name()
        if table is None:
            return []
        from kb_search.store.vectors import hashes_with_vectors

        return hashes_with_vectors(self.conn, table, task.stored_path)

    def _table_name(self) -> str | None:
        from kb_search.store import vectors as tables

        if self.shipped is None or self.shipped.info is None:
            return None
        table = tables.table_for(self.conn, self.shipped.info.name)
        if table is None or not tables.table_exists(self.conn, table):
            return None
        return table.name


class RemoteVectors:
    """The writer's VectorSource under Ray: stored vectors of identical texts first (as
    `ChunkEmbedder` does), then those the actors computed, so that a document is written with
    its vectors when the cluster embedded them; what still lacks one (a race with another
    writer, no model on the cluster) is embedded by the local source afterwards (`fill`)."""

    def __init__(self, executor: RayExecutor, local: VectorSource | None):
        self.executor = executor
        self.local = local
        self._table: str | None = None

    def stored_for(
        self, conn: Connection, docs: list[ParsedDocument]
    ) -> list[dict[str, list[bytes | None]]]:
        shipped = self.executor.shipped
        if shipped is None or shipped.info is None:
            return self.local.stored_for(conn, docs) if self.local else [{} for _ in docs]
        from kb_search.store.vectors import vectors_by_hash
        from kb_search.vectors.binding import bind

        if self._table is None:
            self._table = bind(conn, shipped.info).name
        texts = [[embedding_text(d.title, c) for c in d.chunks] for d in docs]
        hashes = [[content_hash(t) for t in doc_texts] for doc_texts in texts]
        wanted = sorted({h for doc in hashes for h in doc})
        found = vectors_by_hash(conn, self._table, wanted)
        computed = self.executor.computed
        found.update({h: computed[h] for h in wanted if h not in found and h in computed})
        for h in wanted:
            computed.pop(h, None)
        return [{self._table: [found.get(h) for h in doc_hashes]} for doc_hashes in hashes]

    def pending(self, conn: Connection) -> int:
        return self.local.pending(conn) if self.local else 0

    def fill(
        self,
        conn: Connection,
        on_more: Callable[[int], None] | None = None,
        on_embedded: Callable[[int], None] | None = None,
        limit: int | None = None,
    ) -> int:
        return self.local.fill(conn, on_more, on_embedded, limit) if self.local else 0


# ---- kb reindex --------------------------------------------------------------------------------


class RemoteEmbedder:
    """A TextEmbedder whose `embed_passages` splits the texts across the cluster's actors
    (for `kb reindex --executor ray`); a batch whose actor dies, or answers nothing for
    `stall_s`, is sent again."""

    def __init__(
        self,
        cluster: Cluster,
        model: ShippedModel,
        timeout_s: float = 120.0,
        stall_s: float = STALL_S,
    ):
        if model.info is None:
            raise ValueError("a remote embedder needs a provisioned model")
        self.info = model.info
        self.cluster = cluster
        job = ParseJob(settings=_no_chunking(), max_bytes=0)
        self.workers = Workers(cluster, job, timeout_s, model)
        self.stall_s = stall_s
        self._lost = _dead_worker_errors(cluster.ray)

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def dim(self) -> int:
        return self.info.dim

    @property
    def max_tokens(self) -> int:
        return self.info.max_tokens

    @property
    def parallel(self) -> int:
        return len(self.workers.actors)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_passages([text])[0]

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        ray = self.cluster.ray
        count = len(self.workers.actors)
        size = -(-len(texts) // count) if texts else 1
        parts = [texts[i : i + size] for i in range(0, len(texts), size)]
        results: list[Any] = [None] * len(parts)
        for attempt in range(1, ATTEMPTS + 1):
            refs = {
                i: self.workers.actors[i % count].embed.remote(part)
                for i, part in enumerate(parts)
                if results[i] is None
            }
            started = time.monotonic()
            for i, ref in refs.items():
                # Every batch was sent at `started`, and they run side by side (0: no limit).
                left = max(0.0, self.stall_s - (time.monotonic() - started))
                try:
                    results[i] = ray.get(ref, timeout=left if self.stall_s > 0 else None)
                except (*self._lost, ray.exceptions.GetTimeoutError):
                    if attempt == ATTEMPTS:
                        raise
                    actor = self.workers.actors[i % count]
                    self.workers.replace(i % count, actor)  # kills a silent one
            if all(r is not None for r in results):
                break
        if not results:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.vstack(results)

    def close(self) -> None:
        self.workers.close()


def _no_chunking() -> Any:
    from kb_search.parsed import ChunkSettings

    return ChunkSettings()
