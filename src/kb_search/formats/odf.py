"""OpenDocument text, spreadsheets and presentations (ODT/ODS/ODP) with `zipfile` and
ElementTree: content.xml becomes Markdown (headings by outline level, lists, tables with a
header row; one `#` section per sheet or slide) and meta.xml gives the title, author,
language and keywords. Sheets and slides are pages (`page_unit` "sheet" / "slide"); ODT has
no pages until it is laid out, so its chunks carry headings only. The archive is read under
a size budget (`archive.SafeZip`); odfpy is unmaintained and does the same walk."""

from __future__ import annotations

from dataclasses import dataclass
from xml.etree import ElementTree

from kb_search.formats.archive import SafeZip
from kb_search.formats.converted import NOWHERE, MarkdownBuilder, Origin
from kb_search.formats.registry import Source
from kb_search.parsed import IngestError, ParsedDocument

_NS = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
    "meta": "urn:oasis:names:tc:opendocument:xmlns:meta:1.0",
    "dc": "http://purl.org/dc/elements/1.1/",
}
_MIMETYPES = {
    "odt": "application/vnd.oasis.opendocument.text",
    "ods": "application/vnd.oasis.opendocument.spreadsheet",
    "odp": "application/vnd.oasis.opendocument.presentation",
}
# Repeats in a sheet are how ODF says "the rest of the 1,048,576 rows are empty".
MAX_REPEAT = 100
MAX_TABLE_ROWS = 100_000


def _tag(prefix: str, name: str) -> str:
    return f"{{{_NS[prefix]}}}{name}"


H, P, SPAN, S, TAB, BREAK = (_tag("text", n) for n in ("h", "p", "span", "s", "tab", "line-break"))
LIST, ITEM, HEADER = _tag("text", "list"), _tag("text", "list-item"), _tag("text", "list-header")
NOTE, NOTE_CITATION = _tag("text", "note"), _tag("text", "note-citation")
TABLE, ROW, CELL = (_tag("table", n) for n in ("table", "table-row", "table-cell"))
COVERED = _tag("table", "covered-table-cell")
PAGE, FRAME = _tag("draw", "page"), _tag("draw", "frame")
NOTES = _tag("presentation", "notes")
_SKIPPED = {
    _tag("text", n)
    for n in (
        "tracked-changes",
        "table-of-content",
        "alphabetical-index",
        "illustration-index",
        "bibliography",
        "sequence-decls",
        "variable-decls",
        "user-field-decls",
    )  # fmt: skip
} | {_tag("office", "annotation"), _tag("office", "forms"), _tag("table", "named-expressions")}


@dataclass
class _Walk:
    builder: MarkdownBuilder
    origin: Origin = NOWHERE


def parse_odf(source: Source) -> ParsedDocument:
    kind = source.doc_type if source.doc_type in _MIMETYPES else "odt"
    with SafeZip(source.path, source.max_bytes, kind.upper()) as archive:
        if archive.has("mimetype"):
            declared = archive.read("mimetype").decode("ascii", "replace").strip()
            kind = next((k for k, m in _MIMETYPES.items() if declared.startswith(m)), kind)
        content = archive.xml("content.xml")
        meta = archive.xml("meta.xml") if archive.has("meta.xml") else None
    body = content.find(_tag("office", "body"))
    if body is None:
        raise IngestError(f"broken {kind.upper()} file: content.xml has no office:body")
    builder = MarkdownBuilder()
    pages = _convert(body, _Walk(builder))
    document = builder.parse(source.path, source.settings, source.count)
    info = _meta(meta)
    title = info.pop("title", "")
    default_title = source.path.stem if kind == "ods" else document.title
    document.title = str(title or default_title)
    document.doc_type = kind
    document.language = str(info.pop("language", "")) or None
    keywords = info.pop("keywords", [])
    document.tags = [str(k) for k in keywords] if isinstance(keywords, list) else []
    document.page_count = pages or None
    if kind in ("ods", "odp"):
        info["page_unit"] = "sheet" if kind == "ods" else "slide"
    document.metadata = info
    return document


def _convert(body: ElementTree.Element, walk: _Walk) -> int:
    """Write the body's Markdown; return the number of sheets or slides (0 for text)."""
    spreadsheet = body.find(_tag("office", "spreadsheet"))
    if spreadsheet is not None:
        sheets = spreadsheet.findall(TABLE)
        for number, sheet in enumerate(sheets, start=1):
            walk.origin = Origin(page=number)
            name = sheet.get(_tag("table", "name")) or f"Sheet {number}"
            walk.builder.heading(1, name, walk.origin)
            _table(sheet, walk)
        return len(sheets)
    presentation = body.find(_tag("office", "presentation"))
    if presentation is not None:
        slides = presentation.findall(PAGE)
        for number, slide in enumerate(slides, start=1):
            walk.origin = Origin(page=number)
            _slide(slide, number, walk)
        return len(slides)
    text = body.find(_tag("office", "text"))
    _blocks(text if text is not None else body, walk)
    return 0


def _slide(slide: ElementTree.Element, number: int, walk: _Walk) -> None:
    frames = [f for f in slide if f.tag == FRAME]
    title_frame = next((f for f in frames if f.get(_tag("presentation", "class")) == "title"), None)
    title = _inline(title_frame).strip() if title_frame is not None else ""
    walk.builder.heading(1, title or f"Slide {number}", walk.origin)
    for child in slide:
        if child is title_frame:
            continue
        if child.tag == NOTES:
            notes = " ".join(_inline(p) for p in child.iter(P)).strip()
            walk.builder.block(f"Notes: {notes}" if notes else "", walk.origin)
        else:
            _blocks(child, walk)


def _blocks(element: ElementTree.Element, walk: _Walk, depth: int = 0) -> None:
    for child in element:
        if child.tag in _SKIPPED:
            continue
        if child.tag == H:
            level = _int(child.get(_tag("text", "outline-level")), 1)
            walk.builder.heading(level, _inline(child), walk.origin)
        elif child.tag == P:
            walk.builder.block(_escape(_inline(child).strip()), walk.origin)
            _frames(child, walk)
        elif child.tag == LIST:
            _list(child, walk, depth)
        elif child.tag == TABLE:
            _table(child, walk)
        else:
            _blocks(child, walk, depth)


def _frames(element: ElementTree.Element, walk: _Walk) -> None:
    """Text boxes anchored in a paragraph hold paragraphs and tables of their own (a frame
    inside one of those is reached through it, not again from here)."""
    for child in element:
        if child.tag == FRAME:
            _blocks(child, walk)
        else:
            _frames(child, walk)


def _list(element: ElementTree.Element, walk: _Walk, depth: int) -> None:
    lines: list[str] = []
    for item in element:
        if item.tag not in (ITEM, HEADER):
            continue
        for part in item:
            if part.tag in (P, H):
                text = _inline(part).strip()
                if text:
                    lines.append("  " * depth + "- " + text)
            elif part.tag == LIST:
                walk.builder.block("\n".join(lines), walk.origin)
                lines = []
                _list(part, walk, depth + 1)
    walk.builder.block("\n".join(lines), walk.origin)


def _table(table: ElementTree.Element, walk: _Walk) -> None:
    rows: list[list[str]] = []
    for row in _rows(table):
        cells: list[str] = []
        for cell in row:
            if cell.tag not in (CELL, COVERED):
                continue
            text = " ".join(_inline(p) for p in cell.iter(P)).strip().replace("|", "\\|")
            repeat = _int(cell.get(_tag("table", "number-columns-repeated")), 1)
            cells.extend([text] * min(repeat, MAX_REPEAT))
        while cells and not cells[-1]:
            cells.pop()
        if not cells:
            continue
        repeat = _int(row.get(_tag("table", "number-rows-repeated")), 1)
        rows.extend([cells] * min(repeat, MAX_REPEAT))
        if len(rows) >= MAX_TABLE_ROWS:
            break
    if not rows:
        return
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    lines = [_row(rows[0]), _row(["---"] * width), *(_row(r) for r in rows[1:])]
    walk.builder.block("\n".join(lines), walk.origin)


def _rows(table: ElementTree.Element) -> list[ElementTree.Element]:
    """Rows in order, through header-row, row-group and rows containers."""
    found: list[ElementTree.Element] = []
    for child in table:
        if child.tag == ROW:
            found.append(child)
        elif child.tag != TABLE and child.tag not in _SKIPPED:
            found.extend(_rows(child))
    return found


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _inline(element: ElementTree.Element) -> str:
    """The text of a paragraph: spans, links, spaces and tabs; notes' bodies in brackets."""
    parts: list[str] = [element.text or ""]
    for child in element:
        if child.tag == S:
            parts.append(" " * min(_int(child.get(_tag("text", "c")), 1), 100))
        elif child.tag in (TAB, BREAK):
            parts.append(" ")
        elif child.tag == NOTE:
            body = " ".join(_inline(p) for p in child.iter(P)).strip()
            parts.append(f" [{body}]" if body else "")
        elif child.tag == NOTE_CITATION or child.tag in _SKIPPED:
            pass
        elif child.tag == FRAME:
            pass  # a text box's paragraphs are blocks of their own (see _frames)
        else:
            parts.append(_inline(child))
        parts.append(child.tail or "")
    return " ".join("".join(parts).split())


def _escape(line: str) -> str:
    """Text that Markdown would read as a heading, fence or table stays text."""
    return "\\" + line if line.startswith(("#", "|", "```", "~~~")) else line


def _meta(meta: ElementTree.Element | None) -> dict[str, object]:
    if meta is None:
        return {}
    info: dict[str, object] = {}
    fields = {
        "title": ("dc", "title"),
        "author": ("dc", "creator"),
        "initial_author": ("meta", "initial-creator"),
        "date": ("dc", "date"),
        "language": ("dc", "language"),
        "subject": ("dc", "subject"),
        "description": ("dc", "description"),
    }
    for key, (prefix, name) in fields.items():
        element = meta.find(f".//{_tag(prefix, name)}")
        text = " ".join("".join(element.itertext()).split()) if element is not None else ""
        if text:
            info[key] = text
    keywords = [" ".join("".join(k.itertext()).split()) for k in meta.iter(_tag("meta", "keyword"))]
    info["keywords"] = [k for k in keywords if k]
    return info


def _int(value: str | None, default: int) -> int:
    try:
        return max(1, int(value)) if value is not None else default
    except ValueError:
        return default


def parse_odf_source(source: Source) -> ParsedDocument:
    return parse_odf(source)
