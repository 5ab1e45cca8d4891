"""`kb watch` at a terminal: one line per batch, Ctrl-C that never cuts a batch in half."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kb_search.cli.app import App, Interrupted
from kb_search.profile import Profile
from kb_search.sanitize import printable

if TYPE_CHECKING:
    from kb_search.ingest.watch import WatchBatch, WatchPlan


@contextmanager
def graceful_stop(stop: threading.Event, say: str) -> Iterator[list[int]]:
    """The first SIGINT/SIGTERM sets `stop` (the batch in progress is finished); a second one
    interrupts at once. Yields a list that receives the signal number."""
    received: list[int] = []

    def handler(signum: int, frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        received.append(signum)
        stop.set()
        click.echo(say, err=True)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def run_watch(app: App, paths: list[Path] | None, workers: int | None, fmt: str | None) -> None:
    kb = app.kb(Profile.SERVE)  # the model, once loaded, serves every batch
    stop = threading.Event()

    def on_batch(batch: WatchBatch) -> None:
        if batch.changed or batch.initial:
            app.emit(batch.to_dict(), fmt, lambda: printable(batch.line(app.show_path)))

    def on_ready(plan: WatchPlan) -> None:
        click.echo(f"{printable(plan.line(app.show_path))}; Ctrl-C to stop.", err=True)

    say = "Stopping after the batch in progress (Ctrl-C again to stop now)."
    with graceful_stop(stop, say) as received:
        kb.watch(paths, on_batch, stop, workers=workers, on_ready=on_ready)
    if received:
        error = Interrupted("Stopped watching; every batch was synced whole.")
        error.exit_code = 128 + received[0]
        raise error
