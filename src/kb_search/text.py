"""Small wording helpers shared by the summaries the core writes."""

from __future__ import annotations


def plural(count: int, noun: str, many: str | None = None) -> str:
    """ "1 file", "2 files", "0 files"; `many` for irregular plurals."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"
