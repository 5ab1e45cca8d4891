"""How long jobs report progress: the core calls these; a face (CLI, server) shows them."""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def start(self, total: int) -> None:
        """The job has `total` steps (files, chunks, documents)."""

    def advance(self, n: int = 1) -> None:
        """`n` more steps are done."""


class NoProgress:
    def start(self, total: int) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass
