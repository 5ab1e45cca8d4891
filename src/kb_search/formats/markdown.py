"""Markdown: front matter, heading-chain sections, fences and tables kept whole when they fit
(the chunking rules are in `chunking/units.py`). Headings and fences come from markdown-it-py's
token stream (CommonMark) and its line map; front matter is YAML between `---` lines."""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from markdown_it import MarkdownIt

from kb_search.chunking.tables import is_table_line
from kb_search.chunking.tokens import TokenCounter, count_tokens
from kb_search.chunking.units import Block, Section, chunk_sections
from kb_search.formats.registry import Source
from kb_search.parsed import ChunkSettings, ParsedDocument

SPLIT_LEVELS = 3  # headings deeper than ### stay inside their section
MAX_TITLE_CHARS = 200  # of one heading in a chain
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")
# CommonMark (headings, fences, indented code, lists, block quotes, HTML blocks); the inline
# rules are off: only block structure and its line map are read.
# markdown-it stops building blocks past `maxNesting` levels (20 in its CommonMark preset): a
# deeply nested list would hide every heading after it. Nesting is allowed deep, and lines are
# flattened before they reach it (_flatten), well below where its recursion would overflow.
_MAX_NESTING = 256
_PARSER = MarkdownIt("commonmark", {"maxNesting": _MAX_NESTING}).disable("inline")
_DEEP_INDENT = re.compile(r"^[ \t>]{200,}")
_CLOSING_HASHES = re.compile(r"(?<![ \t])[ \t]+#+$")  # from a run's start only: linear
_ANCHOR = re.compile(r"(?<!\s)\s*\{#[^{}]*\}$")  # linear: see tests/security/test_regex_bounds


def parse_markdown(
    text: str, path: Path, settings: ChunkSettings, count: TokenCounter = count_tokens
) -> ParsedDocument:
    """Split a Markdown file into heading-chain chunks."""
    # markdown-it ends a line at a lone CR too: one left in (a converted page's `&#13;`) would
    # shift its line map past ours. Files from disk have theirs made newlines by the reader.
    lines = text.replace("\r\n", "\n").replace("\r", " ").split("\n")
    front, body_start = front_matter(lines)
    structure = markdown_structure(lines, body_start)
    sections, first_h1 = markdown_sections(lines, structure, body_start)
    cut = chunk_sections(lines, sections, settings, count, structure.blocks)
    title_value = front.pop("title", "")
    title = (str(title_value or "").strip() if _is_scalar(title_value) else "") or _banner_title(
        structure
    )
    title = title or first_h1 or _first_heading(structure) or path.stem
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


@dataclass
class _Structure:
    """Where headings and fenced blocks are, from markdown-it's token stream and line map.

    `headings`: (first line index, index after it, level, title) of each top-level heading
    (ATX or setext; a setext title may span lines); `fences`: first line index -> index after
    the fence, for fences that open a line (in lists too, not in block quotes: the chunker
    reopens a fence by its opening line)."""

    headings: list[tuple[int, int, int, str]]
    fences: dict[int, int]
    banner: str = ""  # the HTML blocks before the first heading (a README's logo and badges)

    def blocks(self, lines: list[str], start: int, end: int) -> list[Block]:
        """Paragraphs, fenced code blocks, tables and (deep) headings within lines[start:end]."""
        heading_ends = {first: after for first, after, _level, _title in self.headings}
        blocks: list[Block] = []
        index = start
        while index < end:
            line = lines[index]
            if not line.strip():
                index += 1
            elif index in self.fences:
                index = _add(blocks, "fence", index, min(self.fences[index], end))
            elif index in heading_ends:
                index = _add(blocks, "heading", index, min(heading_ends[index], end))
            else:
                table = is_table_line(line)
                after = index + 1
                while after < end and _continues(lines[after], table, after, self, heading_ends):
                    after += 1
                index = _add(blocks, "table" if table else "paragraph", index, after)
        return blocks


def _continues(
    line: str, table: bool, index: int, structure: _Structure, heading_ends: dict[int, int]
) -> bool:
    """The line goes on a run of table rows (or of paragraph lines) that started before it."""
    if not line.strip() or index in structure.fences or index in heading_ends:
        return False
    return is_table_line(line) == table


def markdown_structure(lines: list[str], body_start: int) -> _Structure:
    """Parse the body (front matter blanked, so the line map stays the file's) once."""
    body = [""] * body_start + [_flatten(line) for line in lines[body_start:]]
    try:
        tokens = _PARSER.parse("\n".join(body))
    except RecursionError:  # pathological nesting: no structure, the text is still chunked
        return _Structure([], {})
    headings: list[tuple[int, int, int, str]] = []
    fences: dict[int, int] = {}
    banner: list[str] = []
    for position, token in enumerate(tokens):
        if token.map is None:
            continue
        first, after = token.map
        if token.type == "heading_open" and token.level == 0:
            title = _clean_title(tokens[position + 1].content.replace("\n", " "))
            if title:
                headings.append((first, after, int(token.tag[1]), title))
        elif token.type == "fence" and _FENCE.match(lines[first]):
            fences[first] = after
        elif token.type == "html_block" and not headings:
            banner.append(token.content[:BANNER_CHARS])
    return _Structure(headings, fences, "\n".join(banner)[:BANNER_CHARS])


# A README that opens with an HTML banner (`<p align="center"><img alt="pdoc" ...>` and its
# badges, or `<h1 align="center">Project</h1>`) names the project there; its Markdown H1s are
# then often sections ("# Example", "# Installation": pdoc's README was titled "Example").
BANNER_CHARS = 20_000
_HTML_H1 = re.compile(r"<h1\b[^<>]{0,500}>(.{0,2000}?)</h1\s*>", re.S | re.I)
_IMAGE_ALT = re.compile(
    r"<img\b[^<>]{0,2000}?\balt\s*=\s*(?:\"([^\"<>]{1,80})\"|'([^'<>]{1,80})')", re.I
)
_TAGS = re.compile(r"<[^<>]{0,2000}>")
# the alt text of a badge, not of a logo
_BADGE = re.compile(
    r"\b(?:build|status|ci|coverage|version|licen[cs]e|downloads?|pypi|npm|docs?|documentation"
    r"|chat|discord|gitter|codecov|release|python|tests?|badge|sponsor|twitter)\b",
    re.I,
)


def _banner_title(structure: _Structure) -> str | None:
    """The title an HTML banner before the first heading gives: its `<h1>`'s text (or its
    logo's alt text); else, when the file has several H1s (so its first is a section), the
    first image's alt text that names no badge."""
    if not structure.banner:
        return None
    if match := _HTML_H1.search(structure.banner):
        text = " ".join(_TAGS.sub(" ", match.group(1)).split())
        alt = _IMAGE_ALT.search(match.group(1))
        text = text or (alt and (alt.group(1) or alt.group(2)).strip()) or ""
        return text[:MAX_TITLE_CHARS] or None
    if sum(1 for heading in structure.headings if heading[2] == 1) < 2:
        return None
    alt = _IMAGE_ALT.search(structure.banner)
    text = (alt.group(1) or alt.group(2)).strip() if alt else ""
    return text if text and not _BADGE.search(text) else None


def _flatten(line: str) -> str:
    """A line indented (or quoted) 200+ columns deep, cut to 200: it is deep inside lists or
    quotes either way, and no top-level heading or fence can be there."""
    match = _DEEP_INDENT.match(line)
    return line[: 200] + line[match.end() :] if match else line


def markdown_sections(
    lines: list[str], structure: _Structure, body_start: int
) -> tuple[list[Section], str | None]:
    """Sections split at levels 1-3 (ATX and setext), ignoring fenced code; also the first H1."""
    sections = [Section((), 0, body_start, len(lines))]
    open_levels: dict[int, str] = {}
    first_h1: str | None = None
    for index, end, level, title in structure.headings:
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


def _first_heading(structure: _Structure) -> str | None:
    """A file without an H1 is named by its first heading (of any level), if it has one."""
    return structure.headings[0][3][:MAX_TITLE_CHARS] if structure.headings else None


def _clean_title(raw: str) -> str:
    title = _CLOSING_HASHES.sub("", raw.strip())
    title = "" if set(title) <= {"#"} else title
    return _ANCHOR.sub("", title).strip()


def _add(blocks: list[Block], kind: str, start: int, end: int) -> int:
    blocks.append(Block(kind, start, end))
    return end


def parse_markdown_source(source: Source) -> ParsedDocument:
    return parse_markdown(source.text(), source.name, source.settings, source.count)
