"""`kb reindex`: (re-)embed chunks, resumably; switch the DB to another model."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kb_search.embedding import TextEmbedder
from kb_search.store.db import Connection, transaction
from kb_search.store.inventory import chunk_count
from kb_search.store.vectors import (
    clear_table,
    drop_other_tables,
    ensure_table,
    missing_chunk_ids,
)
from kb_search.text import plural
from kb_search.vectors.binding import switch_model
from kb_search.vectors.writer import embed_chunks

BATCH = 64


@dataclass
class ReindexSummary:
    model: str
    table: str
    total_chunks: int
    embedded: int = 0
    already_present: int = 0
    switched_from: str | None = None
    dropped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # Documents that left the index first, by reason: settings files an older kb read that
    # hold a password or token (`ingest.left_out.remove_stored_secrets`)
    excluded: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__, seconds=round(self.seconds, 2))

    def line(self) -> str:
        text = (
            f"Embedded {plural(self.embedded, 'chunk')} with {self.model}"
            f" ({self.already_present} already had vectors) in {self.seconds:.1f} s."
        )
        if self.switched_from:
            text += f" Switched from {self.switched_from}."
        if left := sum(self.excluded.values()):
            reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(self.excluded.items()))
            text += (
                f" {plural(left, 'document')} left the index, their files left out now: {reasons}."
            )
        return text


def reindex(
    conn: Connection,
    embedder: TextEmbedder,
    full: bool = False,
    on_start: Callable[[int], None] | None = None,
    on_batch: Callable[[int], None] | None = None,
    batch: int = BATCH,
) -> ReindexSummary:
    """Embed every chunk that has no vector for `embedder`'s model (all of them with `full`).

    Each batch (`batch` chunks: larger for an embedder that fans out) commits on its own, so
    an interrupted run resumes where it stopped. The DB switches to the new model, and other
    models' vectors are dropped, only once every chunk has its vector.
    """
    started = time.perf_counter()
    table = ensure_table(conn, embedder.name, embedder.dim).name
    if full:
        clear_table(conn, table)
    todo = missing_chunk_ids(conn, table)
    total = chunk_count(conn)
    summary = ReindexSummary(embedder.name, table, total, already_present=total - len(todo))
    if on_start:
        on_start(len(todo))
    while True:
        for start in range(0, len(todo), batch):
            summary.embedded += embed_chunks(conn, embedder, table, todo[start : start + batch])
            if on_batch:
                on_batch(len(todo[start : start + batch]))
        # Chunks written by a concurrent `kb add` meanwhile are caught by the next pass; the
        # model switch happens under the write lock once nothing is missing.
        with transaction(conn):
            todo = missing_chunk_ids(conn, table)
            if not todo:
                previous = switch_model(conn, embedder)
                break
    if previous != embedder.name:
        summary.switched_from = previous
    summary.dropped = drop_other_tables(conn, embedder.name)
    summary.seconds = time.perf_counter() - started
    return summary
