"""Plain data passed between the ingesters, the index and the search core."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kb_search.errors import EmptyFile, IngestError, NeedsOcr  # noqa: F401 - re-exported


@dataclass
class ChunkSettings:
    """How big chunks may be, in model tokens (word pieces), and caps for hostile input."""

    max_tokens: int = 200
    min_tokens: int = 40
    # Longest chunk in characters; None: 20 per token of max_tokens (4,000 at 200). A word
    # the model reads as one [UNK] piece can be megabytes long: tokens alone do not bound it.
    max_chars: int | None = None
    max_chunks: int = 5000  # per document; the rest is dropped with a note

    @property
    def char_limit(self) -> int:
        return self.max_chars or 20 * self.max_tokens


@dataclass
class ParsedChunk:
    """One retrievable unit of a document, in document order."""

    text: str
    heading: str | None = None  # heading chain, e.g. "Config > Advanced"
    symbol: str | None = None  # code symbol, e.g. "Spider.parse"
    line_start: int | None = None  # 1-based, inclusive
    line_end: int | None = None
    page_start: int | None = None  # 1-based, inclusive
    page_end: int | None = None
    token_count: int = 0
    # a table of contents, a list of figures, an index: searchable, ranked below content
    # that matches about as well (formats/navigation.py)
    navigation: bool = False
    # the page a citation opens (page_start..page_end): the one holding most of the text;
    # None: page_start
    cited_page: int | None = None


@dataclass
class ParsedDocument:
    """What an ingester makes of one file."""

    title: str
    doc_type: str  # markdown | text | code | pdf | docx | html | ...
    chunks: list[ParsedChunk]
    language: str | None = None  # programming language for code; natural language if known
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    page_count: int | None = None
    # Warnings for the ingest log ("truncated after 5000 chunks"); parsers cannot log.
    notes: list[str] = field(default_factory=list)

