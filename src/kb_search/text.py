"""Small wording helpers shared by the summaries the core writes."""

from __future__ import annotations


def plural(count: int, noun: str, many: str | None = None) -> str:
    """ "1 file", "2 files", "0 files"; `many` for irregular plurals."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"


# Notes a person must see even in a JSON run (printed on stderr): what to install for OCR.
OCR_NOTE_PREFIX = "OCR: "
