"""Markdown: front matter, heading-chain sections, fences and tables kept whole when they fit
(the chunking rules are in `chunking/units.py`)."""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kb_search.chunking.tables import is_table_line
from kb_search.chunking.tokens import TokenCounter, count_tokens
from kb_search.chunking.units import Block, Section, chunk_sections
from kb_search.formats.registry import Source
from kb_search.parsed import ChunkSettings, ParsedDocument

SPLIT_LEVELS = 3  # headings deeper than ### stay inside their section
MAX_TITLE_CHARS = 200  # of one heading in a chain
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")
_NOT_SETEXT_TITLE = re.compile(r"^\s*([|>#]|[-*+]\s|\d+[.)]\s)")
_ANCHOR = re.compile(r"\s*\{#[^}]*\}$")


@dataclass
class _Fence:
    indent: str
    marker: str

    def closes(self, line: str) -> bool:
        stripped = line.strip()
        char = self.marker[0]
        return stripped.startswith(self.marker) and stripped == char * len(stripped)


def parse_markdown(
    text: str, path: Path, settings: ChunkSettings, count: TokenCounter = count_tokens
) -> ParsedDocument:
    """Split a Markdown file into heading-chain chunks."""
    lines = text.split("\n")
    front, body_start = front_matter(lines)
    sections, first_h1 = markdown_sections(lines, body_start)
    cut = chunk_sections(lines, sections, settings, count, markdown_blocks)
    title_value = front.pop("title", "")
    title = (str(title_value or "").strip() if _is_scalar(title_value) else "") or first_h1
    title = title or path.stem
    tags = _tags(front.pop("tags", None))
    return ParsedDocument(
        title=title,
        doc_type="markdown",
        chunks=cut.chunks,
        tags=tags,
        metadata=_jsonable(front),
        notes=cut.notes,
    )


def front_matter(lines: list[str]) -> tuple[dict[str, Any], int]:
    """YAML between leading --- lines, and the index of the first body line.

    Anything that does not parse to a mapping is left in the body as ordinary text.
    """
    if not lines or lines[0].strip() != "---":
        return {}, 0
    for index in range(1, len(lines)):
        if lines[index].strip() in ("---", "..."):
            try:
                data = yaml.safe_load("\n".join(lines[1:index]))
            except (yaml.YAMLError, ValueError):
                return {}, 0
            return (data, index + 1) if isinstance(data, dict) else ({}, 0)
    return {}, 0


def _tags(value: Any) -> list[str]:
    if isinstance(value, str):
        return [t.strip() for t in value.split(",") if t.strip()]
    if isinstance(value, (list, tuple)):
        # Only scalars: a nested alias (`tags: *a`) would print a whole structure as a tag.
        return [str(t).strip() for t in value if _is_scalar(t) and str(t).strip()]
    return []


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool, _dt.date, _dt.time))


# YAML aliases make graphs, not trees: `a: &a [*a]` is a cycle and nine lists of nine aliases
# nine levels deep are 387 million nodes (a "billion laughs"). Front matter is metadata: keep
# its first nodes, a few levels deep, and drop the rest.
MAX_FRONT_MATTER_NODES = 2000
MAX_FRONT_MATTER_DEPTH = 20


def _jsonable(value: Any, budget: list[int] | None = None, depth: int = 0) -> Any:
    budget = [MAX_FRONT_MATTER_NODES] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_FRONT_MATTER_DEPTH:
        return None
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if budget[0] <= 0:
                break
            out[str(k) if _is_scalar(k) else "?"] = _jsonable(v, budget, depth + 1)
        return out
    if isinstance(value, (list, tuple, set)):
        items = []
        for v in value:
            if budget[0] <= 0:
                break
            items.append(_jsonable(v, budget, depth + 1))
        return items
    if isinstance(value, (_dt.date, _dt.time)):
        return value.isoformat()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def markdown_sections(lines: list[str], body_start: int) -> tuple[list[Section], str | None]:
    """Sections split at levels 1-3 (ATX and setext), ignoring fenced code; also the first H1."""
    sections = [Section((), 0, body_start, len(lines))]
    open_levels: dict[int, str] = {}
    first_h1: str | None = None
    for index, end, level, title in _headings(lines, body_start):
        if level == 1 and first_h1 is None:
            first_h1 = title
        if level > SPLIT_LEVELS:
            continue
        open_levels = {lvl: t for lvl, t in open_levels.items() if lvl < level}
        open_levels[level] = title[:MAX_TITLE_CHARS]
        chain = tuple(open_levels[lvl] for lvl in sorted(open_levels))
        sections[-1].end = index
        heading_line = f"{'#' * level} {title}"
        sections.append(Section(chain, level, index, len(lines), heading_line, end))
    return [s for s in sections if s.end > s.start], first_h1


def _headings(lines: list[str], body_start: int) -> list[tuple[int, int, int, str]]:
    """(first line index, index after the heading, level, title) of every heading outside
    fenced code; a setext heading spans its title and underline."""
    found: list[tuple[int, int, int, str]] = []
    fence: _Fence | None = None
    for index in range(body_start, len(lines)):
        line = lines[index]
        if fence:
            fence = None if fence.closes(line) else fence
            continue
        opened = _FENCE.match(line)
        if opened:
            fence = _Fence(opened.group(1), opened.group(2))
            continue
        atx = _ATX.match(line)
        if atx:
            title = _clean_title(atx.group(2) or "")
            if title:
                found.append((index, index + 1, len(atx.group(1)), title))
            continue
        setext = _SETEXT.match(line)
        if setext and _is_setext_title(lines, index, body_start):
            level = 1 if setext.group(1).startswith("=") else 2
            found.append((index - 1, index + 1, level, _clean_title(lines[index - 1])))
    return found


def _is_setext_title(lines: list[str], index: int, body_start: int) -> bool:
    if index - 1 < body_start:
        return False
    title = lines[index - 1]
    if not title.strip() or _NOT_SETEXT_TITLE.match(title) or _FENCE.match(title):
        return False
    return index - 2 < body_start or not lines[index - 2].strip()


def _clean_title(raw: str) -> str:
    title = re.sub(r"[ \t]+#+$", "", raw.strip())
    title = "" if set(title) <= {"#"} else title
    return _ANCHOR.sub("", title).strip()


def markdown_blocks(lines: list[str], start: int, end: int) -> list[Block]:
    """Paragraphs, fenced code blocks, tables and (deep) headings within lines[start:end]."""
    blocks: list[Block] = []
    index = start
    while index < end:
        line = lines[index]
        if not line.strip():
            index += 1
        elif _FENCE.match(line):
            index = _add(blocks, "fence", index, _fence_end(lines, index, end))
        elif is_table_line(line):
            index = _add(blocks, "table", index, _run_end(lines, index, end, is_table_line))
        elif _is_heading(line):
            index = _add(blocks, "heading", index, index + 1)
        else:
            index = _add(blocks, "paragraph", index, _run_end(lines, index, end, _is_plain))
    return blocks


def _add(blocks: list[Block], kind: str, start: int, end: int) -> int:
    blocks.append(Block(kind, start, end))
    return end


def _fence_end(lines: list[str], start: int, end: int) -> int:
    opened = _FENCE.match(lines[start])
    assert opened is not None
    fence = _Fence(opened.group(1), opened.group(2))
    for index in range(start + 1, end):
        if fence.closes(lines[index]):
            return index + 1
    return end


def _run_end(lines: list[str], start: int, end: int, belongs: Callable[[str], bool]) -> int:
    index = start + 1
    while index < end and belongs(lines[index]):
        index += 1
    return index


def _is_heading(line: str) -> bool:
    atx = _ATX.match(line)
    return atx is not None and bool(_clean_title(atx.group(2) or ""))


def _is_plain(line: str) -> bool:
    return (
        bool(line.strip())
        and not _FENCE.match(line)
        and not is_table_line(line)
        and not _is_heading(line)
    )


def parse_markdown_source(source: Source) -> ParsedDocument:
    return parse_markdown(source.text(), source.path, source.settings, source.count)
