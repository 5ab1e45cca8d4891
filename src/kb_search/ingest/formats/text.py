"""Plain text and reStructuredText notes; also the section/paragraph machinery Markdown reuses."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kb_search.ingest.registry import Source
from kb_search.ingest.tokens import (
    Piece,
    TokenCounter,
    count_tokens,
    pack_lines,
    trim_blank_lines,
)
from kb_search.models import ChunkSettings, ParsedChunk, ParsedDocument

MAX_TITLE_CHARS = 100
_RST_ADORNMENT = re.compile(r"^([=\-`:'\"~^_*+#<>.])\1{2,}\s*$")


@dataclass
class Section:
    """Lines [start, end) (0-based) under one heading; level 0 is text before any heading."""

    chain: tuple[str, ...]
    level: int
    start: int
    end: int
    heading_line: str | None = None  # repeated at the top of continuation chunks
    has_body: bool = True


@dataclass
class Block:
    """A unit never cut while packing unless it alone exceeds the budget."""

    kind: str  # paragraph | fence | table
    start: int  # 0-based, inclusive
    end: int  # exclusive


BlockSplitter = Callable[[list[str], Block, int, TokenCounter], list[Piece]]


def parse_text(
    text: str, path: Path, settings: ChunkSettings, count: TokenCounter = count_tokens
) -> ParsedDocument:
    """Whole note as one chunk when it fits, else paragraph windows (RST: per section)."""
    lines = text.split("\n")
    is_rst = path.suffix.lower() == ".rst"
    sections = rst_sections(lines) if is_rst else [Section((), 0, 0, len(lines))]
    chunks = chunk_sections(lines, sections, settings, count)
    return ParsedDocument(
        title=_text_title(lines, path),
        doc_type="text",
        chunks=chunks,
        metadata={"format": "rst"} if is_rst else {},
    )


def chunk_sections(
    lines: list[str],
    sections: list[Section],
    settings: ChunkSettings,
    count: TokenCounter,
    blocks_of: Callable[[list[str], int, int], list[Block]] | None = None,
    split_block: BlockSplitter | None = None,
) -> list[ParsedChunk]:
    """Merge small sections, split big ones at block boundaries, and build chunks."""
    blocks_of = blocks_of or paragraph_blocks
    split_block = split_block or split_paragraph
    whole = _whole_document(lines, sections, settings, count)
    if whole:
        return whole
    chunks: list[ParsedChunk] = []
    for group in merge_sections(lines, sections, settings, count):
        heading = _group_heading(group)
        start, end = group[0].start, group[-1].end
        piece = _trimmed_piece(lines, start, end)
        if piece is None:
            continue
        if count(piece.text) <= settings.max_tokens:
            chunks.append(make_chunk(piece, heading, count))
            continue
        prefix = group[0].heading_line
        budget = settings.max_tokens - (count(prefix) if prefix else 0)
        blocks = blocks_of(lines, start, end)
        pieces = pack_blocks(lines, blocks, budget, count, split_block)
        for index, part in enumerate(pieces):
            if index and prefix and budget > 0:
                part = Piece(f"{prefix}\n\n{part.text}", part.line_start, part.line_end)
            chunks.append(make_chunk(part, heading, count))
    return chunks


def _whole_document(
    lines: list[str], sections: list[Section], settings: ChunkSettings, count: TokenCounter
) -> list[ParsedChunk]:
    if not sections:
        return []
    piece = _trimmed_piece(lines, sections[0].start, sections[-1].end)
    if piece is None or count(piece.text) > settings.max_tokens:
        return []
    return [make_chunk(piece, _group_heading(sections), count)]


def _group_heading(group: list[Section]) -> str | None:
    first = next((s for s in group if s.has_body and s.chain), None)
    first = first or next((s for s in group if s.chain), None)
    return " > ".join(first.chain) if first else None


def make_chunk(piece: Piece, heading: str | None, count: TokenCounter) -> ParsedChunk:
    return ParsedChunk(
        text=piece.text,
        heading=heading,
        line_start=piece.line_start,
        line_end=piece.line_end,
        token_count=count(piece.text),
    )


def _trimmed_piece(lines: list[str], start: int, end: int) -> Piece | None:
    kept, first = trim_blank_lines(lines[start:end], start + 1)
    if not kept:
        return None
    return Piece("\n".join(kept), first, first + len(kept) - 1)


def merge_sections(
    lines: list[str], sections: list[Section], settings: ChunkSettings, count: TokenCounter
) -> list[list[Section]]:
    """Group sections under min_tokens with a neighbour while the group fits max_tokens.

    First forward into following siblings/children (same parent), then into the previous group.
    """
    sizes = [count("\n".join(lines[s.start : s.end])) for s in sections]
    groups: list[tuple[list[Section], int]] = []
    index = 0
    while index < len(sections):
        group, total = [sections[index]], sizes[index]
        index += 1
        while (
            index < len(sections)
            and total < settings.min_tokens
            and _same_parent(group[0], sections[index])
            and total + sizes[index] <= settings.max_tokens
        ):
            group.append(sections[index])
            total += sizes[index]
            index += 1
        groups.append((group, total))
    merged: list[tuple[list[Section], int]] = []
    for group, total in groups:
        if merged and total < settings.min_tokens:
            previous, previous_total = merged[-1]
            if previous_total + total <= settings.max_tokens:
                merged[-1] = (previous + group, previous_total + total)
                continue
        merged.append((group, total))
    return [group for group, _ in merged]


def _same_parent(first: Section, other: Section) -> bool:
    """True when `other` is a sibling or a descendant of `first`."""
    if other.level < first.level:
        return False
    parent = first.chain[: max(first.level - 1, 0)]
    return other.chain[: len(parent)] == parent


def paragraph_blocks(lines: list[str], start: int, end: int) -> list[Block]:
    """Blank-line separated paragraphs within lines[start:end]."""
    blocks: list[Block] = []
    index = start
    while index < end:
        if not lines[index].strip():
            index += 1
            continue
        block_start = index
        while index < end and lines[index].strip():
            index += 1
        blocks.append(Block("paragraph", block_start, index))
    return blocks


def split_paragraph(
    lines: list[str], block: Block, max_tokens: int, count: TokenCounter
) -> list[Piece]:
    """Default splitter for an oversized block: line windows, then words."""
    return pack_lines(lines[block.start : block.end], block.start + 1, max_tokens, count)


def pack_blocks(
    lines: list[str],
    blocks: list[Block],
    max_tokens: int,
    count: TokenCounter,
    split_block: BlockSplitter = split_paragraph,
) -> list[Piece]:
    """Greedily pack whole blocks into pieces; a block over budget is split on its own."""
    pieces: list[Piece] = []
    run: list[Block] = []
    used = 0

    def flush() -> None:
        if run:
            start, end = run[0].start, run[-1].end
            pieces.append(Piece("\n".join(lines[start:end]), start + 1, end))
            run.clear()

    queue = list(reversed(blocks))
    while queue:
        block = queue.pop()
        size = count("\n".join(lines[block.start : block.end]))
        if size > max_tokens and block.kind == "paragraph" and block.end - block.start > 1:
            # Its lines pack like small blocks, so the first window can join the previous run.
            queue.extend(
                Block("paragraph", i, i + 1) for i in reversed(range(block.start, block.end))
            )
            continue
        if size > max_tokens:
            parts = split_block(lines, block, max_tokens, count)
            if run and parts:
                parts[0] = _join_run(lines, run, parts[0], max_tokens, count, pieces)
                run.clear()
            pieces.extend(parts)
            used = 0
            continue
        if run and used + size > max_tokens:
            flush()
            used = 0
        run.append(block)
        used += size
    flush()
    return pieces


def _join_run(
    lines: list[str],
    run: list[Block],
    first: Piece,
    max_tokens: int,
    count: TokenCounter,
    pieces: list[Piece],
) -> Piece:
    """Put the pending run (often just a heading) in front of a split block's first part."""
    start, end = run[0].start, run[-1].end
    head = "\n".join(lines[start:end])
    joined = f"{head}\n\n{first.text}"
    if count(joined) <= max_tokens:
        return Piece(joined, start + 1, first.line_end)
    pieces.append(Piece(head, start + 1, end))
    return first


def rst_sections(lines: list[str]) -> list[Section]:
    """Sections of a reStructuredText file; heading levels follow adornment order of first use."""
    styles: list[tuple[str, str]] = []
    chain: list[str] = []
    sections = [Section((), 0, 0, len(lines), has_body=False)]
    for title_index, style, first in _rst_headings(lines):
        if style not in styles:
            styles.append(style)
        level = styles.index(style) + 1
        chain = chain[: level - 1] + [lines[title_index].strip()]
        sections[-1].end = first
        sections.append(Section(tuple(chain), level, first, len(lines), lines[title_index].strip()))
    sections[0].has_body = any(line.strip() for line in lines[: sections[0].end])
    return [s for s in sections if s.end > s.start]


def _rst_headings(lines: list[str]) -> list[tuple[int, tuple[str, str], int]]:
    """(title line index, adornment style, first line index of the heading)."""
    found = []
    for index in range(1, len(lines)):
        match = _RST_ADORNMENT.match(lines[index])
        title = lines[index - 1]
        if not match or not title.strip() or _RST_ADORNMENT.match(title):
            continue
        if len(lines[index].rstrip()) < len(title.rstrip()):
            continue
        over = index >= 2 and lines[index - 2].rstrip() == lines[index].rstrip()
        style = ("over" if over else "under", match.group(1))
        found.append((index - 1, style, index - 2 if over else index - 1))
    return found


def _text_title(lines: list[str], path: Path) -> str:
    for line in lines:
        stripped = line.strip()
        if not stripped or _RST_ADORNMENT.match(stripped):
            continue
        return stripped if len(stripped) < MAX_TITLE_CHARS else path.stem
    return path.stem


def parse_text_source(source: Source) -> ParsedDocument:
    return parse_text(source.text(), source.path, source.settings, source.count)
