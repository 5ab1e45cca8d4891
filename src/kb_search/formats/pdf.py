"""PDF ingestion over the pypdfium2 text layer: layout-aware, page-aware chunks, no ML.

Pipeline: characters with boxes -> fragments (runs on one baseline) -> columns per page (vertical
gutter) -> lines -> cleanup (headers/footers, page numbers, hyphenation) -> paragraphs with
headings -> chunks under the shared rules of ``chunking/units.py``, preferring page boundaries.
"""

from __future__ import annotations

import ctypes
import math
import re
import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from kb_search.chunking.segment import Cut
from kb_search.chunking.tokens import TokenCounter, count_tokens
from kb_search.chunking.units import Passage, chunk_passages
from kb_search.formats import ocr as ocr_mod
from kb_search.formats import pdf_front as front
from kb_search.formats.reader import open_user_file, read_user_file
from kb_search.formats.registry import Source
from kb_search.parsed import ChunkSettings, IngestError, ParsedDocument
from kb_search.text import plural

OCR_MODES = ("auto", "always", "never")
TABLE_CELLS = 3
# A page with this much text is read from its text layer alone, whatever images it holds.
MIXED_PAGE_MAX_ALNUM = 400
LIGATURES = str.maketrans(
    {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl"}
)
HYPHENS = "-\u00ad\u2010\u2011"
LINE_END_HYPHEN_RE = re.compile(r"(\w+)([-\u00ad\u2010\u2011\u2013])$")
BULLET_RE = re.compile(r"^([\u2022\u00b7\u25aa\u25e6\u2023\u2013*-]|\(?\d{1,2}[.)]|\(?[a-z][.)])\s")
NUMBERED_HEADING_RE = re.compile(r"^((\d+(\.\d+)*)\.?|[IVX]{1,5}\.|[A-H]\.)\s+\S")
NUMBER_PREFIX_RE = re.compile(r"^((\d+(\.\d+)*)\.?|[IVX]{1,5}\.|[A-H]\.)\s+")
# A line that starts with one of these continues a sentence from the line above.
CONTINUATION_WORDS = frozenset(
    {"a", "an", "and", "as", "at", "but", "by", "for", "from", "in", "is", "it", "of", "on"}
    | {"or", "that", "the", "to", "was", "we", "which", "with"}
)
SENTENCE_BREAK_RE = re.compile(r"[^\W\d_]{3,}[.!?]\s+[A-Z]")
PAGE_NUMBER_RE = re.compile(
    r"^[-\u2013\s]*(page\s+)?(\d{1,4}|[ivxlc]{1,6})(\s*(/|of)\s*\d{1,4})?[-\u2013\s]*$", re.I
)
WORD_RE = re.compile(r"[^\W\d_][\w\-\u2010]*\w|\w+", re.UNICODE)
PAGE_OBJECT_RE = re.compile(rb"/Type\s*/Page(?!s)")
PDF_DATE_RE = re.compile(
    r"^(D:)?(\d{4})(\d\d)?(\d\d)?(\d\d)?(\d\d)?(\d\d)?([Zz+\-])?(\d\d)?'?(\d\d)?"
)
MEANINGLESS_TITLE_RE = re.compile(
    r"^(untitled|title|document\d*|microsoft (word|powerpoint).*"
    r"|.*\.(docx?|pdf|tex|dvi|rtf|odt|pptx?|xlsx?|indd|exe|e?ps|txt|html?|qxd|wpd))$",
    re.I,
)


@dataclass
class _Frag:
    """A run of characters on one baseline; coordinates in points, origin top-left."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    size: float  # glyph box height; 0 when unknown (OCR)
    bold: bool = False
    rotated: bool = False

    @property
    def height(self) -> float:
        return self.y1 - self.y0


@dataclass
class _Line:
    text: str
    page: int
    x0: float
    y0: float
    x1: float
    y1: float
    size: float
    bold: bool
    block: int  # index of the column block on the page, in reading order
    heading_level: int | None = None
    cells: int = 1  # fragments separated by wide gaps; 3+ is a table row


@dataclass
class _Para:
    text: str
    page: int
    heading_level: int | None = None
    chain: str | None = None


@dataclass
class _Page:
    number: int
    height: float
    lines: list[_Line] = field(default_factory=list)


# --------------------------------------------------------------------------- public API


def parse_pdf(
    path: Path,
    settings: ChunkSettings,
    count: TokenCounter = count_tokens,
    ocr: str = "auto",
) -> ParsedDocument:
    """Parse a PDF into page-aware chunks; raises IngestError for files that cannot be used."""
    if ocr not in OCR_MODES:
        raise ValueError(f"ocr must be one of {OCR_MODES}, not {ocr!r}")
    _check_header(path)
    doc = _open(path)
    try:
        page_count = len(doc)
        if page_count == 0:
            raise IngestError("PDF has no pages")
        metadata = _metadata(doc)
        pages, ocr_info = _extract_pages(doc, ocr)
    finally:
        doc.close()
    metadata.update(ocr_info)
    if not any(p.lines for p in pages):
        raise IngestError(_no_text_message(ocr, ocr_info))
    body_size = _body_size(pages)
    _remove_headers_footers(pages)
    title = _choose_title(metadata.get("title"), pages, body_size, path)
    paras = _paragraphs(pages, body_size, title)
    _fix_page_break_hyphens(paras)
    cut = _chunk(paras, settings, count)
    if not cut.chunks:
        raise IngestError(_no_text_message(ocr, ocr_info))
    return ParsedDocument(
        title=title,
        doc_type="pdf",
        chunks=cut.chunks,
        metadata=metadata,
        page_count=page_count,
        notes=cut.notes,
    )


# --------------------------------------------------------------------------- opening


def _check_header(path: Path) -> None:
    try:
        head = read_user_file(path, 1024)
    except OSError as exc:
        raise IngestError(f"cannot read file: {exc.strerror or exc}") from exc
    if not head:
        raise IngestError("empty file (0 bytes), not a PDF")
    if b"%PDF-" not in head:
        raise IngestError("not a PDF: no %PDF- header (wrong extension?)")


def _open(path: Path) -> pdfium.PdfDocument:
    try:
        handle = open_user_file(path)
    except OSError as exc:
        raise IngestError(f"cannot read file: {exc.strerror or exc}") from exc
    try:
        return pdfium.PdfDocument(handle, autoclose=True)
    except pdfium.PdfiumError as exc:
        handle.close()
        code = getattr(exc, "err_code", None)
        if code == pdfium_c.FPDF_ERR_PASSWORD:
            raise IngestError("encrypted PDF: password required") from exc
        if code == pdfium_c.FPDF_ERR_SECURITY:
            raise IngestError("encrypted PDF: unsupported security handler") from exc
        # pdfium refuses an empty page tree without setting an error code, so look for one
        if code == pdfium_c.FPDF_ERR_SUCCESS or _empty_page_tree(path):
            raise IngestError("PDF has no pages") from exc
        if code == pdfium_c.FPDF_ERR_FILE:
            raise IngestError("cannot open file") from exc
        raise IngestError("broken PDF: truncated or damaged, cannot be parsed") from exc


def _empty_page_tree(path: Path) -> bool:
    try:
        data = read_user_file(path)
    except OSError:
        return False
    return re.search(rb"/Count\s+0\b", data) is not None and not PAGE_OBJECT_RE.search(data)


def _no_text_message(ocr: str, ocr_info: dict) -> str:
    if ocr == "never":
        return "no text layer and OCR is disabled (ocr=never)"
    skipped = ocr_info.get("ocr_skipped_pages")
    if skipped:
        pages = plural(len(skipped), "page")
        return f"no text layer on {pages} and no OCR engine is installed; {ocr_mod.HINT}"
    if ocr_info.get("ocr_pages"):
        return "no text found: no text layer and OCR recognised nothing"
    return "no extractable text"


def _metadata(doc: pdfium.PdfDocument) -> dict:
    try:
        raw = doc.get_metadata_dict(skip_empty=True)
    except Exception:  # damaged Info dictionaries must not stop ingestion
        raw = {}
    keys = {
        "Title": "title",
        "Author": "author",
        "Subject": "subject",
        "Keywords": "keywords",
        "Creator": "creator",
        "Producer": "producer",
        "CreationDate": "created",
        "ModDate": "modified",
    }
    meta: dict = {}
    for src, dst in keys.items():
        value = _clean_meta(raw.get(src, ""))
        if value:
            meta[dst] = _pdf_date(value) if dst in ("created", "modified") else value
    return meta


def _clean_meta(value: str) -> str:
    return re.sub(r"\s+", " ", value.replace("\x00", "")).strip()


def _pdf_date(value: str) -> str:
    """'D:20230421160435+01'00'' -> '2023-04-21T16:04:35+01:00'; unparseable dates pass through."""
    m = PDF_DATE_RE.match(value)
    if not m:
        return value
    year, month, day = m.group(2), m.group(3) or "01", m.group(4) or "01"
    out = f"{year}-{month}-{day}"
    if m.group(5):
        out += f"T{m.group(5)}:{m.group(6) or '00'}:{m.group(7) or '00'}"
        tz = m.group(8)
        if tz in ("Z", "z"):
            out += "Z"
        elif tz and m.group(9):
            out += f"{tz}{m.group(9)}:{m.group(10) or '00'}"
    return out


# --------------------------------------------------------------------------- extraction


def _extract_pages(doc: pdfium.PdfDocument, ocr: str) -> tuple[list[_Page], dict]:
    pages: list[_Page] = []
    need_ocr: dict[int, list[_Frag]] = {}  # page index -> its text-layer fragments
    broken: list[int] = []
    for index in range(len(doc)):
        try:
            page = doc[index]
        except pdfium.PdfiumError:
            broken.append(index + 1)
            pages.append(_Page(index + 1, 0.0))
            continue
        width, height = page.get_size()
        frags = _page_fragments(page, height)
        if ocr == "always" or (ocr == "auto" and _needs_ocr(page, frags, width, height)):
            need_ocr[index] = frags
        pages.append(_Page(index + 1, height, _layout(frags, index + 1, width)))
        page.close()
    if broken and len(broken) == len(pages):
        raise IngestError("broken PDF: no page could be read")
    info: dict = {"unreadable_pages": broken} if broken else {}
    if need_ocr and ocr != "never":
        info.update(_run_ocr(doc, pages, need_ocr))
    return pages, info


def _run_ocr(doc: pdfium.PdfDocument, pages: list[_Page], need_ocr: dict[int, list[_Frag]]) -> dict:
    """OCR the pages in `need_ocr` and merge what it reads with their text layer: a typed header
    above a scanned body keeps both, in reading order, and a line the text layer already holds
    is not read twice."""
    engine = ocr_mod.get_engine()
    numbers = [i + 1 for i in need_ocr]
    if engine is None:
        return {"ocr_skipped_pages": numbers, "ocr_hint": ocr_mod.HINT}
    for index, text_frags in need_ocr.items():
        page = doc[index]
        width, _height = page.get_size()
        boxes = [(f.x0, f.y0, f.x1, f.y1) for f in text_frags if not f.rotated]
        frags = [
            _Frag(line.text, line.x0, line.y0, line.x1, line.y1, 0.0)
            for line in ocr_mod.unseen_lines(ocr_mod.ocr_page(page, engine), boxes)
        ]
        page.close()
        if frags:
            pages[index].lines = _layout(text_frags + frags, index + 1, width)
    return {"ocr_pages": numbers, "ocr_engine": engine.name}


def _needs_ocr(page: pdfium.PdfPage, frags: list[_Frag], width: float, height: float) -> bool:
    """No text layer; or a page that is mostly one big image (a scan) with almost no text, or
    whose text lies outside the image (a typed header over a scanned body)."""
    alnum = sum(ch.isalnum() for f in frags for ch in f.text)
    if alnum == 0:
        return True
    if alnum >= MIXED_PAGE_MAX_ALNUM:
        return False
    page_area = max(width * height, 1.0)
    for obj in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=2):
        left, bottom, right, top = obj.get_bounds()
        if (right - left) * (top - bottom) < 0.5 * page_area:
            continue
        if alnum < 50:
            return True
        # the image in the top-left coordinates of the fragments
        x0, y0, x1, y1 = left, height - top, right, height - bottom
        inside = sum(
            ch.isalnum()
            for f in frags
            if x0 <= (f.x0 + f.x1) / 2 <= x1 and y0 <= (f.y0 + f.y1) / 2 <= y1
            for ch in f.text
        )
        if inside < 20:
            return True
    return False


def _page_fragments(page: pdfium.PdfPage, height: float) -> list[_Frag]:
    textpage = page.get_textpage()
    try:
        return list(_fragments(textpage, height))
    finally:
        textpage.close()


def _fragments(textpage: pdfium.PdfTextPage, height: float) -> Iterable[_Frag]:
    """Group characters, in content-stream order, into runs on one baseline without big gaps."""
    raw = textpage.raw
    rect = pdfium_c.FS_RECTF()
    get_unicode, get_box = pdfium_c.FPDFText_GetUnicode, pdfium_c.FPDFText_GetLooseCharBox
    rotated = _RotatedText()
    chars: list[str] = []
    heights: list[float] = []  # per character: the run's size is their median
    bx0 = by0 = bx1 = by1 = 0.0  # box of the current run
    last_x0 = last_x1 = 0.0
    first_index = last_index = 0
    space = False
    for i in range(textpage.count_chars()):
        code = get_unicode(raw, i)
        # pdfium reports a hyphen that ends a line as U+0002
        ch = "-" if code == 2 else chr(code) if 0 < code < 0x110000 else ""
        if not ch or ch.isspace():
            space = space or bool(chars)
            rotated.gap(ch in "\r\n" and pdfium_c.FPDFText_IsGenerated(raw, i))
            continue
        if not get_box(raw, i, rect):
            continue
        x0, x1, y0, y1 = rect.left, rect.right, height - rect.top, height - rect.bottom
        h = max(y1 - y0, 0.1)
        # ligatures expand to several chars sharing one box, so compare with the last x0
        continues = (
            chars
            and min(y1, by1) - max(y0, by0) > 0.5 * min(h, by1 - by0)
            and x0 - last_x1 <= h
            and x0 >= last_x0 - 0.5 * h
        )
        if not continues:
            # only a break in the flow can start rotated text, so the angle is checked here
            if _is_rotated(pdfium_c.FPDFText_GetCharAngle(raw, i)):
                rotated.add(ch)
                continue
            if chars:
                box = (bx0, by0, bx1, by1)
                yield _make_frag(textpage, chars, heights, box, first_index, last_index)
            chars, heights, space = [ch], [h], False
            bx0, by0, bx1, by1 = x0, y0, x1, y1
            first_index = i
        else:
            if space or x0 - last_x1 > 0.6 * h:
                chars.append(" ")
            chars.append(ch)
            heights.append(h)
            bx0, by0, bx1, by1 = min(bx0, x0), min(by0, y0), max(bx1, x1), max(by1, y1)
        last_x0, last_x1, last_index = x0, x1, i
        space = False
    if chars:
        yield _make_frag(textpage, chars, heights, (bx0, by0, bx1, by1), first_index, last_index)
    for text in rotated.lines():
        yield _Frag(text, 0.0, height, 0.0, height, 0.0, rotated=True)


def _is_rotated(angle: float) -> bool:
    return angle >= 0 and 0.2 < angle < 2 * math.pi - 0.2


class _RotatedText:
    """Vertical or slanted text (margin stamps, landscape tables) kept in stream order by line."""

    def __init__(self) -> None:
        self._lines: list[list[str]] = [[]]

    def gap(self, newline: bool) -> None:
        current = self._lines[-1]
        if newline and current:
            self._lines.append([])
        elif current and current[-1] != " ":
            current.append(" ")

    def add(self, ch: str) -> None:
        self._lines[-1].append(ch)

    def lines(self) -> list[str]:
        texts = ("".join(chars).translate(LIGATURES).strip() for chars in self._lines)
        return [t for t in texts if t]


def _make_frag(
    textpage: pdfium.PdfTextPage,
    chars: list[str],
    heights: list[float],
    box: tuple[float, float, float, float],
    first: int,
    last: int,
) -> _Frag:
    text = "".join(chars).translate(LIGATURES)
    bold = _is_bold(textpage, first) and (last == first or _is_bold(textpage, last))
    # the median glyph height, not the run's box: one tall '{' or '(' must not make an e-mail
    # line the largest text on the page
    return _Frag(text, box[0], box[1], box[2], box[3], statistics.median(heights), bold)


def _is_bold(textpage: pdfium.PdfTextPage, index: int) -> bool:
    if pdfium_c.FPDFText_GetFontWeight(textpage.raw, index) >= 600:
        return True
    buf = ctypes.create_string_buffer(128)
    flags = ctypes.c_int()
    n = pdfium_c.FPDFText_GetFontInfo(textpage.raw, index, buf, 128, ctypes.byref(flags))
    name = buf.raw[: max(n - 1, 0)].decode("latin-1", "replace").lower()
    return any(w in name for w in ("bold", "black", "heavy", "semibold", "demi"))


def _overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


# --------------------------------------------------------------------------- layout


def _layout(frags: list[_Frag], page: int, width: float) -> list[_Line]:
    upright = [f for f in frags if f.text.strip() and not f.rotated]
    blocks = _order_blocks(upright)
    lines: list[_Line] = []
    for block_no, block in enumerate(blocks):
        lines.extend(_block_lines(block, page, block_no))
    for offset, frag in enumerate(f for f in frags if f.rotated):
        line = _row_to_line([frag], page, len(blocks))
        line.y0 = line.y1 = frag.y0 + offset * 0.001  # keeps stream order below the page body
        lines.append(line)
    return lines


def _order_blocks(frags: list[_Frag], depth: int = 0) -> list[list[_Frag]]:
    """Split a page into reading-order blocks: full-width bands, and within each band, columns."""
    gutter = _find_gutter(frags) if depth < 2 else None
    if gutter is None:
        return [frags] if frags else []
    blocks: list[list[_Frag]] = []
    left: list[_Frag] = []
    right: list[_Frag] = []
    spanning: list[_Frag] | None = None
    for frag in sorted(frags, key=lambda f: (f.y0, f.x0)):
        side = left if frag.x1 <= gutter else right if frag.x0 >= gutter else None
        if side is not None:
            side.append(frag)
            spanning = None
            continue
        # spans the gutter: a title, an abstract or a full-width caption ends the band above
        if left or right:
            blocks.extend(_columns(left, right, depth))
            left, right = [], []
        if spanning is None:
            spanning = []
            blocks.append(spanning)
        spanning.append(frag)
    blocks.extend(_columns(left, right, depth))
    return blocks


def _columns(left: list[_Frag], right: list[_Frag], depth: int) -> list[list[_Frag]]:
    return [b for side in (left, right) if side for b in _order_blocks(side, depth + 1)]


def _find_gutter(frags: list[_Frag]) -> float | None:
    """The x of a vertical white strip with prose columns on both sides, if there is one."""
    body = [f for f in frags if len(f.text) >= 3]
    if len(body) < 10:
        return None
    left_edge = min(f.x0 for f in body)
    right_edge = max(f.x1 for f in body)
    width = right_edge - left_edge
    if width < 100:
        return None
    cover = _coverage(body, left_edge, int(width) + 1)
    lo, hi = int(0.2 * width), int(0.8 * width)
    # full-width lines (title, authors, abstract) may cross the gutter; let an eighth do so
    allowed = min(cover[lo : hi + 1])
    if allowed > max(2, len(body) // 8):
        return None
    runs = _runs(cover, lo, hi, allowed)
    for start, end in sorted(runs, key=lambda r: r[0] - r[1]):
        gutter = left_edge + (start + end) / 2
        if _columns_are_prose(body, gutter):
            return gutter
    return None


def _coverage(body: list[_Frag], left_edge: float, bins: int) -> list[int]:
    cover = [0] * bins
    for f in body:
        for x in range(int(f.x0 - left_edge), min(int(f.x1 - left_edge) + 1, bins)):
            cover[x] += 1
    return cover


def _runs(cover: list[int], lo: int, hi: int, allowed: int) -> list[tuple[int, int]]:
    """Stretches at least 4pt wide where no more than `allowed` fragments cross."""
    runs: list[tuple[int, int]] = []
    start = None
    for x in range(lo, hi + 2):
        if x <= hi and cover[x] <= allowed:
            start = x if start is None else start
        elif start is not None:
            if x - start >= 4:
                runs.append((start, x - 1))
            start = None
    return runs


def _columns_are_prose(body: list[_Frag], gutter: float) -> bool:
    """Tables also have white strips; columns of text have many long lines on both sides."""
    total = sum(len(f.text) for f in body)
    for side in ([f for f in body if f.x1 <= gutter], [f for f in body if f.x0 >= gutter]):
        if len(side) < 5 or sum(len(f.text) for f in side) < 0.15 * total:
            return False
        widths = sorted(f.x1 - f.x0 for f in side)
        if statistics.median(widths) < 0.5 * widths[int(0.9 * (len(widths) - 1))]:
            return False
        if statistics.median(len(f.text) for f in side) < 12:
            return False
    return True


def _block_lines(block: list[_Frag], page: int, block_no: int) -> list[_Line]:
    rows: list[list[_Frag]] = []
    for frag in sorted(block, key=lambda f: (f.y0 + f.y1) / 2):
        row = rows[-1] if rows else None
        if row is not None:
            y0, y1 = min(f.y0 for f in row), max(f.y1 for f in row)
            if _overlap(frag.y0, frag.y1, y0, y1) > 0.5 * min(frag.height, y1 - y0):
                row.append(frag)
                continue
        rows.append([frag])
    return [_row_to_line(row, page, block_no) for row in rows]


def _row_to_line(row: list[_Frag], page: int, block_no: int) -> _Line:
    row.sort(key=lambda f: f.x0)
    sep = " | " if len(row) >= TABLE_CELLS else " "
    text = re.sub(r"[ \t]+", " ", sep.join(f.text.strip() for f in row)).strip()
    main = max(row, key=lambda f: len(f.text))
    return _Line(
        text=text,
        page=page,
        x0=min(f.x0 for f in row),
        y0=min(f.y0 for f in row),
        x1=max(f.x1 for f in row),
        y1=max(f.y1 for f in row),
        size=main.size,
        bold=all(f.bold for f in row),
        block=block_no,
        cells=len(row),
    )


# --------------------------------------------------------------------------- cleanup


def _body_size(pages: list[_Page]) -> float:
    sizes: Counter[float] = Counter()
    for page in pages:
        for line in page.lines:
            if line.size > 0:
                sizes[round(line.size * 2) / 2] += len(line.text)
    return sizes.most_common(1)[0][0] if sizes else 0.0


def _edge_lines(page: _Page) -> list[_Line]:
    """The two topmost and two bottom-most lines, when they sit in the page margins."""
    ordered = sorted(page.lines, key=lambda ln: ln.y0)
    picked = ordered[:2] + ordered[-2:]
    margin = 0.15 * page.height
    return [ln for ln in picked if ln.y1 <= margin or ln.y0 >= page.height - margin]


def _remove_headers_footers(pages: list[_Page]) -> None:
    counts: Counter[str] = Counter()
    for page in pages:
        counts.update({_norm_key(ln.text) for ln in _edge_lines(page)})
    threshold = max(3, 0.3 * len(pages))
    repeated = {k for k, n in counts.items() if n >= threshold} if len(pages) >= 3 else set()
    for page in pages:
        drop = {
            id(ln)
            for ln in _edge_lines(page)
            if _norm_key(ln.text) in repeated or PAGE_NUMBER_RE.match(ln.text)
        }
        if drop and len(drop) < len(page.lines):
            page.lines = [ln for ln in page.lines if id(ln) not in drop]


def _norm_key(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"\d+", "#", text.lower())).strip()


def _fix_page_break_hyphens(paras: list[_Para]) -> None:
    """'infor-' at the foot of one page and 'mation' atop the next become one word."""
    for prev, nxt in pairwise(paras):
        if prev.page == nxt.page or prev.heading_level or nxt.heading_level:
            continue
        m = re.search(r"(\s|^)(\w+)[" + HYPHENS + r"]$", prev.text)
        if m and nxt.text[:1].islower():
            prev.text = prev.text[: m.start(2)].rstrip()
            nxt.text = m.group(2) + nxt.text
    paras[:] = [p for p in paras if p.text]


# --------------------------------------------------------------------------- headings, title


def _heading_level(line: _Line, body_size: float, heading_sizes: list[float]) -> int | None:
    text = line.text
    words = text.split()
    if line.cells >= TABLE_CELLS or not _could_be_heading(text, words):
        return None
    numbered = NUMBERED_HEADING_RE.match(text)
    larger = body_size > 0 and line.size >= 1.15 * body_size
    if text[-1] == "." and not (numbered and len(words) <= 2):
        return None
    letters = [c for c in text if c.isalpha()]
    # bold or capitals make a heading only at the body's size or above: a short line in small
    # capitals is a label, a caption or a running header
    body_or_larger = body_size == 0 or line.size >= 0.95 * body_size
    caps = len(letters) >= 4 and all(c.isupper() for c in letters) and len(words) <= 8
    caps = caps and body_or_larger
    bold = line.bold and len(words) <= 10 and body_or_larger
    dotted = numbered is not None and ("." in numbered.group(1) or not numbered.group(2))
    if numbered and (larger or line.bold or caps or (dotted and _title_case(words[1:]))):
        return numbered.group(1).rstrip(".").count(".") + 1 if numbered.group(2) else 1
    if larger:
        return _size_level(line.size, heading_sizes)
    if caps or bold:
        return len(heading_sizes) + 1
    return None


def _could_be_heading(text: str, words: list[str]) -> bool:
    if not (1 <= len(words) <= 15 and len(text) <= 120) or text[-1] in ",;" or text.count(",") > 1:
        return False
    return _wordy(text) and not PAGE_NUMBER_RE.match(text) and not _reads_like_prose(text)


def _reads_like_prose(text: str) -> bool:
    """A line of running text, whatever its font: it goes on from the line above ('and the
    largest ...'), holds the end of one sentence and the start of another ('invent. They'),
    or is a date."""
    rest = NUMBER_PREFIX_RE.sub("", text, count=1)
    first = re.match(r"\W*([^\W\d_]+)", rest)
    if first and first.group(1) in CONTINUATION_WORDS:
        return True
    return SENTENCE_BREAK_RE.search(text) is not None or front.DATE_RE.match(text) is not None


def _wordy(text: str) -> bool:
    visible = [c for c in text if not c.isspace()]
    letters = sum(c.isalpha() for c in visible)
    return letters >= 2 and letters >= 0.5 * len(visible)


def _size_level(size: float, heading_sizes: list[float]) -> int:
    for level, head in enumerate(heading_sizes, start=1):
        if size >= 0.92 * head:
            return level
    return len(heading_sizes) + 1


def _title_case(words: list[str]) -> bool:
    significant = [w for w in words if len(w) >= 4 and w[0].isalpha()]
    return bool(significant) and all(w[0].isupper() for w in significant)


def _heading_sizes(pages: list[_Page], body_size: float) -> list[float]:
    """Distinct heading font sizes, largest first; sizes within 8% count as one."""
    if body_size <= 0:
        return []
    sizes = sorted(
        (
            ln.size
            for p in pages
            for ln in p.lines
            if ln.size >= 1.15 * body_size and _could_be_heading(ln.text, ln.text.split())
        ),
        reverse=True,
    )
    heads: list[float] = []
    for size in sizes:
        if not heads or size < 0.92 * heads[-1]:
            heads.append(size)
    return heads[:4]


def _choose_title(meta_title: str | None, pages: list[_Page], body: float, path: Path) -> str:
    """The Title field when sane, else the largest lines atop the first page with text that
    are not authors' e-mails, affiliations, dates, table rows or a generic 'Contents'."""
    if meta_title and _meaningful_title(meta_title, path):
        return meta_title
    first = next((p for p in pages if p.lines), None)
    if first is not None:
        top = sorted(first.lines, key=lambda ln: ln.y0)[:15]
        named = [ln for ln in top if _could_name_document(ln)]
        big = [ln for ln in named if body > 0 and ln.size >= 1.15 * body]
        if big:
            return _title_lines(top, max(big, key=lambda ln: ln.size))
        sizes = _heading_sizes(pages, body)
        for line in named:
            if _heading_level(line, body, sizes) is not None:
                return line.text[:200]
    return path.stem


def _could_name_document(line: _Line) -> bool:
    text = line.text
    return (
        len(text) <= 150
        and line.cells < TABLE_CELLS
        and _wordy(text)
        and not front.is_front_matter(text)
        and not front.is_generic_heading(text)
    )


def _title_lines(top: list[_Line], largest: _Line) -> str:
    """The largest line on page 1 plus the lines it wraps onto (same block and size, close)."""
    index = top.index(largest)
    lines = [largest]
    for line in top[index + 1 : index + 3]:
        prev = lines[-1]
        same = line.block == prev.block and abs(line.size - prev.size) <= 0.05 * prev.size
        if not same or line.y0 - prev.y1 > 0.8 * prev.size or not _could_name_document(line):
            break
        lines.append(line)
    return " ".join(ln.text for ln in lines)[:200]


def _meaningful_title(title: str, path: Path) -> bool:
    t = title.strip()
    if len(t) < 3 or not re.search(r"[^\W\d_]{2}", t):
        return False
    return not (
        MEANINGLESS_TITLE_RE.match(t) or t.lower() == path.stem.lower() or front.is_default_title(t)
    )


# --------------------------------------------------------------------------- paragraphs


def _paragraphs(pages: list[_Page], body_size: float, title: str) -> list[_Para]:
    sizes = _heading_sizes(pages, body_size)
    vocab, hyphenated = _vocabulary(pages)
    paras: list[_Para] = []
    stack: list[tuple[int, str]] = []
    for page in pages:
        for group in _group_lines(page.lines, body_size, sizes):
            first = group[0]
            if first.cells >= TABLE_CELLS:
                text = "\n".join(ln.text for ln in group)
            else:
                text = _join_lines([ln.text for ln in group], vocab, hyphenated)
            if first.heading_level is not None:
                if text == title:
                    paras.append(_Para(text, page.number, None, _chain(stack)))
                    continue
                while stack and stack[-1][0] >= first.heading_level:
                    stack.pop()
                stack.append((first.heading_level, text[:80]))
            paras.append(_Para(text, page.number, first.heading_level, _chain(stack)))
    return paras


def _chain(stack: list[tuple[int, str]]) -> str | None:
    return " > ".join(text for _level, text in stack) or None


def _group_lines(lines: list[_Line], body_size: float, sizes: list[float]) -> list[list[_Line]]:
    """Split a page's lines (already in reading order) into paragraphs."""
    for line in lines:
        line.heading_level = _heading_level(line, body_size, sizes)
    _demote_long_heading_runs(lines)
    pitch = _typical_pitch(lines)
    groups: list[list[_Line]] = []
    for line in lines:
        prev = groups[-1][-1] if groups else None
        if prev is None or _starts_paragraph(prev, line, pitch):
            groups.append([line])
        else:
            groups[-1].append(line)
    return groups


def _demote_long_heading_runs(lines: list[_Line]) -> None:
    """More than three heading-like lines in a row at one size is body text, e.g. a big abstract."""
    run: list[_Line] = []
    for line in [*lines, None]:
        if (
            line is not None
            and line.heading_level is not None
            and (not run or (run[-1].block == line.block and abs(run[-1].size - line.size) < 0.5))
        ):
            run.append(line)
            continue
        if len(run) > 3 and not any(NUMBERED_HEADING_RE.match(ln.text) for ln in run[1:]):
            for ln in run:
                ln.heading_level = None
        run = [line] if line is not None and line.heading_level is not None else []


def _typical_pitch(lines: list[_Line]) -> float:
    pitches = [
        b.y0 - a.y0
        for a, b in pairwise(lines)
        if a.block == b.block and b.y0 > a.y0 and a.heading_level is None
    ]
    return statistics.median(pitches) if pitches else 0.0


def _starts_paragraph(prev: _Line, line: _Line, pitch: float) -> bool:
    if line.block != prev.block or line.y0 < prev.y0:
        return True
    if (line.cells >= TABLE_CELLS) != (prev.cells >= TABLE_CELLS):
        return True
    if (line.heading_level is None) != (prev.heading_level is None):
        return True
    if line.heading_level is not None:
        # a heading wrapped over two lines continues; a new heading starts a new paragraph
        return line.heading_level != prev.heading_level or line.y0 - prev.y1 > 0.6 * line.size
    if pitch and line.y0 - prev.y0 > 1.4 * pitch:
        return True
    if prev.size and abs(line.size - prev.size) > 0.2 * prev.size:
        return True
    if BULLET_RE.match(line.text):
        return True
    indent = line.size or 8.0
    return (
        line.x0 - prev.x0 > 0.8 * indent
        and prev.text[-1:] in ".!?:"
        and not BULLET_RE.match(prev.text)
    )


def _vocabulary(pages: list[_Page]) -> tuple[set[str], set[str]]:
    """Words seen in the text, and hyphenated words seen inside lines (not at their ends)."""
    words: set[str] = set()
    hyphenated: set[str] = set()
    for page in pages:
        for line in page.lines:
            for word in WORD_RE.findall(line.text.lower()):
                words.add(word)
                if "-" in word.strip("-"):
                    hyphenated.add(word)
    return words, hyphenated


def _join_lines(texts: list[str], vocab: set[str], hyphenated: set[str]) -> str:
    out = texts[0]
    for text in texts[1:]:
        m = LINE_END_HYPHEN_RE.search(out)
        if m is None:
            out = f"{out} {text}"
        elif text[:1].islower() and m.group(2) != "\u2013":
            out = out[: m.end(1)] + _hyphen_kept(m.group(1), text, vocab, hyphenated) + text
        else:  # "737–" + "9", "Lucene-" + "BM25": a real dash, but no space after it
            out = out + text
    return out.replace("\u00ad", "")


def _hyphen_kept(head: str, text: str, vocab: set[str], hyphenated: set[str]) -> str:
    """'-' when the document writes this word with a hyphen elsewhere and never without."""
    tail = re.match(r"\w+", text)
    tail_word = tail.group(0) if tail else ""
    joined = (head + tail_word).lower()
    return "-" if f"{head}-{tail_word}".lower() in hyphenated and joined not in vocab else ""


# --------------------------------------------------------------------------- chunking


def _chunk(paras: list[_Para], settings: ChunkSettings, count: TokenCounter) -> Cut:
    """The shared chunking rules (headings glued to their text, no small chunks, table rows
    whole), preferring page boundaries."""
    passages = [
        Passage(
            text=p.text,
            chain=tuple(p.chain.split(" > ")) if p.chain else (),
            page=p.page,
            heading=p.heading_level is not None,
            rows="\n" in p.text,
        )
        for p in paras
    ]
    return chunk_passages(passages, settings, count)


def parse_pdf_source(source: Source) -> ParsedDocument:
    """Docling's layout pipeline when its models are here, else the pypdfium2 text layer."""
    from kb_search.formats import docling

    if docling.docling_available("pdf") is None:
        try:
            return docling.convert_with_docling(
                source.path, source.settings, source.count, source.ocr
            )
        except IngestError:
            pass  # the text-layer path gives the clearer error (encrypted, truncated, ...)
    return parse_pdf(source.path, source.settings, count=source.count, ocr=source.ocr)
