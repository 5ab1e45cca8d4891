"""What the CLI reads from the outside world, injectable so tests never touch the real home."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

_IMPORTED = time.perf_counter()  # fallback for process_age_ms where /proc is not there


@dataclass
class Environment:
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    cwd: Path = field(default_factory=Path.cwd)
    stdout_isatty: bool = field(default_factory=lambda: sys.stdout.isatty())
    stderr_isatty: bool = field(default_factory=lambda: sys.stderr.isatty())

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
