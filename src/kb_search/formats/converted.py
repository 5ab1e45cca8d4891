"""Markdown built from another format, each line remembering where in the file it came from.

Converters (Org, AsciiDoc, LaTeX, EPUB, ODF, notebooks, e-mail) write Markdown line by line
with the source lines (or page, slide, sheet, chapter, cell, message) it stands for; the
Markdown chunker does the splitting, and every chunk is then given the source location of the
lines it holds. Lines of the converted text never leak out as if they were lines of the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kb_search.chunking.tokens import TokenCounter, count_tokens
from kb_search.formats.cleaning import Line, clean_markdown_lines
from kb_search.formats.markdown import parse_markdown
from kb_search.parsed import ChunkSettings, ParsedChunk, ParsedDocument


@dataclass(frozen=True)
class Origin:
    """Where one converted line comes from: a 1-based line range and/or a page-like number."""

    first_line: int | None = None
    last_line: int | None = None
    page: int | None = None


NOWHERE = Origin()
_BLANK_RUN = re.compile(r"\n(?:[ \t]*\n){2,}")


class MarkdownBuilder:
    """Collects Markdown lines with their origins.

    `clean`: the converter writes Markdown that may hold link syntax and entities (Docling,
    notebook cells, mail bodies): `parse` cleans it by the shared rules of `cleaning`. HTML
    read by `cleaning.read_html` is clean already."""

    def __init__(self, clean: bool = True) -> None:
        self.lines: list[str] = []
        self.origins: list[Origin] = []
        self.clean = clean

    def add(self, text: str, origin: Origin = NOWHERE) -> None:
        """Append `text` (it may hold several lines); every line gets `origin`."""
        for line in text.split("\n"):
            self.lines.append(line)
            self.origins.append(origin)

    def line(self, text: str, number: int, page: int | None = None) -> None:
        """Append one converted line that stands for line `number` of the file."""
        self.add(text, Origin(number, number, page))

    def blank(self) -> None:
        if self.lines and self.lines[-1].strip():
            self.lines.append("")
            self.origins.append(NOWHERE)

    def block(self, text: str, origin: Origin = NOWHERE) -> None:
        """A paragraph-like block, separated from its neighbours by blank lines."""
        if not text.strip():
            return
        self.blank()
        self.add(text.strip("\n"), origin)
        self.blank()

    def located(self, lines: list[Line], page: int | None = None) -> None:
        """A block of lines that each know their source lines (`cleaning.read_html`)."""
        if not lines:
            return
        self.blank()
        for line in lines:
            self.lines.append(line.text)
            self.origins.append(Origin(line.first, line.last, page))
        self.blank()

    def heading(self, level: int, title: str, origin: Origin = NOWHERE) -> None:
        title = " ".join(title.split())
        if title:
            self.block(f"{'#' * max(1, min(level, 6))} {title}", origin)

    @property
    def markdown(self) -> str:
        return "\n".join(self.lines) + "\n"

    def parse(
        self, path: Path, settings: ChunkSettings, count: TokenCounter = count_tokens
    ) -> ParsedDocument:
        """Chunk the Markdown; chunks get the file's lines/pages, never the converted lines."""
        lines = clean_markdown_lines(self.lines) if self.clean else self.lines
        document = parse_markdown("\n".join(lines) + "\n", path, settings, count)
        for chunk in document.chunks:
            locate(chunk, self.origins)
            # Lines a converter dropped (drawers, comments) leave runs of blank lines.
            chunk.text = _BLANK_RUN.sub("\n\n", chunk.text)
        return document


def locate(chunk: ParsedChunk, origins: list[Origin]) -> None:
    """Replace a chunk's converted line range by the source lines and pages it covers."""
    span: list[Origin] = []
    if chunk.line_start is not None and chunk.line_end is not None:
        span = origins[chunk.line_start - 1 : chunk.line_end]
    firsts = [o.first_line for o in span if o.first_line is not None]
    lasts = [o.last_line for o in span if o.last_line is not None]
    pages = [o.page for o in span if o.page is not None]
    chunk.line_start = min(firsts) if firsts else None
    chunk.line_end = max(lasts) if lasts else None
    chunk.page_start = min(pages) if pages else None
    chunk.page_end = max(pages) if pages else None
