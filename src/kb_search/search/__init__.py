"""Search: query parsing (`query`), filters, the legs, fusion, the optional rerank stage and
the staged pipeline that runs them (`pipeline.search`); `similar` for nearest neighbours.

The names below load on first use: a warm `kb search` client reads a `SearchResponse`
(`results.SearchResponse.from_dict`) without paying for the pipeline it never runs."""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "MODES": "kb_search.search.pipeline",
    "SearchOptions": "kb_search.search.pipeline",
    "search": "kb_search.search.pipeline",
    "Filters": "kb_search.search.query",
    "SearchResponse": "kb_search.search.results",
    "SearchError": "kb_search.errors",
}

__all__ = ["MODES", "Filters", "SearchError", "SearchOptions", "SearchResponse", "search"]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'kb_search.search' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)
