"""One line per run about scanned PDF pages that no OCR engine read.

Each PDF says which of its pages it could not read (``ocr_skipped_pages`` in its metadata, or a
failure "no text layer on N pages and no OCR engine is installed"); this adds them up over the
index so that `kb add` / `kb sync` say once what to install, not once per file.
"""

from __future__ import annotations

import re
from typing import Any

from kb_search.formats import ocr
from kb_search.store.inventory import metadata_with
from kb_search.store.skipped import failure_reasons
from kb_search.text import OCR_NOTE_PREFIX as NOTE_PREFIX
from kb_search.text import plural

FAILED_PAGES_RE = re.compile(r"no text layer on (\d+) pages?")


def unread_pages(conn: Any) -> tuple[int, int]:
    """(pages, files) of the index left unread for want of an OCR engine."""
    pages = files = 0
    for metadata in metadata_with(conn, "ocr_skipped_pages"):
        skipped = metadata.get("ocr_skipped_pages") or []
        if skipped:
            pages, files = pages + len(skipped), files + 1
    for reason in failure_reasons(conn, "no OCR engine"):
        m = FAILED_PAGES_RE.search(reason)
        pages, files = pages + (int(m.group(1)) if m else 1), files + 1
    return pages, files


def unread_note(conn: Any, ocr_mode: str) -> str | None:
    """The line to show, or None when every page was read or OCR is off or installed."""
    if ocr_mode == "never" or ocr.engine_installed() is not None:
        return None
    pages, files = unread_pages(conn)
    if not pages:
        return None
    return (
        f"{NOTE_PREFIX}{plural(pages, 'scanned PDF page')} in {plural(files, 'file')} left "
        f"unread (no OCR engine): pip install 'kb-search[ocr]' (about 230 MB), then kb sync"
    )
