"""The progress line of long jobs: a Tally (the core's Progress) drawn by Rich on stderr, only
when stderr is a terminal. It says what is true: files N/M, the file being worked on, chunks
per second and an ETA from the work left (bytes of text; pages for PDFs)."""

from __future__ import annotations

from typing import Any

from kb_search.progress import Tally

REFRESH_PER_SECOND = 4


def clock(seconds: float | None) -> str:
    """ "3:07", "1:02:09"; "?" while unknown."""
    if seconds is None:
        return "?"
    seconds = int(seconds + 0.5)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def status_text(tally: Tally) -> str:
    """The line's text, e.g. "12% · 37/183 files · 41.2 chunks/s · ETA 3:07 · report.pdf"
    (the percentage is of the work: bytes of text, PDF pages)."""
    parts = [f"{fraction(tally):.0%}", tally.position()]
    rate = tally.chunk_rate()
    if rate is not None and tally.unit != "chunks":
        parts.append(f"{rate:.1f} chunks/s")
    if tally.total and tally.done < tally.total:
        parts.append(f"ETA {clock(tally.eta())}")
    if tally.name:
        parts.append(tally.name)
    return " · ".join(parts)


def fraction(tally: Tally) -> float:
    if tally.work_total > 0:
        return min(1.0, tally.work_done / tally.work_total)
    return min(1.0, tally.done / tally.total) if tally.total else 0.0


class ProgressView(Tally):
    """Counts always (an interrupted job reports where it was); draws only when `console` is
    given (a terminal). Use as a context manager."""

    def __init__(self, label: str, console: Any | None = None):
        super().__init__()
        self.label = label
        self.console = console
        self.interrupted = "rerun to resume"  # what to do after Ctrl-C
        self._live: Any = None

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
        grid.add_row(Text(self.label, style="bold"), bar, Text(status_text(self)))
        return grid

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def __enter__(self) -> ProgressView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
