"""Whether each hit's file is still what was indexed: `fresh`, `changed` or `gone`.

One `stat` per distinct file of the answer at query time, compared with the size and mtime
recorded when the file was indexed (the same test `kb sync` starts with): cheap, and never a
read of the file. `changed` means the text served may be out of date; `gone` means the file is
no longer there (moved or deleted) and its citation will not open. `kb sync` brings the index
up to date; `kb search --sync-stale` does it for just those files before answering.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from kb_search.store import retrieval
from kb_search.store.db import Connection

FRESH, CHANGED, GONE = "fresh", "changed", "gone"
SYNC_HINT = "run `kb sync` (or search with --sync-stale) to bring the index up to date"


def file_state(path: str, size: int, mtime: float) -> str:
    """`fresh`, `changed` or `gone` for one indexed file."""
    try:
        stat = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return GONE
    except (OSError, ValueError):  # unreadable now (permissions, I/O, a bad name)
        return CHANGED
    if stat.st_size != size or stat.st_mtime != mtime:
        return CHANGED
    return FRESH


def document_states(conn: Connection, document_ids: Iterable[int]) -> dict[int, str]:
    """document id -> its state, one stat per document."""
    stats = retrieval.document_stats(conn, set(document_ids))
    return {doc: file_state(path, size, mtime) for doc, (path, size, mtime) in stats.items()}


def stale_note(states: Iterable[str]) -> str | None:
    """The one line an answer carries when some hits' files changed or are gone."""
    states = list(states)
    gone, changed = states.count(GONE), states.count(CHANGED)
    if not gone and not changed:
        return None
    parts = [
        f"{n} {'hit is' if n == 1 else 'hits are'} from files {what} since indexing"
        for n, what in ((gone, "gone"), (changed, "changed"))
        if n
    ]
    return f"{' and '.join(parts)}: {SYNC_HINT}"
