"""How long jobs report progress: the core calls these; a face (CLI, server) shows them.

A job has `total` steps (files, chunks, documents, bytes). Its *work* is what the ETA is
computed from. An ingest has two phases, estimated apart and added:

- the keyword phase parses and writes each file. Its work is counted in two units, bytes of
  text and PDF pages (a page costs `PDF_PAGE_PARSE` bytes of text to parse); its speed is
  measured as files finish (`Rate`), with the prior kept as a second or 64 KB of measuring
  (`PRIOR_PARSE_WORTH_S`, `PRIOR_PARSE_WORTH`), and the time already spent on the file in
  hand is credited. A file that fails or holds no text takes its work out of the total
  (`skip_work`), never into the speed.
- the embedding phase embeds every chunk written without a vector. Until it starts, its size is
  the chunks waiting plus those the work left will write (chunks per byte and per page, each
  measured as it runs, the prior kept as 64 KB or 5 pages of it) and its speed the one this
  index measured on its last run (`measured_before`), else the one of batches embedded during
  the keyword phase (`sharing_slowdown` times faster once the parser no longer shares the
  cores), else a prior; chunks embedded while files are still parsed shorten it. Once it runs,
  its own speed: chunks counted by the time they take in the embedder's sorted windows
  (`window_work`), per CPU-second of this process over the phase, times the share of the CPU the
  process gets now (`CpuRate`: a machine whose load changes shows within seconds); without the
  process's CPU time, the phase's speed and its recent one blended (`Rate`). The speed expected
  before the phase is kept as `EXPECTED_WORTH_S` seconds of measuring.

Between the two, when scanned PDF pages were queued for OCR (`await_ocr`), the OCR phase reads
them (`ocr`, `ocr_read`): its time is the pages left at the speed it measures, else
`PRIOR_OCR_PAGE_S`.

Steps done without work (files skipped as unchanged) finish instantly and do not distort the
rates. Every estimate is a function of the events and the clock: `bench/ingest_trace.py`
replays recorded runs through it.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

PDF_PAGE_WORK = 3000  # bytes of extracted text on a typical PDF page (a file's expected work)
# What a PDF page costs to parse and write, in bytes of Markdown: at the prior below, 50 pages
# a second (`kb add` of 35 PDFs, 677 pages, on the shared two-core machine: 52 pages/s with
# one batch embedded alongside; 128 others: 44/s). Pages of other collections cost more or
# less (24 PDFs of a PDF library's test files: 13/s): the run measures its own speed.
PDF_PAGE_PARSE = 6_000.0
PRIOR_CHUNK_BYTES = 500.0  # bytes of text per chunk before a job has measured its own
PRIOR_PAGE_CHUNKS = 3.5  # chunks per PDF page before a job has measured its own (3.3-3.9)
# Plain text parsed and written per second before a job has measured its own (Markdown on
# two busy cores, one parser process, slices of md_argocd_docs: 50-480 KB/s, median 285).
PRIOR_PARSE_BYTES_PER_S = 300_000.0
# The priors weigh as a little measuring of the job's own: its first files are few, small
# and slowed by start-up (a 459-byte changelog in 0.7 s, 2 chunks, read as a 5 MB folder's
# speed and chunk count, made the first estimate 7.5x the truth). The parse speed's prior
# weighs as this much work (bytes of text; a PDF page is PDF_PAGE_PARSE) or as this many
# seconds of it, whichever is less: a prior far faster or slower than the machine gives way
# after a few files.
PRIOR_PARSE_WORTH = 64_000.0
PRIOR_PARSE_WORTH_S = 1.0
PRIOR_TEXT_WORTH_BYTES = 64_000.0  # of text, for the chunks per byte
PRIOR_PAGES_WORTH = 5  # PDF pages, for the chunks per page
# Seconds RapidOCR takes per scanned page before a job has measured its own (the shared PDFs'
# scans on two busy cores: 37 pages in ~360 s).
PRIOR_OCR_PAGE_S = 10.0
# The embedder sorts each window of `EMBED_WINDOW` chunks (vectors/writer.FILL_BATCH) by
# length and embeds it `EMBED_BATCH` at a time (embedding/embedder.py): a window's first chunks, the
# short ones, go faster than its last. `WINDOW_TIME[k]`: the share of a window's time spent
# when k 16ths of it are done (median of 67 windows in 8 recorded runs, bench/ingest_trace.py).
# The embedding speed is measured in chunks weighted by it (`window_work`), so that a window
# begun does not read as a faster machine.
EMBED_WINDOW = 256
EMBED_BATCH = 16  # chunks the embedder runs at once (embedding/embedder.py)
WINDOW_TIME = (0.0, 0.036, 0.075, 0.124, 0.173, 0.229, 0.285, 0.351, 0.414,
               0.475, 0.537, 0.614, 0.684, 0.759, 0.835, 0.913, 1.0)  # fmt: skip
# The recent embedding speed is measured over the last this many chunks, and weighs this much
# against the run's (see `Rate`).
RECENT_CHUNKS = 512.0
RECENT_WEIGHT = 0.25
# What the embedding speed was expected to be (`Tally.expected_embed_rate`) counts as this
# many seconds of the embedding phase's own measuring.
EXPECTED_WORTH_S = 2.0
# On a shared machine the embedding speed moves with the load, while the chunks a CPU-second
# embeds do not: the embedding phase's speed is its chunks per CPU-second of this process
# (all its threads: the model's), measured over the whole phase, times the share of the CPU
# the process got over the last `CPU_SHARE_S` seconds, `SHARE_RECENT_WEIGHT` against the
# phase's (`CpuRate`). Without a CPU clock, the blended speed of `Rate`. Recorded on the
# shared two-core machine (load 5-9): 16.3-18.0 chunks per CPU-second over whole runs,
# Markdown and PDF, while the share moved 0.16-0.81 (docs/results.md). Chosen on four
# recordings (one steady, two with 50-60 s bursts of load, one whose load came and stayed):
# samples within ±30% after the first minute 58% -> 85%; four held out 81% -> 78% (a load that
# stays is followed, a dip that passes pulls the estimate the wrong way while it lasts).
CPU_SHARE_S = 10.0
SHARE_RECENT_WEIGHT = 0.75


def sharing_slowdown(cores: int | None = None) -> float:
    """How much slower a batch embeds beside one busy parser process than alone: the model
    gets the cores less the parser's (on two cores 2x). A single batch on a shared machine is
    a rough measure: recorded runs on two cores gave 0.6x to 2.8x (median 1.4x); 2x put the
    most estimates within ±30% after the first minute (a 183-PDF run 16% -> 51%; the others
    alike)."""
    cores = cores or os.cpu_count() or 2
    return cores / (cores - 1) if cores > 1 else 2.0


class Progress(Protocol):
    def start(self, total: int, unit: str = "files") -> None:
        """The job has `total` steps of `unit`."""

    def add_work(self, amount: float, pages: int = 0) -> None:
        """The job's remaining work grew by `amount` (bytes of text to parse), `pages` of them
        PDF pages (`PDF_PAGE_WORK` bytes each)."""

    def skip_work(self, amount: float, pages: int = 0) -> None:
        """Work announced with `add_work` that will not be done after all (a file failed or
        held no text): it leaves the job's total."""

    def measured_before(self, parse_rate: float | None, embed_rate: float | None) -> None:
        """What this index measured on its last run (`work_units` parsed per second, chunks
        embedded per second; None: not measured): the speeds to assume until this job
        measures its own."""

    def current(self, name: str) -> None:
        """What is being worked on now (a file name); "" when nothing in particular."""

    def advance(self, n: int = 1, work: float = 0.0, chunks: int = 0, pages: int = 0) -> None:
        """`n` more steps are done, with `work` of the job's work (`pages` of it PDF pages)
        and `chunks` chunks written (keyword-searchable)."""

    def read(self, n: int = 1) -> None:
        """`n` more files were read (parsed, or found unchanged)."""

    def await_embedding(self, n: int) -> None:
        """`n` more chunks are written without a vector (or were found so): the embedding
        phase will embed them."""

    def embedding(self, n: int) -> None:
        """The embedding phase found `n` more chunks to embed (the first call starts it)."""

    def embedded(self, n: int) -> None:
        """`n` more chunks got their vectors; a negative `n` takes back chunks counted of a
        batch that was not saved after all (stopped before its transaction committed), so the
        count is what the index keeps."""

    def embed_sample(self, n: int, seconds: float) -> None:
        """During the keyword phase, `n` chunks were embedded in `seconds` (a measurement of
        this machine's embedding speed)."""

    def await_ocr(self, pages: int, path: str = "") -> None:
        """`pages` more scanned PDF pages were queued (or found queued) for the OCR phase;
        with `path`, those of that file: a later call for the same file replaces its count
        (queued again, or 0: read, failed or written without scanned pages)."""

    def ocr(self, pages: int) -> None:
        """The OCR phase found `pages` more pages to read (the first call starts it)."""

    def ocr_read(self, pages: int) -> None:
        """The OCR phase read `pages` more pages (their document is written)."""


class NoProgress:
    def start(self, total: int, unit: str = "files") -> None:
        pass

    def add_work(self, amount: float, pages: int = 0) -> None:
        pass

    def skip_work(self, amount: float, pages: int = 0) -> None:
        pass

    def measured_before(self, parse_rate: float | None, embed_rate: float | None) -> None:
        pass

    def current(self, name: str) -> None:
        pass

    def advance(self, n: int = 1, work: float = 0.0, chunks: int = 0, pages: int = 0) -> None:
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

    def await_ocr(self, pages: int, path: str = "") -> None:
        pass

    def ocr(self, pages: int) -> None:
        pass

    def ocr_read(self, pages: int) -> None:
        pass


def window_work(embedded: int, total: int | None = None) -> float:
    """`embedded` chunks of the embedding phase as the chunks of whole windows whose time they
    took: n chunks into a window count as its share of time done (`WINDOW_TIME`). The last
    window of a phase of `total` chunks holds only what is left, sorted among itself: its
    share is of its own size, so all `total` chunks done are `total`."""
    embedded = max(0, embedded)
    whole, part = divmod(embedded, EMBED_WINDOW)
    size = EMBED_WINDOW
    if total is not None and total % EMBED_WINDOW and embedded >= total - total % EMBED_WINDOW:
        whole, size = total // EMBED_WINDOW, total % EMBED_WINDOW
        part = min(embedded - whole * EMBED_WINDOW, size)
    position = part * (len(WINDOW_TIME) - 1) / size
    k = min(int(position), len(WINDOW_TIME) - 2)
    share = WINDOW_TIME[k] + (WINDOW_TIME[k + 1] - WINDOW_TIME[k]) * (position - k)
    return whole * EMBED_WINDOW + share * size


def work_units(work: float, pages: int) -> float:
    """Work in bytes of plain text to parse: a PDF page costs `PDF_PAGE_PARSE`."""
    return max(0.0, work - pages * PDF_PAGE_WORK) + pages * PDF_PAGE_PARSE


@dataclass
class Rate:
    """An amount that grows from a start, and its speed: the whole run's since the start, and
    a recent one over the last `recent` of the amount. On a shared machine the speed moves
    within a run (recorded: 11 -> 0.9 -> 4 chunks/s); `per_second` blends the two, in time
    per unit, `RECENT_WEIGHT` to the recent one."""

    started: float | None = None
    last: float | None = None
    total: float = 0.0
    recent: float = 0.0  # the amount the recent speed is measured over (0: the run's only)
    points: deque[tuple[float, float]] = field(default_factory=deque, repr=False)

    def begin(self, at: float) -> None:
        if self.started is None:
            self.started = self.last = at
            self.points.append((at, 0.0))

    def add(self, at: float, amount: float) -> None:
        self.begin(at)
        self.last, self.total = at, self.total + amount
        self.points.append((at, self.total))
        # keep the points the recent speed needs (the newest one at least `recent` back)
        while len(self.points) > 2 and self.points[1][1] <= self.total - self.recent:
            self.points.popleft()

    def mean_per_second(self) -> float | None:
        """Amount per second from the start to the last addition; None until measured."""
        if self.started is None or self.last is None or self.last <= self.started:
            return None
        return self.total / (self.last - self.started) if self.total > 0 else None

    def recent_per_second(self) -> float | None:
        """Amount per second over the last `recent` of it (the whole run's until there is
        that much)."""
        if not self.recent or len(self.points) < 2:
            return self.mean_per_second()
        (t0, a0), (t1, a1) = self.points[0], self.points[-1]
        return (a1 - a0) / (t1 - t0) if t1 > t0 and a1 > a0 else self.mean_per_second()

    def per_second(self) -> float | None:
        """The speed to expect of the rest: the run's and the recent one blended (in seconds
        per unit); None until measured."""
        mean, recent = self.mean_per_second(), self.recent_per_second()
        if mean is None or recent is None or not self.recent:
            return mean
        return 1 / (RECENT_WEIGHT / recent + (1 - RECENT_WEIGHT) / mean)


@dataclass
class CpuRate:
    """The embedding phase by the CPU time it takes: work per CPU-second over the whole phase
    (a property of the machine and the model), and CPU-seconds per second over the last
    `CPU_SHARE_S` (what the machine's load leaves the process), blended with the phase's
    (`SHARE_RECENT_WEIGHT`). Read up to now, the CPU clock also shows the batch in hand
    being embedded, and a process that gets less of the CPU before its batch is done."""

    points: deque[tuple[float, float, float]] = field(default_factory=deque, repr=False)

    def add(self, at: float, cpu: float, work: float) -> None:
        """At `at` (wall clock) the process had used `cpu` CPU-seconds and done `work`."""
        self.points.append((at, cpu, work))
        # keep the first point (the whole phase's) and those the recent share needs
        while len(self.points) > 3 and self.points[2][0] <= at - CPU_SHARE_S:
            del self.points[1]

    def per_cpu_second(self) -> float | None:
        """Work per CPU-second over the phase; None until a batch is done."""
        if len(self.points) < 2:
            return None
        (_, c0, w0), (_, c1, w1) = self.points[0], self.points[-1]
        return (w1 - w0) / (c1 - c0) if c1 > c0 and w1 > w0 else None

    def share(self, now: float, cpu: float) -> float | None:
        """CPU-seconds per second the process gets, up to `now` when its CPU clock reads
        `cpu`; None until measured."""
        # a copy (made in one step): the progress display reads this from its own thread
        # while batches add points, and a deque changed under its iterator raises
        points = tuple(self.points)
        if not points:
            return None
        t0, c0, _ = points[0]
        since = next((p for p in reversed(points) if p[0] <= now - CPU_SHARE_S), None)
        t, c, _ = since or points[0]
        if now <= t or cpu <= c or now <= t0:
            return None
        recent, whole = (cpu - c) / (now - t), (cpu - c0) / (now - t0)
        return SHARE_RECENT_WEIGHT * recent + (1 - SHARE_RECENT_WEIGHT) * whole

    def in_hand(self, cpu: float) -> float:
        """The work the CPU time since the last batch was done stands for."""
        per_cpu = self.per_cpu_second()
        return 0.0 if per_cpu is None else max(0.0, cpu - self.points[-1][1]) * per_cpu


@dataclass
class Tally:
    """A Progress that keeps count: what a display shows and what an interrupted job says
    ("interrupted after 37/183 files"), and the ETA of both phases (see the module's
    docstring), from the events and `clock` only."""

    total: int = 0
    unit: str = "files"
    done: int = 0
    work_total: float = 0.0
    work_done: float = 0.0
    pages_total: int = 0  # PDF pages among the work
    pages_done: int = 0
    chunks: int = 0  # written
    page_chunks: int = 0  # of which from PDF pages
    name: str = ""
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    # CPU-seconds this process has used (all threads), read with `clock`: by default
    # `time.process_time` with the real clock, none with another one (a test's, a replay's)
    cpu_clock: Callable[[], float | None] | None = field(default=None, repr=False)
    started: float | None = None
    work_started: float | None = None
    files_read: int = 0
    # Bytes of plain text parsed and written per second to assume before this job has
    # measured its own; None: no ETA until the first file is done.
    prior_rate: float | None = None
    # Chunks embedded per second to assume before any were embedded by this job; None: the
    # embedding phase is left out of the ETA until it starts.
    prior_embed_rate: float | None = None
    embed_rate_known: bool = False  # prior_embed_rate was measured by this index's last run
    # how much faster the embedding phase runs than a batch embedded beside the parser
    sample_slowdown: float = field(default_factory=sharing_slowdown)
    awaiting: int = 0  # chunks written without a vector, or found so
    awaiting_before: int = 0  # of which found before this job wrote anything
    embeds: bool = False  # whether an embedding phase is expected at all
    embed_total: int = 0
    embed_done: int = 0
    embed_started: float | None = None
    keyword_seconds: float | None = None  # how long the keyword phase took
    sampled: int = 0  # chunks embedded during the keyword phase
    sample_seconds: float = 0.0  # the time they took
    first_sample_at: float | None = None
    progress_units: Rate = field(default_factory=Rate, repr=False)  # keyword work done
    # the embedding phase, in `window_work`
    progress_embedded: Rate = field(default_factory=lambda: Rate(recent=RECENT_CHUNKS), repr=False)
    embedded_cpu: CpuRate = field(default_factory=CpuRate, repr=False)  # the same, by CPU time
    ocr_waiting: int = 0  # pages queued for the OCR phase
    ocr_queued: dict[str, int] = field(default_factory=dict, repr=False)  # of them, by file
    ocr_total: int = 0  # pages the OCR phase reads
    ocr_done: int = 0
    ocr_started: float | None = None
    progress_ocr: Rate = field(default_factory=Rate, repr=False)  # pages read by OCR

    def __post_init__(self) -> None:
        if self.cpu_clock is None and self.clock is time.monotonic:
            self.cpu_clock = time.process_time

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
                self.progress_units.begin(self.work_started)

    def skip_work(self, amount: float, pages: int = 0) -> None:
        self.work_total = max(self.work_done, self.work_total - amount)
        self.pages_total = max(self.pages_done, self.pages_total - pages)

    def measured_before(self, parse_rate: float | None, embed_rate: float | None) -> None:
        if parse_rate:
            self.prior_rate = parse_rate
        if embed_rate:
            self.prior_embed_rate, self.embed_rate_known = embed_rate, True

    def current(self, name: str) -> None:
        self.name = name

    def read(self, n: int = 1) -> None:
        self.files_read += n

    def advance(self, n: int = 1, work: float = 0.0, chunks: int = 0, pages: int = 0) -> None:
        self.done += n
        self.work_done += work
        self.pages_done += pages
        self.chunks += chunks
        if pages:
            self.page_chunks += chunks
        if work > 0 and self.work_started is not None:
            self.progress_units.add(self.clock(), work_units(work, pages))

    def await_embedding(self, n: int) -> None:
        self.embeds = True
        self.awaiting += n

    def embedding(self, n: int) -> None:
        if self.embed_started is None:
            self.embed_started = self.clock()
            if self.keyword_seconds is None:
                self.keyword_seconds = self.elapsed
            self.progress_embedded.begin(self.embed_started)
            self._cpu_point()
        self.embeds = True
        self.embed_total += n

    def embedded(self, n: int) -> None:
        before, self.embed_done = self.embed_done, self.embed_done + n
        if self.embed_started is not None and n > 0:
            total = self.embed_total
            work = window_work(self.embed_done, total) - window_work(before, total)
            self.progress_embedded.add(self.clock(), work)
            self._cpu_point()

    def _cpu_point(self) -> None:
        cpu = self._cpu()
        if cpu is not None:
            self.embedded_cpu.add(self.clock(), cpu, self.progress_embedded.total)

    def embed_sample(self, n: int, seconds: float) -> None:
        if self.first_sample_at is None:
            self.first_sample_at = self.clock() - seconds
        self.sampled += n
        self.sample_seconds += max(0.0, seconds)

    def await_ocr(self, pages: int, path: str = "") -> None:
        if path:  # only files with pages waiting are kept: most files have none
            before = self.ocr_queued.pop(path, 0)
            if pages:
                self.ocr_queued[path] = pages
            pages -= before
        self.ocr_waiting = max(0, self.ocr_waiting + pages)

    def ocr(self, pages: int) -> None:
        if self.ocr_started is None:
            self.ocr_started = self.clock()
            self.keyword_seconds = self.elapsed
            self.progress_ocr.begin(self.ocr_started)
        self.ocr_total += pages

    def ocr_read(self, pages: int) -> None:
        self.ocr_done += pages
        self.progress_ocr.add(self.clock(), pages)

    @property
    def phase(self) -> str:
        if self.embed_started is not None:
            return "embedding"
        return "keyword" if self.ocr_started is None else "ocr"

    def _keyword_end(self) -> float | None:
        return self.ocr_started if self.ocr_started is not None else self.embed_started

    @property
    def elapsed(self) -> float:
        return 0.0 if self.started is None else self.clock() - self.started

    def _working_seconds(self) -> float:
        since = self.work_started if self.work_started is not None else self.started
        end = self._keyword_end()
        end = self.clock() if end is None else end
        return 0.0 if since is None else max(0.0, end - since)

    def chunk_rate(self) -> float | None:
        """Chunks per second in the phase at hand: written, then embedded."""
        if self.embed_started is not None:
            return self._cpu_embed_rate() or self.progress_embedded.per_second()
        if self.ocr_started is not None:
            return None
        seconds = self._working_seconds()
        return self.chunks / seconds if self.chunks and seconds > 0 else None

    def keyword_eta(self) -> float | None:
        """Seconds until every file is written (keyword-searchable); 0 once they are."""
        if self._keyword_end() is not None:
            return 0.0
        if self.work_total > 0:
            left = work_units(
                max(0.0, self.work_total - self.work_done),
                max(0, self.pages_total - self.pages_done),
            )
            rate = self.progress_units.per_second()
            if rate is None:
                return None if self.prior_rate is None else left / self.prior_rate
            if self.prior_rate:
                done = self.progress_units.total
                seconds = min(PRIOR_PARSE_WORTH_S, PRIOR_PARSE_WORTH / self.prior_rate)
                rate = (done + self.prior_rate * seconds) / (done / rate + seconds)
            # The file in hand has been worked on since the last one was done: credited up
            # to the time a file left takes on average.
            in_hand = self.clock() - (self.progress_units.last or self.clock())
            average = left / rate / max(1, self.total - self.done)
            return max(0.0, left / rate - min(in_hand, average))
        seconds = self._working_seconds()
        if self.done <= 0 or not self.total or seconds <= 0:
            return None if self.total and self.done < self.total else 0.0
        return max(0, self.total - self.done) * seconds / self.done

    def chunks_to_embed(self) -> float:
        """How many chunks the embedding phase embeds: known once it began, else those written
        without a vector and not embedded yet, plus what the work left will write (chunks per
        byte and per page seen so far, at the share of written chunks that needed the model)."""
        if self.embed_started is not None:
            return float(self.embed_total)
        text_done = max(0.0, self.work_done - self.pages_done * PDF_PAGE_WORK)
        text_left = max(0.0, self.work_total - self.pages_total * PDF_PAGE_WORK - text_done)
        pages_left = max(0, self.pages_total - self.pages_done)
        text_chunks = self.chunks - self.page_chunks
        prior_bytes, prior_pages = PRIOR_TEXT_WORTH_BYTES, PRIOR_PAGES_WORTH
        per_byte = (text_chunks + prior_bytes / PRIOR_CHUNK_BYTES) / (text_done + prior_bytes)
        per_page = (self.page_chunks + prior_pages * PRIOR_PAGE_CHUNKS) / (
            self.pages_done + prior_pages
        )
        written = self.awaiting - self.awaiting_before
        needs_model = min(1.0, written / self.chunks) if self.chunks else 1.0
        coming = (text_left * per_byte + pages_left * per_page) * needs_model
        return max(0.0, self.awaiting - self.sampled) + coming

    def embed_rate(self) -> float | None:
        """Chunks embedded per second: the embedding phase's speed (with the speed expected
        before it, `expected_embed_rate`, as `EXPECTED_WORTH_S` seconds of it: its first
        batches are few and noisy), else the one expected."""
        expected = self.expected_embed_rate()
        measured = None
        if self.embed_started is not None:
            measured = self._cpu_embed_rate() or self.progress_embedded.per_second()
        if measured is None or not expected:
            return measured or expected
        done = self.progress_embedded.total
        return (done + expected * EXPECTED_WORTH_S) / (done / measured + EXPECTED_WORTH_S)

    def _cpu(self) -> float | None:
        return None if self.cpu_clock is None else self.cpu_clock()

    def _cpu_embed_rate(self) -> float | None:
        """Chunks (`window_work`) per second from the CPU time (`CpuRate`); None without it."""
        cpu = self._cpu()
        if cpu is None:
            return None
        per_cpu = self.embedded_cpu.per_cpu_second()
        share = self.embedded_cpu.share(self.clock(), cpu)
        return per_cpu * share if per_cpu and share else None

    def expected_embed_rate(self) -> float | None:
        """The embedding speed before the embedding phase measures its own: the one this
        index measured on its last run, else that of the batches embedded beside the parser
        (corrected: they share the cores with it), else the prior."""
        if self.embed_rate_known:
            return self.prior_embed_rate
        if self.sampled and self.sample_seconds > 0:
            return self.sampled / self.sample_seconds * self.sample_slowdown
        return self.prior_embed_rate

    def embed_eta(self) -> float | None:
        """Seconds the embedding phase still needs after the keyword phase (0 when there is
        none)."""
        if not self.embeds:
            return 0.0
        if self.embed_started is not None:
            left = max(0.0, self.embed_total - window_work(self.embed_done, self.embed_total))
        else:
            left = max(0.0, self.chunks_to_embed() - self.embed_done)
        if self.embed_started is None and self.first_sample_at is not None:
            # batches embedded alongside the parsing go on until the keyword phase ends
            alongside = self.sampled / max(1e-9, self.clock() - self.first_sample_at)
            left = max(0.0, left - alongside * (self.keyword_eta() or 0.0))
        if left == 0:
            return 0.0
        rate = self.embed_rate()
        if not rate:
            return None
        seconds = left / rate
        measured = self.progress_embedded
        if self.embed_started is not None and measured.last is not None:
            # the batch in hand has been embedded since the last one was done: credited up
            # to a batch, by the CPU time it took when known, else by the time since
            batch = window_work(self.embed_done + EMBED_BATCH, self.embed_total) - window_work(
                self.embed_done, self.embed_total
            )
            cpu = self._cpu() if self.embedded_cpu.per_cpu_second() else None
            if cpu is not None:
                seconds = max(0.0, seconds - min(self.embedded_cpu.in_hand(cpu), batch) / rate)
            else:
                in_hand = self.clock() - measured.last
                seconds = max(0.0, seconds - min(in_hand, EMBED_BATCH / rate))
        return seconds

    def ocr_eta(self) -> float:
        """Seconds the OCR phase still needs (0 when no page waits for it)."""
        if self.embed_started is not None:
            return 0.0
        left = self.ocr_waiting if self.ocr_started is None else self.ocr_total - self.ocr_done
        rate = self.progress_ocr.per_second()
        return max(0, left) / rate if rate else max(0, left) * PRIOR_OCR_PAGE_S

    def eta(self) -> float | None:
        """Seconds left in all (every phase), or None until there is a rate to go by."""
        keyword, embed = self.keyword_eta(), self.embed_eta()
        if keyword is None:
            return None
        keyword += self.ocr_eta()
        if embed is None:
            return None if self.embed_started is not None else keyword
        return keyword + embed

    def chunks_embedded(self) -> str:
        """ "1204/3310 chunks": embedded by this job (alongside the parsing too) of those it
        embeds."""
        return f"{self.embed_done + self.sampled}/{self.embed_total + self.sampled} chunks"

    def position(self) -> str:
        """ "37/183 files"; in the embedding phase "183/183 files, 1204/3310 chunks embedded"."""
        text = f"{self.done}/{self.total} {self.unit}" if self.total else f"{self.done} {self.unit}"
        if self.embed_started is not None:
            text += f", {self.chunks_embedded()} embedded"
        return text
