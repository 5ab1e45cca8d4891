"""One line about scanned PDF pages that no OCR engine read, naming each file once.

Each PDF says which of its pages it could not read (``ocr_skipped_pages`` in its metadata, or a
failure "no text layer on N pages and no OCR engine is installed", or pages queued for OCR
while an engine was installed, `store.ocr_queue`). A `kb add` / `kb sync` adds up the files it
read itself, so that it says once what to install, not once per file, and names the files and
pages so that a person can check they are scans. A later run of other files (or of none) says
nothing of them, but of pages still queued for OCR, which each run tries to read. `kb doctor`
counts them over the whole index (`unread_files(conn)`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from kb_search.formats.pdf import ocr
from kb_search.store.inventory import metadata_with
from kb_search.store.ocr_queue import queued_scans
from kb_search.store.skipped import failure_reasons
from kb_search.text import OCR_NOTE_PREFIX as NOTE_PREFIX
from kb_search.text import plural

FAILED_PAGES_RE = re.compile(r"no text layer on (\d+) pages?")
FILES_NAMED = 5  # files the note names; the rest are counted


@dataclass
class Unread:
    path: str
    pages: list[int]  # the page numbers, or [] when only their count is known
    count: int

    def named(self) -> str:
        where = _page_ranges(self.pages) if self.pages else plural(self.count, "page")
        return f"{PurePath(self.path).name} ({where})"


def unread_files(conn: Any, since: float | None = None) -> list[Unread]:
    """The files of the index with pages left unread for want of an OCR engine, by path: of
    the files read without one, only those a run that began at `since` (time.time()) wrote
    or failed; every file queued for OCR (each run tries to read them)."""
    out = []
    for path, metadata in metadata_with(conn, "ocr_skipped_pages", since):
        skipped = [int(p) for p in metadata.get("ocr_skipped_pages") or [] if str(p).isdigit()]
        if skipped:
            out.append(Unread(path, skipped, len(skipped)))
    for path, reason in failure_reasons(conn, "no OCR engine", since):
        m = FAILED_PAGES_RE.search(reason)
        out.append(Unread(path, [], int(m.group(1)) if m else 1))
    # queued for OCR while an engine was installed, and it is gone since: every run tries them
    out += [Unread(s.record.rel_path, [], s.pages) for s in queued_scans(conn)]
    return out


def unread_note(conn: Any, ocr_mode: str, since: float | None = None) -> str | None:
    """The line to show for the files a run that began at `since` read, or None when every
    page was read or OCR is off or installed."""
    if ocr_mode == "never" or ocr.engine_installed() is not None:
        return None
    files = unread_files(conn, since)
    if not files:
        return None
    pages = sum(f.count for f in files)
    named = ", ".join(f.named() for f in files[:FILES_NAMED])
    if len(files) > FILES_NAMED:
        named += f" and {plural(len(files) - FILES_NAMED, 'more file')}"
    return (
        f"{NOTE_PREFIX}{plural(pages, 'scanned PDF page')} in {plural(len(files), 'file')} left "
        f"unread (no OCR engine): {named}; pip install 'kb-search[ocr]' (about 230 MB), then"
        " kb sync"
    )


def _page_ranges(pages: list[int]) -> str:
    """[1, 2, 3, 7] -> 'pages 1-3, 7'."""
    spans: list[list[int]] = []
    for page in sorted(set(pages)):
        if spans and page == spans[-1][1] + 1:
            spans[-1][1] = page
        else:
            spans.append([page, page])
    text = ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in spans)
    return ("pages " if len(pages) > 1 else "page ") + text
