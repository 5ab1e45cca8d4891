"""Search: query parsing (`query`), filters, the legs, fusion, the optional rerank stage and
the staged pipeline that runs them (`pipeline.search`); `similar` for nearest neighbours."""

from kb_search.errors import SearchError
from kb_search.search.pipeline import MODES, SearchOptions, search
from kb_search.search.query import Filters
from kb_search.search.results import SearchResponse

__all__ = ["MODES", "Filters", "SearchError", "SearchOptions", "SearchResponse", "search"]
