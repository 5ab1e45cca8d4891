"""HTML pages: read by `cleaning.read_html` (lxml), chunked by the Markdown chunker.

Chunks carry heading chains and the source lines of the page they were read from: the
converted Markdown's own lines never leak out (`converted.MarkdownBuilder` maps them back).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kb_search.chunking.tokens import TokenCounter, count_tokens
from kb_search.formats.cleaning import read_html
from kb_search.formats.converted import MarkdownBuilder
from kb_search.formats.registry import Source
from kb_search.parsed import ChunkSettings, ParsedDocument

HTML_EXTENSIONS = frozenset({".html", ".htm", ".xhtml"})


@dataclass
class HtmlConversion:
    """The Markdown text of an HTML page and what its head said about it."""

    markdown: str
    title: str | None = None
    language: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)


def parse_html(
    text: str, path: Path, settings: ChunkSettings, count: TokenCounter = count_tokens
) -> ParsedDocument:
    """Read an HTML page as a reader sees it and chunk it by heading (doc_type "html")."""
    page = read_html(text)
    builder = MarkdownBuilder(clean=False)
    for block in page.blocks:
        builder.located(block)
    document = builder.parse(path, settings, count)
    first_h1 = document.title if document.title != path.stem else None
    document.title = page.title or first_h1 or path.stem
    document.doc_type = "html"
    document.language = page.language
    document.tags = page.tags
    document.metadata = {**page.metadata, "converter": "lxml"}
    return document


def html_to_markdown(html: str) -> HtmlConversion:
    """Markdown for an HTML text (an EPUB chapter, a mail's HTML part), by the same rules."""
    page = read_html(html)
    return HtmlConversion(page.markdown, page.title, page.language, page.metadata, page.tags)


def parse_html_source(source: Source) -> ParsedDocument:
    return parse_html(source.text(), source.name, source.settings, source.count)
