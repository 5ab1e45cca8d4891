"""What the CLI reads from the outside world, injectable so tests never touch the real home."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Environment:
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    cwd: Path = field(default_factory=Path.cwd)
    stdout_isatty: bool = field(default_factory=lambda: sys.stdout.isatty())
    stderr_isatty: bool = field(default_factory=lambda: sys.stderr.isatty())

    @property
    def home(self) -> Path:
        return Path(self.env.get("HOME") or Path.home())
