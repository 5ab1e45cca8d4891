"""Where the heavy part of ingestion runs: the seam between the pipeline and its workers.

The pipeline walks, checks and writes (one writer, one transaction per document); an
Executor parses the changed files, and may embed their chunks where it parses them. The
local process pool is the default; `ray_executor.RayExecutor` fans the work out on a Ray
cluster (imported only when asked for: `import ray` costs seconds). What crosses the seam is
defined here: `AddOptions` (how to ingest, with the face's `ExecutorChoice`), `Candidate` (a
file to parse) and `VectorSource` (what the writer embeds with).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kb_search.config import Config
from kb_search.errors import UserInputError
from kb_search.executor_choice import ExecutorChoice
from kb_search.ingest.workers import Outcome, ParseJob, ParserPool, make_counter, parse_one
from kb_search.parsed import ChunkSettings
from kb_search.registry import Registry

if TYPE_CHECKING:
    from kb_search.ingest.walk import Found
    from kb_search.parsed import ParsedDocument
    from kb_search.store.db import Connection
    from kb_search.store.documents import DocumentRecord


@dataclass(frozen=True)
class AddOptions:
    settings: ChunkSettings = field(default_factory=ChunkSettings)
    tags: list[str] = field(default_factory=list)
    doc_type: str | None = None
    max_file_bytes: int = 20_000_000
    follow_symlinks: bool = False
    ocr: str = "auto"
    tokenizer_path: str | None = None  # the model's tokenizer.json: exact chunk sizes (Models)
    workers: int = 1  # parser processes; 0 parses in this process
    timeout_s: float = 120.0  # per file
    memory_mb: int = 4096  # per parser process; 0 = no cap
    retry_failed: bool = False  # parse files that failed before even when they did not change
    include_generated: bool = False  # index minified, generated and lock files too
    executor: ExecutorChoice = ExecutorChoice()  # where files are parsed (EXECUTORS below)
    # The local executor queues PDF pages that need OCR and reads them after the keyword phase
    # (ingest/ocr_phase.py); other executors read them where they parse.
    ocr_later: bool = True


def chunk_settings(config: Config) -> ChunkSettings:
    """The chunk sizes the `chunking.*` settings ask for."""
    return ChunkSettings(
        max_tokens=config["chunking.max_tokens"], min_tokens=config["chunking.min_tokens"]
    )


def add_options(
    config: Config,
    workers: int | None = None,
    executor: ExecutorChoice | None = None,
    **overrides: Any,
) -> AddOptions:
    """The ingestion options every writing command uses (`add`, `sync`, the git hook) from the
    `ingestion.*` and `chunking.*` settings; `executor`: the face's choice (default: the
    configured one)."""
    return AddOptions(
        executor=executor or ExecutorChoice.configured(config),
        settings=chunk_settings(config),
        max_file_bytes=int(config["ingestion.max_file_mb"] * 1_000_000),
        follow_symlinks=config["ingestion.follow_symlinks"],
        include_generated=overrides.pop("include_generated", False)
        or config["ingestion.include_generated"],
        ocr=config["ingestion.enable_ocr"],
        workers=config["ingestion.workers"] if workers is None else workers,
        timeout_s=config["ingestion.timeout_s"],
        memory_mb=config["ingestion.max_memory_mb"],
        **overrides,
    )


class VectorSource(Protocol):
    """The vectors the writer stores (see vectors.writer.ChunkEmbedder): with a document, only
    those that need no model run here (`stored_for`: stored vectors of identical texts, or
    vectors an executor computed next to the parser; None where there is none); afterwards
    `fill` embeds every chunk still without one (the first `limit`), calling `on_more(n)` as
    n more chunks are found to embed and `on_embedded(n)` as n get their vectors."""

    def stored_for(
        self, conn: Connection, docs: list[ParsedDocument]
    ) -> list[dict[str, list[bytes | None]]]: ...

    def pending(self, conn: Connection) -> int: ...

    def fill(
        self,
        conn: Connection,
        on_more: Callable[[int], None] | None = None,
        on_embedded: Callable[[int], None] | None = None,
        limit: int | None = None,
    ) -> int: ...


@dataclass
class Candidate:
    """A file that changed (or is new) and must be parsed."""

    item: Found
    record: DocumentRecord
    existed: bool
    work: float = 0.0  # for the ETA: bytes of text it is expected to hold
    forget: bool = False  # kb remembers it as skipped; a success must clear that
    # Indexed already with the same bytes, read again only because an older kb (or other
    # chunking settings) chunked it: counted apart from updates, as `kb sync` counts it.
    rechunk: bool = False


class Executor(Protocol):
    def parse(
        self, todo: dict[int, Candidate], dispatched: Callable[[int], None] | None = None
    ) -> Iterator[Outcome]:
        """An Outcome per file of `todo`, as each finishes; `dispatched(key)` as each starts."""

    def vectors(self, local: VectorSource | None) -> VectorSource | None:
        """What the writer embeds with: `local` (the driver's model, loaded on first use), or
        a source that takes vectors the executor computed next to the parser."""


# A factory takes (conn, options, shipped_model: a callable giving the model to send to remote
# workers) and returns an Executor; its own settings are `options.executor.options`.
ExecutorFactory = Callable[[Any, AddOptions, Callable[[], Any]], Executor]

# Executors by the name `--executor` / `ingestion.executor` gives, imported only when chosen
# (Ray's is not imported by a local run).
EXECUTORS: Registry[ExecutorFactory] = Registry(
    "executor",
    {
        "local": "kb_search.ingest.executor:local_executor",
        "ray": "kb_search.ingest.ray_executor:ray_executor",
    },
    UserInputError,
)


def make_executor(
    name: str, conn: Any, options: AddOptions, shipped_model: Callable[[], Any]
) -> Executor:
    return EXECUTORS.load(name)(conn, options, shipped_model)


def local_executor(conn: Any, options: AddOptions, shipped_model: Callable[[], Any]) -> Executor:
    return LocalExecutor(options)


class LocalExecutor:
    """Parser processes on this machine (ingest/workers.py); the writer embeds."""

    def __init__(self, options: AddOptions):
        self.options = options

    def parse(
        self,
        todo: dict[int, Candidate],
        dispatched: Callable[[int], None] | None = None,
        idle: Callable[[float], bool] | None = None,
    ) -> Iterator[Outcome]:
        """`idle`: see `ParserPool.parse` (never called when parsing in this process)."""
        return parse_outcomes(todo, self.options, dispatched, idle)

    def vectors(self, local: VectorSource | None) -> VectorSource | None:
        return local


def parse_outcomes(
    todo: dict[int, Candidate],
    options: AddOptions,
    dispatched: Callable[[int], None] | None = None,
    idle: Callable[[float], bool] | None = None,
) -> Iterator[Outcome]:
    """Parse in worker processes (time limit, memory cap), or in-process with workers=0.
    `dispatched(key)` is called as each file starts parsing, `idle` while workers parse."""
    job = ParseJob(
        settings=options.settings,
        max_bytes=options.max_file_bytes,
        ocr=options.ocr,
        tokenizer_path=options.tokenizer_path,
        memory_mb=options.memory_mb,
        ocr_later=options.ocr_later,
    )
    items = [(key, c.item.path) for key, c in todo.items()]
    if not items:
        return
    if options.workers <= 0:
        count = make_counter(job.tokenizer_path)
        for key, path in items:
            if dispatched:
                dispatched(key)
            outcome = parse_one(path, job, count)
            outcome.key = key
            yield outcome
        return
    with ParserPool(
        job, workers=min(options.workers, len(items)), timeout_s=options.timeout_s
    ) as pool:
        yield from pool.parse(items, dispatched, idle)
