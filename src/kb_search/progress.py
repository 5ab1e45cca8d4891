"""How long jobs report progress: the core calls these; a face (CLI, server) shows them.

A job has `total` steps (files, chunks, documents, bytes). Its *work* is what the ETA is
computed from. An ingest has two phases: the keyword phase parses and writes each file (its
work: the bytes of text still to parse, a PDF page counting as `PDF_PAGE_WORK` bytes of text
that take `PDF_PAGE_PARSE` times as long as plain text to read), then the embedding phase
embeds the chunks written without a vector. Before the embedding phase the number of chunks it
will embed is estimated from the text still to parse (the chunks per byte measured so far,
else `PRIOR_CHUNK_BYTES`). Steps done without work (files skipped as unchanged) finish
instantly and do not distort the rates.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

PDF_PAGE_WORK = 3000  # bytes of extracted text on a typical PDF page
PDF_PAGE_PARSE = 4.0  # a PDF page (layout, reading order) costs this many pages of text to parse
PRIOR_CHUNK_BYTES = 600.0  # bytes of text per chunk before a job has measured its own
PRIOR_PARSE_BYTES_PER_S = 200_000.0  # plain text parsed and written per second, before measured


class Progress(Protocol):
    def start(self, total: int, unit: str = "files") -> None:
        """The job has `total` steps of `unit`."""

    def add_work(self, amount: float, pages: int = 0) -> None:
        """The job's remaining work grew by `amount` (bytes of text to parse), `pages` of them
        PDF pages (`PDF_PAGE_WORK` bytes each)."""

    def current(self, name: str) -> None:
        """What is being worked on now (a file name); "" when nothing in particular."""

    def advance(self, n: int = 1, work: float = 0.0, chunks: int = 0) -> None:
        """`n` more steps are done, with `work` of the job's work and `chunks` chunks written
        (keyword-searchable)."""

    def read(self, n: int = 1) -> None:
        """`n` more files were read (parsed, or found unchanged)."""

    def await_embedding(self, n: int) -> None:
        """`n` more chunks are written without a vector (or were found so): the embedding
        phase will embed them."""

    def embedding(self, n: int) -> None:
        """The embedding phase found `n` more chunks to embed (the first call starts it)."""

    def embedded(self, n: int) -> None:
        """`n` more chunks got their vectors."""

    def embed_sample(self, n: int, seconds: float) -> None:
        """During the keyword phase, `n` chunks were embedded in `seconds` (a measurement of
        this machine's embedding speed)."""


class NoProgress:
    def start(self, total: int, unit: str = "files") -> None:
        pass

    def add_work(self, amount: float, pages: int = 0) -> None:
        pass

    def current(self, name: str) -> None:
        pass

    def advance(self, n: int = 1, work: float = 0.0, chunks: int = 0) -> None:
        pass

    def read(self, n: int = 1) -> None:
        pass

    def await_embedding(self, n: int) -> None:
        pass

    def embedding(self, n: int) -> None:
        pass

    def embedded(self, n: int) -> None:
        pass

    def embed_sample(self, n: int, seconds: float) -> None:
        pass


@dataclass
class Tally:
    """A Progress that keeps count: what a display shows and what an interrupted job says
    ("interrupted after 37/183 files"). The ETA is the keyword phase's (work left at the rate
    measured since the first unit of work, else the prior) plus the embedding phase's (chunks
    to embed at the rate measured since it began, else `prior_embed_rate`)."""

    total: int = 0
    unit: str = "files"
    done: int = 0
    work_total: float = 0.0
    work_done: float = 0.0
    pages_total: int = 0  # PDF pages among the work
    chunks: int = 0  # written
    name: str = ""
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    started: float | None = None
    work_started: float | None = None
    files_read: int = 0
    # Work per second to assume before this job has measured its own (an estimate at the
    # start, text bytes parsed and written); None: no ETA until the first file is done.
    prior_rate: float | None = None
    # Chunks embedded per second to assume before the embedding phase has measured its own;
    # None: the embedding phase is left out of the ETA until it starts.
    prior_embed_rate: float | None = None
    awaiting: int = 0  # chunks written without a vector, or found so
    awaiting_before: int = 0  # of which found before this job wrote anything
    embeds: bool = False  # whether an embedding phase is expected at all
    embed_total: int = 0
    embed_done: int = 0
    embed_started: float | None = None
    keyword_seconds: float | None = None  # how long the keyword phase took
    sampled: int = 0  # chunks embedded during the keyword phase (a speed measurement)
    sample_rate: float | None = None  # their chunks per second

    def start(self, total: int, unit: str = "files") -> None:
        self.total, self.unit = total, unit
        self.started = self.clock()

    def add_work(self, amount: float, pages: int = 0) -> None:
        if amount > 0:
            self.work_total += amount
            self.pages_total += pages
            if self.work_started is None:
                self.work_started = self.clock()
                self.awaiting_before = self.awaiting

    def current(self, name: str) -> None:
        self.name = name

    def read(self, n: int = 1) -> None:
        self.files_read += n

    def advance(self, n: int = 1, work: float = 0.0, chunks: int = 0) -> None:
        self.done += n
        self.work_done += work
        self.chunks += chunks

    def await_embedding(self, n: int) -> None:
        self.embeds = True
        self.awaiting += n

    def embedding(self, n: int) -> None:
        if self.embed_started is None:
            self.embed_started = self.clock()
            self.keyword_seconds = self.elapsed
        self.embeds = True
        self.embed_total += n

    def embedded(self, n: int) -> None:
        self.embed_done += n

    def embed_sample(self, n: int, seconds: float) -> None:
        self.sampled += n
        if seconds > 0:
            self.sample_rate = n / seconds

    @property
    def phase(self) -> str:
        return "embedding" if self.embed_started is not None else "keyword"

    @property
    def elapsed(self) -> float:
        return 0.0 if self.started is None else self.clock() - self.started

    def _working_seconds(self) -> float:
        since = self.work_started if self.work_started is not None else self.started
        end = self.embed_started if self.embed_started is not None else self.clock()
        return 0.0 if since is None else max(0.0, end - since)

    def chunk_rate(self) -> float | None:
        """Chunks per second in the phase at hand: written, then embedded."""
        if self.embed_started is not None:
            seconds = self.clock() - self.embed_started
            return self.embed_done / seconds if self.embed_done and seconds > 0 else None
        seconds = self._working_seconds()
        return self.chunks / seconds if self.chunks and seconds > 0 else None

    def keyword_eta(self) -> float | None:
        """Seconds until every file is written (keyword-searchable); 0 once they are."""
        if self.embed_started is not None:
            return 0.0
        seconds = self._working_seconds()
        if self.work_total > 0:
            left = max(0.0, self.work_total - self.work_done)
            if self.work_done > 0 and seconds > 0:
                return left * seconds / self.work_done
            if self.prior_rate is None:
                return None
            pages = self.pages_total * PDF_PAGE_WORK
            text = max(0.0, self.work_total - pages)
            return (text + pages * PDF_PAGE_PARSE) / self.prior_rate * (
                left / self.work_total
            )
        if self.done <= 0 or not self.total or seconds <= 0:
            return None if self.total and self.done < self.total else 0.0
        return max(0, self.total - self.done) * seconds / self.done

    def chunks_to_embed(self) -> float:
        """How many chunks the embedding phase embeds: known once it began, else those written
        without a vector plus the text still to parse at the chunks per byte seen so far."""
        if self.embed_started is not None:
            return float(self.embed_total)
        left = max(0.0, self.work_total - self.work_done)
        written = self.awaiting - self.awaiting_before
        per_byte = written / self.work_done if self.work_done > 0 else 1 / PRIOR_CHUNK_BYTES
        return max(0.0, self.awaiting - self.sampled) + left * per_byte

    def embed_eta(self) -> float | None:
        """Seconds the embedding phase still needs (0 when there is none)."""
        if not self.embeds:
            return 0.0
        left = max(0.0, self.chunks_to_embed() - self.embed_done)
        if self.embed_started is not None and self.embed_done > 0:
            seconds = self.clock() - self.embed_started
            return left * seconds / self.embed_done
        if left == 0:
            return 0.0
        rate = self.sample_rate or self.prior_embed_rate
        return left / rate if rate else None

    def eta(self) -> float | None:
        """Seconds left in all (both phases), or None until there is a rate to go by."""
        keyword, embed = self.keyword_eta(), self.embed_eta()
        if keyword is None:
            return None
        if embed is None:
            return None if self.embed_started is not None else keyword
        return keyword + embed

    def position(self) -> str:
        """ "37/183 files"; in the embedding phase "183/183 files, 1204/3310 chunks embedded"."""
        text = f"{self.done}/{self.total} {self.unit}" if self.total else f"{self.done} {self.unit}"
        if self.embed_started is not None:
            text += f", {self.embed_done}/{self.embed_total} chunks embedded"
        return text
