"""What the CLI reads from the outside world, injectable so tests never touch the real home."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

_IMPORTED = time.perf_counter()  # fallback for process_age_ms where /proc is not there


class Environment:
    """The environment variables, working directory and terminals a command sees (each read
    from the process unless given). A plain class: a piped `kb search` builds one before the
    CLI loads, and dataclasses imports inspect and ast (~15 ms on every call)."""

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        stdout_isatty: bool | None = None,
        stderr_isatty: bool | None = None,
    ) -> None:
        self.env: Mapping[str, str] = dict(os.environ) if env is None else env
        self.cwd: Path = Path.cwd() if cwd is None else cwd
        self.stdout_isatty = sys.stdout.isatty() if stdout_isatty is None else stdout_isatty
        self.stderr_isatty = sys.stderr.isatty() if stderr_isatty is None else stderr_isatty

    def __repr__(self) -> str:
        return f"Environment(cwd={self.cwd!r}, stdout_isatty={self.stdout_isatty!r})"

    @property
    def home(self) -> Path:
        return Path(self.env.get("HOME") or Path.home())


def process_age_ms() -> float:
    """How long this process has run: from /proc on Linux (interpreter start included), else
    from when this module was imported."""
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")
        return max(0.0, (time.clock_gettime(time.CLOCK_BOOTTIME) - started) * 1000)
    except (OSError, ValueError, IndexError, AttributeError):
        return (time.perf_counter() - _IMPORTED) * 1000
