"""The progress line of long jobs: a Tally (the core's Progress) drawn by Rich on stderr, only
when stderr is a terminal. It says what is true: the phase (keyword: files N/M written and
searchable by keyword; embedding: chunks N/M with vectors), the file being worked on, chunks
per second and an ETA from the work left (bytes of text and PDF pages, then chunks)."""

from __future__ import annotations

from typing import Any

from kb_search.progress import PRIOR_PARSE_BYTES_PER_S, Tally

REFRESH_PER_SECOND = 4
# Chunks per second the fp32 MiniLM embeds before a run has timed it: the geometric mean of
# the embedding phases of 8 recorded `kb add`s on a shared two-core machine (4.1-31.7; 25 on
# two idle laptop cores); an int8 model is ~2.4x faster. Only the first estimate rests on it:
# the first batch embedded (beside the parser, or in the embedding phase) replaces it.
FP32_CHUNKS_PER_S = 9.0
INT8_SPEEDUP = 2.4
LONG_JOB_S = 600  # from here on, say how to make it faster


def clock(seconds: float | None) -> str:
    """ "3:07", "1:02:09"; "?" while unknown."""
    if seconds is None:
        return "?"
    seconds = int(seconds + 0.5)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def status_text(tally: Tally, room: int | None = None) -> str:
    """The line's text, e.g. "12% · keyword 37/183 files, searchable in 0:40 · embedding
    320/~3310 chunks · 41.2 chunks/s · ETA 3:07 · report.pdf", when scans wait "... · 12 pages
    to OCR next", then "40% · keyword done · OCR 3/12 pages · embedding 0/~3310 chunks · ETA
    2:30 · scan.pdf", then "80% · keyword done · embedding 1204/3310 chunks · 30.1 chunks/s ·
    ETA 1:10" (the percentage is of the time: elapsed against elapsed + ETA; the ETA is every
    phase's). In `room` characters the file name, the files read and the speed go first, then
    the ETA moves up to follow the percentage: an 80-column terminal cut it off."""
    if tally.phase == "embedding":
        parts = [
            f"{fraction(tally):.0%}",
            "keyword done" if tally.total else "",
            f"embedding {tally.chunks_embedded()}",
        ]
        parts = [p for p in parts if p]
    elif tally.phase == "ocr":
        parts = [
            f"{fraction(tally):.0%}",
            "keyword done",
            f"OCR {tally.ocr_done}/{tally.ocr_total} pages",
        ]
        if tally.embeds:
            expected = round(tally.chunks_to_embed() + tally.sampled)
            parts.append(f"embedding {tally.sampled}/~{expected} chunks")
    else:
        parts = [f"{fraction(tally):.0%}", tally.position()]
        if tally.embeds and tally.unit == "files":
            parts[1] = f"keyword {parts[1]}"
            keyword = tally.keyword_eta()
            if keyword is not None and tally.done < tally.total:
                parts[1] += f", searchable in {clock(keyword)}"
            expected = round(tally.chunks_to_embed() + tally.sampled)
            parts.append(f"embedding {tally.sampled}/~{expected} chunks")
        if tally.ocr_waiting:
            parts.append(f"{tally.ocr_waiting} pages to OCR next")
        if tally.files_read > tally.done and tally.unit == "files":
            parts.append(f"{tally.files_read} read")
    rate = tally.chunk_rate()
    if rate is not None and tally.unit != "chunks":
        parts.append(f"{rate:.1f} chunks/s")
    if tally.phase != "keyword" or (tally.total and tally.done < tally.total):
        parts.append(f"ETA {clock(tally.eta())}")
    if tally.name:
        from kb_search.sanitize import printable

        parts.append(printable(tally.name))
    return _fitted(parts, room)


def _fitted(parts: list[str], room: int | None) -> str:
    """The parts joined; when they overflow `room`, the least needed left out first (the file
    in hand, the files read, the speed), then the ETA put right after the percentage."""
    text = " · ".join(parts)
    if room is None or len(text) <= room:
        return text
    droppable = (
        lambda p: p.endswith(" chunks/s"),
        lambda p: p.endswith(" read"),
        lambda p: not p[:1].isdigit() and not p.startswith(("keyword", "embedding", "OCR", "ETA")),
    )
    for is_it in reversed(droppable):  # the file name first, then the files read, the speed
        parts = [p for p in parts if not is_it(p)]
        text = " · ".join(parts)
        if len(text) <= room:
            return text
    eta = [p for p in parts if p.startswith("ETA ")]
    rest = [p for p in parts if not p.startswith("ETA ")]
    return " · ".join(rest[:1] + eta + rest[1:])


def expectations(tally: Tally) -> list[str]:
    """What a person should expect of a job that will take a while, said once at its start:
    its size, a first estimate, that Ctrl-C is safe, and (when long) how to go faster."""
    seconds = tally.eta()
    if seconds is None or seconds < 20:
        return []
    megabytes = tally.work_total / 1e6
    keyword = tally.keyword_eta()
    when = (
        f"searchable by keyword in roughly {clock(keyword)}, fully embedded in {clock(seconds)}"
        if tally.embeds
        else f"roughly {clock(seconds)}"
    )
    lines = [
        f"{tally.total - tally.done} files to read, about {megabytes:.1f} MB of text: {when}"
        " (a first estimate; the line below refines it). Ctrl-C is safe: written files are"
        " kept, rerun to resume."
    ]
    if seconds >= LONG_JOB_S:
        lines.append(
            "To go faster: embedding is most of the time; an int8 model embeds ~2.4x faster"
            " (`kb reindex --model all-MiniLM-L6-v2@int8`, a small quality cost), a GPU or an"
            " embedding server much faster (docs/models.md); --workers N adds parser processes."
        )
    return lines


def fraction(tally: Tally) -> float:
    """How far the job is: of its time when a phase follows the keyword phase (embedding,
    OCR) and there is an estimate, else of its work."""
    if tally.embeds or tally.ocr_waiting or tally.phase == "ocr":
        left = tally.eta()
        if left is not None:
            spent = tally.elapsed
            return min(1.0, spent / (spent + left)) if spent + left > 0 else 0.0
    if tally.work_total > 0:
        return min(1.0, tally.work_done / tally.work_total)
    return min(1.0, tally.done / tally.total) if tally.total else 0.0


class ProgressView(Tally):
    """Counts always (an interrupted job reports where it was); draws only when `console` is
    given (a terminal). Use as a context manager."""

    def __init__(self, label: str, console: Any | None = None, model: str = ""):
        super().__init__()
        self.label = label
        self.console = console
        self.interrupted = "rerun to resume"  # what to do after Ctrl-C
        self._live: Any = None
        self.prior_rate = PRIOR_PARSE_BYTES_PER_S
        speedup = INT8_SPEEDUP if model.endswith("@int8") else 1
        self.prior_embed_rate = FP32_CHUNKS_PER_S * speedup
        self._announced = False

    def add_work(self, amount: float, pages: int = 0) -> None:
        super().add_work(amount, pages)
        if self.console is not None and not self._announced and self.unit == "files":
            self._announced = True
            for line in expectations(self):
                self.console.print(line, highlight=False, markup=False)

    def start(self, total: int, unit: str = "files") -> None:
        super().start(total, unit)
        if self.console is not None and self._live is None:
            from rich.live import Live

            self._live = Live(
                get_renderable=self._renderable,
                console=self.console,
                refresh_per_second=REFRESH_PER_SECOND,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()

    def _renderable(self) -> Any:
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        # Short of the full width: a "^C" the terminal echoes after a full-width line would
        # wrap it, and the line could then not be cleared.
        grid = Table.grid(padding=(0, 1), expand=True)
        grid.width = max(30, self.console.width - 3)
        grid.add_column(no_wrap=True)
        grid.add_column(width=20, no_wrap=True)
        grid.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
        bar = ProgressBar(total=1000, completed=int(fraction(self) * 1000), width=20)
        room = grid.width - len(self.label) - 20 - 2
        grid.add_row(Text(self.label, style="bold"), bar, Text(status_text(self, room)))
        return grid

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def __enter__(self) -> ProgressView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
