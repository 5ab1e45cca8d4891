"""Org-mode: a line-for-line conversion to Markdown, then the Markdown chunker.

Headings (`*`, `**`, ...) become `#` sections without their TODO keyword, priority and tags;
`#+TITLE`/`#+FILETAGS` give the title and tags; source and example blocks become fences;
property drawers, planning lines and comments are dropped. Every converted line stands for
its own line of the file, so chunks cite real line ranges. No library: `orgparse` gives a
node tree but no conversion of the body, which is most of the work here.
"""

from __future__ import annotations

import re

from kb_search.formats.converted import MarkdownBuilder
from kb_search.formats.registry import Source
from kb_search.parsed import ParsedDocument

_HEADING = re.compile(
    r"^(\*+)\s+(?:(?:TODO|DONE|NEXT|WAITING|HOLD|CANCELL?ED|STARTED|SOMEDAY)\s+)?"
    r"(?:\[#[A-Za-z0-9]\]\s+)?(.*?)(?:\s+(:[\w@#%:]+:))?\s*$"
)
_KEYWORD = re.compile(r"^\s*#\+(\w+):\s*(.*)$")
_BLOCK_BEGIN = re.compile(r"^\s*#\+begin_(\w+)\s*(\S*)", re.I)
_BLOCK_END = re.compile(r"^\s*#\+end_(\w+)", re.I)
_DRAWER = re.compile(r"^\s*:([\w-]+):\s*$")
_PLANNING = re.compile(r"^\s*(SCHEDULED|DEADLINE|CLOSED):")
_COMMENT = re.compile(r"^\s*#(\s|$)")
_RULE = re.compile(r"^\s*-{5,}\s*$")
_TABLE_RULE = re.compile(r"^(\s*)\|[-+]+\|?\s*$")
_LINK = re.compile(r"\[\[([^\[\]]+)\](?:\[([^\[\]]+)\])?\]")  # no class past a "[": linear
_VERBATIM = re.compile(r"(?<![\w=~])[=~]([^\s=~](?:[^=~\n]*[^\s=~])?)[=~](?![\w=~])")
_FENCED_BLOCKS = {"src", "example", "export", "verse"}
_DROPPED_BLOCKS = {"comment"}
METADATA_KEYWORDS = {"author", "date", "email", "language", "description", "subtitle"}


def parse_org(source: Source) -> ParsedDocument:
    lines = source.text().split("\n")
    builder = MarkdownBuilder()
    keywords: dict[str, str] = {}
    tags: list[str] = []
    block: str | None = None
    drawer = False
    for number, line in enumerate(lines, start=1):
        if block:
            ended = _BLOCK_END.match(line)
            if ended and ended.group(1).lower() == block:
                builder.line("" if block in _DROPPED_BLOCKS else "```", number)
                block = None
            else:
                builder.line("" if block in _DROPPED_BLOCKS else line, number)
            continue
        if drawer:
            drawer = line.strip().upper() != ":END:"
            builder.line("", number)
            continue
        begun = _BLOCK_BEGIN.match(line)
        if begun:
            kind = begun.group(1).lower()
            if kind in _FENCED_BLOCKS or kind in _DROPPED_BLOCKS:
                block = kind
                fence = f"```{begun.group(2) if kind == 'src' else ''}"
                builder.line("" if kind in _DROPPED_BLOCKS else fence, number)
            else:
                builder.line("", number)  # quote, center, ...: the text inside is plain
            continue
        builder.line(_convert_line(line, keywords, tags), number)
        drawer = bool(_DRAWER.match(line)) and line.strip().upper() != ":END:"
    if block and block not in _DROPPED_BLOCKS:
        builder.add("```")  # an unclosed block still makes a valid fence
    document = builder.parse(source.name, source.settings, source.count)
    document.title = keywords.pop("title", "") or document.title
    document.doc_type = "org"
    document.tags = _unique(_tag_list(keywords.pop("filetags", "")) + tags)
    document.metadata = {k: v for k, v in keywords.items() if k in METADATA_KEYWORDS and v}
    return document


def _convert_line(line: str, keywords: dict[str, str], tags: list[str]) -> str:
    heading = _HEADING.match(line)
    if heading:
        if heading.group(3):
            tags.extend(_tag_list(heading.group(3)))
        title = _inline(heading.group(2)).strip() or "(untitled)"
        return f"{'#' * min(len(heading.group(1)), 6)} {title}"
    keyword = _KEYWORD.match(line)
    if keyword:
        name = keyword.group(1).lower()
        keywords.setdefault(name, _inline(keyword.group(2)).strip())
        return ""
    if _DRAWER.match(line) or _PLANNING.match(line) or _COMMENT.match(line) or _RULE.match(line):
        return ""
    table_rule = _TABLE_RULE.match(line)
    if table_rule:
        cells = line.strip().strip("|").split("+")
        return table_rule.group(1) + "|" + "|".join("---" for _ in cells) + "|"
    return _inline(line)


def _inline(text: str) -> str:
    text = _LINK.sub(lambda m: m.group(2) or m.group(1), text)
    return _VERBATIM.sub(lambda m: f"`{m.group(1)}`", text)


def _tag_list(value: str) -> list[str]:
    return [t for t in re.split(r"[:\s]+", value) if t]


def _unique(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


def parse_org_source(source: Source) -> ParsedDocument:
    return parse_org(source)
