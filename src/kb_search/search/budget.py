"""A search's budget: the time it may take (`search.timeout_s`) and its client's cancellation,
checked at every stage and by SQLite's progress handler."""

from __future__ import annotations

import contextvars
import threading
import time

from kb_search.errors import SearchError

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
