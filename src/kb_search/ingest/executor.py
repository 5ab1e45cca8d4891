"""Where the heavy part of ingestion runs: the seam between the pipeline and its workers.

The pipeline walks, checks and writes (one writer, one transaction per document); an
Executor parses the changed files, and may embed their chunks where it parses them. The
local process pool is the default; `ray_executor.RayExecutor` fans the work out on a Ray
cluster (imported only when asked for: `import ray` costs seconds).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kb_search.ingest.pipeline import AddOptions, Candidate, VectorSource
    from kb_search.ingest.workers import Outcome


class Executor(Protocol):
    def parse(
        self, todo: dict[int, Candidate], dispatched: Callable[[int], None] | None = None
    ) -> Iterator[Outcome]:
        """An Outcome per file of `todo`, as each finishes; `dispatched(key)` as each starts."""

    def vectors(self, local: VectorSource | None) -> VectorSource | None:
        """What the writer embeds with: `local` (the driver's model, loaded on first use), or
        a source that takes vectors the executor computed next to the parser."""


class LocalExecutor:
    """Parser processes on this machine (ingest/workers.py); the writer embeds."""

    def __init__(self, options: AddOptions):
        self.options = options

    def parse(
        self, todo: dict[int, Candidate], dispatched: Callable[[int], None] | None = None
    ) -> Iterator[Outcome]:
        from kb_search.ingest.pipeline import parse_outcomes

        return parse_outcomes(todo, self.options, dispatched)

    def vectors(self, local: VectorSource | None) -> VectorSource | None:
        return local
