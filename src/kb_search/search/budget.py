"""A search's budget: the time it may take (`search.timeout_s`) and its client's cancellation,
checked at every stage and by SQLite's progress handler."""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from kb_search.errors import SearchError
from kb_search.store import db

# Set by whoever runs a search on a request's behalf (the MCP server, per tool call): once the
# event is set (the client cancelled or went away), the search stops at its next check. A
# context variable, as the call reaches the search through the MCP library's worker thread.
SEARCH_CANCELLED: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "kb_search_cancelled", default=None
)


class SearchBudget:
    """`seconds` from now, or until the request's cancellation event is set."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.cancelled = SEARCH_CANCELLED.get()

    def spent(self) -> bool:
        cancelled = self.cancelled is not None and self.cancelled.is_set()
        return cancelled or time.monotonic() > self.deadline

    def stopped(self, what: str = "search") -> SearchError:
        """Why the search (or another request: `what`) stopped, to raise."""
        if self.cancelled is not None and self.cancelled.is_set():
            return SearchError(f"the {what} was cancelled: its client went away")
        advice = "narrow it (fewer words, a filter) or " if what == "search" else ""
        return SearchError(
            f"the {what} ran past its {self.seconds:g} s budget and was stopped: {advice}raise"
            " search.timeout_s"
        )


@contextmanager
def budgeted(conn: db.Connection, seconds: float, what: str = "search") -> Iterator[SearchBudget]:
    """`conn` inside one request's budget: its SQL stops (SQLite's progress handler) past
    `seconds` or when the client cancels, and the error it raises then says that `what` (a
    search, a read, a similarity query) ran past its budget or was cancelled."""
    budget = SearchBudget(seconds)
    try:
        with db.progress_handler(conn, budget.spent):
            yield budget
    except (db.OperationalError, SearchError) as exc:
        if not budget.spent():
            raise
        raise budget.stopped(what) from exc
