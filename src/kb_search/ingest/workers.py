"""Parsing in worker processes: a per-file time limit and memory cap, so one pathological
file (a PDF that hangs pdfium, an OCR page that eats memory) costs one error line, not the batch.

Results come back as they finish; the caller writes them (one writer, per-document
transactions). Workers exit by themselves when the parent dies (their pipe closes).
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from kb_search.parsed import ChunkSettings, EmptyFile, IngestError, NeedsOcr, ParsedDocument


@dataclass(frozen=True)
class ParseJob:
    """What a worker needs to parse files the way the main process would."""

    settings: ChunkSettings
    max_bytes: int
    ocr: str = "auto"
    tokenizer_path: str | None = None  # the model's tokenizer.json, for exact chunk sizes
    memory_mb: int = 0  # address-space cap per worker; 0 = none
    ocr_later: bool = False  # queue PDF pages that need OCR (ingest/ocr_phase.py)


@dataclass
class Outcome:
    """A parsed document, or why there is none ("empty" or "error")."""

    key: Any
    status: str  # "ok" | "empty" | "error" | "ocr" (no text layer: `ocr_pages` wait for OCR)
    document: ParsedDocument | None = None
    reason: str = ""
    ocr_pages: int = 0


def make_counter(tokenizer_path: str | None) -> Callable[[str], int]:
    from kb_search.chunking.tokens import count_tokens

    if not tokenizer_path:
        return count_tokens
    from tokenizers import Tokenizer

    from kb_search.formats.reader import scrub

    tokenizer = Tokenizer.from_file(tokenizer_path)
    tokenizer.no_truncation()
    tokenizer.no_padding()

    def count(text: str) -> int:
        return len(tokenizer.encode(scrub(text), add_special_tokens=False).ids)

    return count


def parse_one(path: Path, job: ParseJob, count: Callable[[str], int]) -> Outcome:
    from kb_search.ingest.parse import parse_file

    try:
        document = parse_file(
            path,
            job.settings,
            count=count,
            max_bytes=job.max_bytes,
            ocr=job.ocr,
            ocr_later=job.ocr_later,
        )
    except NeedsOcr as exc:
        return Outcome(None, "ocr", reason=str(exc), ocr_pages=len(exc.pages))
    except EmptyFile as exc:
        return Outcome(None, "empty", reason=str(exc))
    except IngestError as exc:
        return Outcome(None, "error", reason=str(exc) or type(exc).__name__)
    except MemoryError:
        return Outcome(None, "error", reason=f"memory limit exceeded ({job.memory_mb} MB)")
    except Exception as exc:  # noqa: BLE001 - a parser bug must not stop the batch
        first = str(exc).splitlines()[0] if str(exc) else ""
        return Outcome(None, "error", reason=f"parser failed: {type(exc).__name__}: {first}")
    if not document.chunks:
        return Outcome(None, "empty", reason="no text found")
    return Outcome(None, "ok", document=document)


def _limit_memory(megabytes: int) -> None:
    if megabytes <= 0:
        return
    try:
        import resource

        limit = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):
        pass  # not on this platform: the time limit still applies


def _worker_main(pipe: Connection, job: ParseJob) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    from kb_search.logs import route_inherited_logs

    route_inherited_logs()
    _limit_memory(job.memory_mb)
    count = make_counter(job.tokenizer_path)
    while True:
        try:
            message = pipe.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        key, path = message
        outcome = parse_one(Path(path), job, count)
        outcome.key = key
        try:
            pipe.send(outcome)
        except (BrokenPipeError, OSError):
            return


@dataclass
class _Slot:
    process: Any
    pipe: Connection
    task: tuple[Any, Path] | None = None
    started: float = 0.0


class ParserPool:
    """N worker processes; `parse(items)` yields an Outcome per item as each finishes."""

    def __init__(self, job: ParseJob, workers: int = 1, timeout_s: float = 120.0):
        self.job = job
        self.workers = max(1, workers)
        self.timeout_s = timeout_s
        self._ctx = multiprocessing.get_context("spawn")
        self._slots: list[_Slot] = []

    def _spawn(self) -> _Slot:
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(target=_worker_main, args=(child, self.job), daemon=True)
        with _sigint_ignored():
            process.start()
        child.close()
        return _Slot(process, parent)

    def _kill(self, slot: _Slot) -> None:
        slot.process.kill()
        slot.process.join(timeout=5)
        slot.pipe.close()

    def close(self) -> None:
        for slot in self._slots:
            try:
                slot.pipe.send(None)
            except (BrokenPipeError, OSError):
                pass
        for slot in self._slots:
            slot.process.join(timeout=2)
            if slot.process.is_alive():
                self._kill(slot)
        self._slots = []

    def __enter__(self) -> ParserPool:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is not None:  # interrupted or failed: do not wait for files in progress
            for slot in self._slots:
                self._kill(slot)
            self._slots = []
        self.close()

    def parse(
        self,
        items: Iterable[tuple[Any, Path]],
        dispatched: Callable[[Any], None] | None = None,
        idle: Callable[[float], bool] | None = None,
    ) -> Iterator[Outcome]:
        """Outcomes as they finish; `dispatched(key)` as each item goes to a worker;
        `idle(seconds)` when no outcome is ready (seconds: how long the newest file in hand
        has been parsed) may do some work of the caller's: True if it did."""
        pending = iter(items)
        exhausted = False
        self._slots = self._slots or [self._spawn() for _ in range(self.workers)]

        def feed(slot: _Slot) -> bool:
            nonlocal exhausted
            if exhausted:
                return False
            task = next(pending, None)
            if task is None:
                exhausted = True
                return False
            slot.task, slot.started = task, time.monotonic()
            slot.pipe.send((task[0], str(task[1])))
            if dispatched is not None:
                dispatched(task[0])
            return True

        for slot in self._slots:
            feed(slot)
        while any(slot.task for slot in self._slots):
            busy = [slot for slot in self._slots if slot.task]
            pipes = [slot.pipe for slot in busy]
            ready = wait(pipes, timeout=0)
            if not ready:
                parsing = time.monotonic() - max(slot.started for slot in busy)
                if idle is not None and idle(parsing):
                    # what finished while the caller worked is an outcome, not a timeout
                    ready = wait(pipes, timeout=0)
                else:
                    ready = wait(pipes, timeout=0.5)
            now = time.monotonic()
            for index, slot in enumerate(self._slots):
                if slot.task is None:
                    continue
                outcome = None
                if slot.pipe in ready:
                    try:
                        outcome = slot.pipe.recv()
                    except (EOFError, OSError):
                        slot.process.join(timeout=5)
                        code = slot.process.exitcode
                        outcome = Outcome(slot.task[0], "error", reason=_crash_reason(code))
                        self._kill(slot)
                        slot = self._slots[index] = self._spawn()
                elif now - slot.started > self.timeout_s:
                    outcome = Outcome(
                        slot.task[0], "error", reason=f"timed out after {self.timeout_s:.0f} s"
                    )
                    self._kill(slot)
                    slot = self._slots[index] = self._spawn()
                if outcome is not None:
                    slot.task = None
                    # The next file goes out before the caller gets this outcome: the worker
                    # parses it while the caller embeds and writes this one.
                    feed(slot)
                    yield outcome


class _sigint_ignored:
    """Ctrl-C is the parent's to handle: a worker started while SIGINT is ignored inherits
    that (Python keeps an inherited SIG_IGN), so an interrupted `kb add` prints no worker
    tracebacks; the parent stops the workers when it unwinds."""

    def __enter__(self) -> None:
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, signal.SIG_IGN)

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


def _crash_reason(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        return f"parser process crashed (signal {-exitcode})"
    return f"parser process died (exit code {exitcode})"
