"""HTML -> Markdown-ish text with the standard library only, then Markdown chunking.

The always-available HTML path (Docling, when installed, takes over in ``ingest/__init__``).
Chunks carry heading chains but no line range: lines of the converted text are not lines
of the source file, and a citation must not point at the wrong place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from kb_search.chunking.tokens import TokenCounter, count_tokens
from kb_search.formats.markdown import parse_markdown
from kb_search.formats.registry import Source
from kb_search.parsed import ChunkSettings, IngestError, ParsedDocument

HTML_EXTENSIONS = frozenset({".html", ".htm", ".xhtml"})
# Never visible text, or site chrome repeated on every page of a site.
SKIP_TAGS = frozenset(
    {"script", "style", "title", "nav", "footer", "noscript", "template", "svg", "iframe"}
)
# Void elements never get an end tag; they must not open a skip region or a block.
VOID_TAGS = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)
BLOCK_TAGS = frozenset(
    {
        "p", "div", "section", "article", "main", "header", "aside", "blockquote", "figure",
        "figcaption", "address", "details", "summary", "dl", "dt", "dd", "form", "fieldset",
        "hr", "body", "html", "caption",
    }
)  # fmt: skip
HEADING_TAGS = {f"h{n}": n for n in range(1, 7)}
LIST_TAGS = frozenset({"ul", "ol", "menu"})
_SPACE = re.compile(r"\s+")
# Converted text that Markdown would read as structure (a heading, table, fence, rule).
_MARKDOWN_LOOKALIKE = re.compile(r"^(#|\||```|~~~|[-=*_]{3,}\s*$)")
_CODE_LANGUAGE = re.compile(r"(?:^|\s)(?:language|lang)-([\w+#.-]+)")


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
    """Convert an HTML page to Markdown and chunk it by heading (doc_type "html")."""
    converted = html_to_markdown(text)
    document = parse_markdown(converted.markdown, path, settings, count)
    for chunk in document.chunks:
        chunk.line_start = chunk.line_end = None
    first_h1 = document.title if document.title != path.stem else None
    document.title = converted.title or first_h1 or path.stem
    document.doc_type = "html"
    document.language = converted.language
    document.tags = converted.tags
    document.metadata = {**converted.metadata, "converter": "html.parser"}
    return document


def html_to_markdown(html: str) -> HtmlConversion:
    """Markdown-ish text for an HTML page: headings, paragraphs, lists, code, tables."""
    converter = _Converter()
    converter.feed(html)
    converter.close()
    return converter.result()


@dataclass
class _Table:
    rows: list[list[str]] = field(default_factory=list)
    header_rows: int = 0
    cell: list[str] | None = None
    cell_span: int = 1
    row_is_header: bool = False

    def start_row(self) -> None:
        self.end_cell()
        self.rows.append([])
        self.row_is_header = True

    def start_cell(self, is_header: bool, span: int) -> None:
        self.end_cell()
        if not self.rows:
            self.start_row()
        self.row_is_header = self.row_is_header and is_header
        self.cell, self.cell_span = [], span

    def end_cell(self) -> None:
        if self.cell is None:
            return
        text = _SPACE.sub(" ", "".join(self.cell)).strip().replace("|", "\\|")
        self.rows[-1].extend([text] + [""] * (self.cell_span - 1))
        self.cell = None

    def end_row(self) -> None:
        self.end_cell()
        if self.rows and self.rows[-1] and self.row_is_header and len(self.rows) == 1:
            self.header_rows = 1

    def render(self) -> list[str]:
        self.end_row()
        rows = [row for row in self.rows if any(cell for cell in row)]
        if not rows:
            return []
        width = max(len(row) for row in rows)
        rows = [row + [""] * (width - len(row)) for row in rows]
        # Markdown tables need a header row; a table without <th> promotes its first row.
        lines = [_table_row(rows[0]), _table_row(["---"] * width)]
        return lines + [_table_row(row) for row in rows[1:]]


def _table_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


class _Converter(HTMLParser):
    """Collects output lines; blank lines separate Markdown blocks."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self.inline: list[str] = []
        self.skip_depth = 0
        self.in_head = False
        self.in_title = False
        self.title_parts: list[str] = []
        self.heading_level = 0
        self.lists: list[list[int]] = []  # per open list: [is_ordered, next number]
        self.item_prefix: str | None = None
        self.pre_depth = 0
        self.pre_parts: list[str] = []
        self.pre_language = ""
        self.tables: list[_Table] = []
        self.language: str | None = None
        self.meta: dict[str, str] = {}

    # -- tags
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        if tag == "html" and attributes.get("lang"):
            self.language = attributes["lang"].strip() or None
        if tag == "meta":
            self._meta(attributes)
        if tag == "title":
            self.in_title = True
        # </head> is optional in HTML: <body> ends the head all the same.
        self.in_head = tag == "head" or (self.in_head and tag != "body")
        if tag in SKIP_TAGS and tag not in VOID_TAGS:
            self.skip_depth += 1
        if self.skip_depth or self.in_head:
            return
        self._open(tag, attributes)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # <br/> and friends: an end tag for a non-void element would unbalance the counters.
        self.handle_starttag(tag, attrs)
        if tag not in VOID_TAGS:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        if tag == "head":
            self.in_head = False
            return
        if tag in SKIP_TAGS and tag not in VOID_TAGS:
            self.skip_depth = max(0, self.skip_depth - 1)
            return
        if self.skip_depth or self.in_head:
            return
        self._close(tag)

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title_parts.append(data)
        if self.skip_depth or self.in_head:
            return
        if self.pre_depth:
            self.pre_parts.append(data)
        elif self.tables and self.tables[-1].cell is not None:
            self.tables[-1].cell.append(data)
        else:
            self.inline.append(data.replace("\n", " "))  # only <br> breaks a line

    # -- opening and closing elements
    def _open(self, tag: str, attributes: dict[str, str]) -> None:
        if tag == "pre":
            self._start_pre(attributes)
        elif self.pre_depth:
            if tag == "code" and not self.pre_language:
                self.pre_language = _code_language(attributes)
        elif tag == "table":
            self._flush()
            self.tables.append(_Table())
        elif self.tables and tag in ("tr", "td", "th"):
            self._table_tag(tag, attributes)
        elif tag in HEADING_TAGS:
            self._flush()
            self.heading_level = HEADING_TAGS[tag]
        elif tag in LIST_TAGS:
            self._flush()
            self.lists.append([int(tag == "ol"), _start_number(attributes)])
        elif tag == "li":
            self._start_item()
        elif tag == "br":
            self._text("\n")
        elif tag == "code":
            self._text("`")
        elif tag in BLOCK_TAGS:
            self._flush()

    def _close(self, tag: str) -> None:
        if tag == "pre":
            self._end_pre()
        elif self.pre_depth:
            return
        elif tag == "table" and self.tables:
            self._end_table()
        elif self.tables and tag in ("tr", "td", "th"):
            if tag == "tr":
                self.tables[-1].end_row()
            else:
                self.tables[-1].end_cell()
        elif tag in HEADING_TAGS:
            self._flush()
            self.heading_level = 0
        elif tag in LIST_TAGS:
            self._end_list()
        elif tag == "li":
            self._flush()
            self.item_prefix = None
        elif tag == "code":
            self._text("`")
        elif tag in BLOCK_TAGS:
            self._flush()

    def _text(self, text: str) -> None:
        if self.tables and self.tables[-1].cell is not None:
            self.tables[-1].cell.append(" " if text == "\n" else text)
        else:
            self.inline.append(text)

    def _table_tag(self, tag: str, attributes: dict[str, str]) -> None:
        table = self.tables[-1]
        if tag == "tr":
            table.start_row()
        else:
            table.start_cell(tag == "th", _span(attributes))

    def _end_table(self) -> None:
        lines = self.tables.pop().render()
        if self.tables and self.tables[-1].cell is not None:
            # A table nested in a cell flattens into that cell's text.
            self.tables[-1].cell.append(" ".join(lines))
            return
        self._block(lines)

    def _start_pre(self, attributes: dict[str, str]) -> None:
        if not self.pre_depth:
            self._flush()
            self.pre_parts, self.pre_language = [], _code_language(attributes)
        self.pre_depth += 1

    def _end_pre(self) -> None:
        self.pre_depth = max(0, self.pre_depth - 1)
        if self.pre_depth:
            return
        code = "".join(self.pre_parts).strip("\n")
        if not code.strip():
            return
        fence = "~~~" if "```" in code else "```"
        self._block([f"{fence}{self.pre_language}", *code.split("\n"), fence])

    def _start_item(self) -> None:
        self._flush()
        if not self.lists:
            self.lists.append([0, 1])  # stray <li>: treat as a bullet list
        current = self.lists[-1]
        marker = f"{current[1]}." if current[0] else "-"
        current[1] += 1
        self.item_prefix = "  " * (len(self.lists) - 1) + marker + " "

    def _end_list(self) -> None:
        self._flush()
        if self.lists:
            self.lists.pop()
        if not self.lists:
            self._blank()

    def _meta(self, attributes: dict[str, str]) -> None:
        name = (attributes.get("name") or attributes.get("property") or "").lower()
        content = _SPACE.sub(" ", attributes.get("content", "")).strip()
        if name and content and name in ("description", "keywords", "author", "og:title"):
            self.meta[name] = content

    # -- emitting output
    def _flush(self) -> None:
        """End the current inline run: a heading, a list item or a paragraph."""
        text = _inline_text("".join(self.inline))
        self.inline = []
        if not text:
            return  # a pending list marker or heading level waits for its text (<li><p>)
        prefix, self.item_prefix = self.item_prefix, None
        level, self.heading_level = self.heading_level, 0
        if level:
            self._block([f"{'#' * level} {text.replace(chr(10), ' ')}"])
        elif prefix is not None:
            self.lines.append(prefix + text.replace("\n", " "))
        else:
            self._block([_escape(line) for line in text.split("\n")])

    def _block(self, lines: list[str]) -> None:
        if not lines:
            return
        self._blank()
        self.lines.extend(lines)
        self.lines.append("")

    def _blank(self) -> None:
        if self.lines and self.lines[-1] != "":
            self.lines.append("")

    def result(self) -> HtmlConversion:
        self._flush()
        while self.tables:
            self._end_table()
        markdown = "\n".join(self.lines).strip("\n") + "\n"
        title = _SPACE.sub(" ", "".join(self.title_parts)).strip() or None
        keywords = self.meta.pop("keywords", "")
        tags = [t.strip() for t in keywords.split(",") if t.strip()]
        og_title = self.meta.pop("og:title", None)
        return HtmlConversion(markdown, title or og_title, self.language, self.meta, tags)


def _inline_text(raw: str) -> str:
    """Collapse whitespace within lines, keeping the newlines that <br> put there."""
    lines = (_SPACE.sub(" ", line).strip() for line in raw.split("\n"))
    return "\n".join(line for line in lines if line and line != "``")


def _escape(line: str) -> str:
    return "\\" + line if _MARKDOWN_LOOKALIKE.match(line) else line


def _code_language(attributes: dict[str, str]) -> str:
    match = _CODE_LANGUAGE.search(attributes.get("class", ""))
    return match.group(1) if match else ""


def _span(attributes: dict[str, str]) -> int:
    try:
        return max(1, min(int(attributes.get("colspan", "1")), 50))
    except ValueError:
        return 1


def _start_number(attributes: dict[str, str]) -> int:
    try:
        return int(attributes.get("start", "1"))
    except ValueError:
        return 1


def parse_html_source(source: Source) -> ParsedDocument:
    """Docling's HTML reader where it is installed, else (or when it rejects the page) ours."""
    from kb_search.formats import docling

    text = source.text()
    if docling.docling_available("html") is None:
        try:
            return docling.convert_with_docling(source.path, source.settings, source.count)
        except IngestError:
            pass  # the stdlib converter copes with what Docling's backend rejects
    return parse_html(text, source.path, source.settings, source.count)
