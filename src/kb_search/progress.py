"""How long jobs report progress: the core calls these; a face (CLI, server) shows them.

A job has `total` steps (files, chunks, documents, bytes). Its *work* is what the ETA is
computed from: for ingestion, the bytes of text still to be processed, where a PDF page counts
as `PDF_PAGE_WORK` bytes (a page of text; a 600-page PDF is not "one file"). Steps done without
work (files skipped as unchanged) finish instantly and do not distort the rate.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

PDF_PAGE_WORK = 3000  # bytes of extracted text on a typical PDF page


class Progress(Protocol):
    def start(self, total: int, unit: str = "files") -> None:
        """The job has `total` steps of `unit`."""

    def add_work(self, amount: float) -> None:
        """The job's remaining work grew by `amount` (bytes of text to parse and embed)."""

    def current(self, name: str) -> None:
        """What is being worked on now (a file name); "" when nothing in particular."""

    def advance(self, n: int = 1, work: float = 0.0, chunks: int = 0) -> None:
        """`n` more steps are done, with `work` of the job's work and `chunks` chunks."""

    def read(self, n: int = 1) -> None:
        """`n` more files were read (parsed, or found unchanged): they are stored later, when
        their batch is embedded, so a job's first minute is not "0 files"."""


class NoProgress:
    def start(self, total: int, unit: str = "files") -> None:
        pass

    def add_work(self, amount: float) -> None:
        pass

    def current(self, name: str) -> None:
        pass

    def advance(self, n: int = 1, work: float = 0.0, chunks: int = 0) -> None:
        pass

    def read(self, n: int = 1) -> None:
        pass


@dataclass
class Tally:
    """A Progress that keeps count: what a display shows and what an interrupted job says
    ("interrupted after 37/183 files"). The ETA comes from work when there is any, else
    from steps; both rates are measured from the first unit of work, not from the start."""

    total: int = 0
    unit: str = "files"
    done: int = 0
    work_total: float = 0.0
    work_done: float = 0.0
    chunks: int = 0
    name: str = ""
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    started: float | None = None
    work_started: float | None = None
    files_read: int = 0
    # Work per second to assume before this job has measured its own (an estimate at the
    # start); None: no ETA until the first batch is done.
    prior_rate: float | None = None

    def start(self, total: int, unit: str = "files") -> None:
        self.total, self.unit = total, unit
        self.started = self.clock()

    def add_work(self, amount: float) -> None:
        if amount > 0:
            self.work_total += amount
            if self.work_started is None:
                self.work_started = self.clock()

    def current(self, name: str) -> None:
        self.name = name

    def read(self, n: int = 1) -> None:
        self.files_read += n

    def advance(self, n: int = 1, work: float = 0.0, chunks: int = 0) -> None:
        self.done += n
        self.work_done += work
        self.chunks += chunks

    @property
    def elapsed(self) -> float:
        return 0.0 if self.started is None else self.clock() - self.started

    def _working_seconds(self) -> float:
        since = self.work_started if self.work_started is not None else self.started
        return 0.0 if since is None else self.clock() - since

    def chunk_rate(self) -> float | None:
        """Chunks written per second since the work began."""
        seconds = self._working_seconds()
        return self.chunks / seconds if self.chunks and seconds > 0 else None

    def eta(self) -> float | None:
        """Seconds left, or None until there is a rate to go by (measured, else the prior)."""
        seconds = self._working_seconds()
        if seconds <= 0:
            if self.prior_rate and self.work_total > self.work_done:
                return (self.work_total - self.work_done) / self.prior_rate
            return None
        if self.work_total > 0:
            left = max(0.0, self.work_total - self.work_done)
            if self.work_done <= 0:
                return left / self.prior_rate if self.prior_rate else None
            return left * seconds / self.work_done
        if self.done <= 0 or not self.total:
            return None
        return max(0, self.total - self.done) * seconds / self.done

    def position(self) -> str:
        """ "37/183 files"."""
        return f"{self.done}/{self.total} {self.unit}" if self.total else f"{self.done} {self.unit}"
