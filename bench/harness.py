"""What every benchmark shares: its command line (the module docstring as help, `--data`), where
its data is, timing and the table it prints."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

DATA_ENV = "KB_BENCH_DATA"
ROOT = Path(__file__).resolve().parent.parent


def parser(doc: str | None) -> argparse.ArgumentParser:
    """A benchmark's argument parser: the docstring's first paragraph as its description, the
    rest (usage, method) after the options, and `--data`."""
    summary, _, details = (doc or "").partition("\n\n")
    made = argparse.ArgumentParser(
        description=" ".join(summary.split()),
        epilog=details,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    made.add_argument(
        "--data",
        type=Path,
        default=os.environ.get(DATA_ENV),
        help=f"folder of the shared data sets: a relative path that is not found as given is"
        f" looked up under it (default: ${DATA_ENV})",
    )
    return made


def parse(made: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse `argv`, each path argument looked up under `--data` when it is not found as given."""
    args = made.parse_args(argv)
    for name, value in vars(args).items():
        if name != "data":
            setattr(args, name, located(value, args.data))
    return args


def located(value: object, data: Path | None) -> object:
    if isinstance(value, list):
        return [located(item, data) for item in value]
    if isinstance(value, Path) and data is not None and not value.is_absolute():
        return value if value.exists() or not (data / value).exists() else data / value
    return value


class Stopwatch:
    seconds: float = 0.0


@contextmanager
def timed() -> Iterator[Stopwatch]:
    """`with timed() as clock: ...` then `clock.seconds` (wall time, perf_counter)."""
    clock = Stopwatch()
    started = time.perf_counter()
    try:
        yield clock
    finally:
        clock.seconds = time.perf_counter() - started


def print_table(rows: Sequence[Sequence[object]], header: Sequence[str] = ("metric", "value")):
    """Columns padded to their widest cell, a dashed rule under the header."""
    cells = [[str(c) for c in header], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    print("\n".join(lines))


def again(name: str, *args: str) -> list[str]:
    """The command that runs benchmark `name` in a fresh process (a worker), with `child_env()`."""
    return [sys.executable, "-m", "bench", name, *args]


def child_env(**extra: str) -> dict[str, str]:
    """This environment with the repository root on PYTHONPATH: `-m bench` resolves from any
    working directory."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}
