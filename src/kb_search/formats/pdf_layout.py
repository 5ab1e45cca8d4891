"""PDF page layout: pypdfium2's characters -> fragments -> lines in reading order.

Characters on one baseline become fragments (bold, rotated text kept apart); a page splits into
blocks at full-width bands and vertical gutters between prose columns; each block's fragments
become lines, top to bottom. What the lines mean (headings, paragraphs) is ``pdf_structure``'s.
"""

from __future__ import annotations

import ctypes
import math
import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

TABLE_CELLS = 3
# TeX's bold fonts say so by 'bx' in their name: CMBX10, SFBX1200, cmssbx10, ECBX, LMRoman... has
# 'Bold'. A subset prefix ('ABCDEF+') may come first.
TEX_BOLD_RE = re.compile(r"(^|\+)(cm|sf|ec|tc)\w*bx", re.I)
LIGATURES = str.maketrans(
    {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl"}
)


@dataclass
class Frag:
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
class Line:
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
class Page:
    number: int
    height: float
    lines: list[Line] = field(default_factory=list)


# --------------------------------------------------------------------------- fragments


def page_fragments(page: pdfium.PdfPage, height: float) -> list[Frag]:
    textpage = page.get_textpage()
    try:
        return list(_fragments(textpage, height))
    finally:
        textpage.close()


def _fragments(textpage: pdfium.PdfTextPage, height: float) -> Iterable[Frag]:
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
        ch = _char(get_unicode(raw, i))
        if not ch:
            continue
        if ch.isspace():
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
        yield Frag(text, 0.0, height, 0.0, height, 0.0, rotated=True)


def _char(code: int) -> str:
    """The character pdfium read, or "" for a glyph with no Unicode mapping: math and symbol
    fonts report their glyph codes as C0 controls, U+FFFD or private-use code points, which
    would be noise in the text and in the index."""
    if code == 2:  # pdfium reports a hyphen that ends a line as U+0002
        return "-"
    if code in (9, 10, 13) or code == 0x20:
        return chr(code)
    if code < 0x20 or 0x7F <= code < 0xA0 or code in (0xFFFD, 0xFFFE, 0xFFFF):
        return ""
    if 0xD800 <= code <= 0xF8FF or code >= 0xF0000:
        return ""
    return chr(code)


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
) -> Frag:
    text = "".join(chars).translate(LIGATURES)
    bold = _is_bold(textpage, first) and (last == first or _is_bold(textpage, last))
    # the median glyph height, not the run's box: one tall '{' or '(' must not make an e-mail
    # line the largest text on the page
    return Frag(text, box[0], box[1], box[2], box[3], statistics.median(heights), bold)


def _is_bold(textpage: pdfium.PdfTextPage, index: int) -> bool:
    if pdfium_c.FPDFText_GetFontWeight(textpage.raw, index) >= 600:
        return True
    buf = ctypes.create_string_buffer(128)
    flags = ctypes.c_int()
    n = pdfium_c.FPDFText_GetFontInfo(textpage.raw, index, buf, 128, ctypes.byref(flags))
    name = buf.raw[: max(n - 1, 0)].decode("latin-1", "replace").lower()
    return any(w in name for w in ("bold", "black", "heavy", "semibold", "demi")) or bool(
        TEX_BOLD_RE.search(name)
    )


def _overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


# --------------------------------------------------------------------------- layout


def layout(frags: list[Frag], page: int, width: float) -> list[Line]:
    upright = [f for f in frags if f.text.strip() and not f.rotated]
    blocks = _order_blocks(upright)
    lines: list[Line] = []
    for block_no, block in enumerate(blocks):
        lines.extend(_block_lines(block, page, block_no))
    for offset, frag in enumerate(f for f in frags if f.rotated):
        line = _row_to_line([frag], page, len(blocks))
        line.y0 = line.y1 = frag.y0 + offset * 0.001  # keeps stream order below the page body
        lines.append(line)
    return lines


def _order_blocks(frags: list[Frag], depth: int = 0) -> list[list[Frag]]:
    """Split a page into reading-order blocks: full-width bands, and within each band, columns."""
    gutter = _find_gutter(frags) if depth < 3 else None
    if gutter is None:
        return [frags] if frags else []
    blocks: list[list[Frag]] = []
    left: list[Frag] = []
    right: list[Frag] = []
    spanning: list[Frag] | None = None
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


def _columns(left: list[Frag], right: list[Frag], depth: int) -> list[list[Frag]]:
    return [b for side in (left, right) if side for b in _order_blocks(side, depth + 1)]


def _find_gutter(frags: list[Frag]) -> float | None:
    """The x of a vertical white strip with prose columns on both sides, if there is one.

    Only lines narrower than half the region can belong to a column: a title, an abstract or a
    caption across both columns would otherwise hide the gutter under them (they are read as a
    band of their own, above or below the columns)."""
    body = [f for f in frags if len(f.text) >= 3]
    if len(body) < 10:
        return None
    left_edge = min(f.x0 for f in body)
    right_edge = max(f.x1 for f in body)
    width = right_edge - left_edge
    if width < 100:
        return None
    narrow = [f for f in body if f.x1 - f.x0 < 0.5 * width]
    if len(narrow) < 10:
        return None
    cover = _coverage(narrow, left_edge, int(width) + 1)
    lo, hi = int(0.15 * width), int(0.85 * width)
    # centred lines (authors, affiliations) and short captions may still cross it
    runs = _runs(cover, lo, hi, max(2, len(narrow) // 8))
    for start, end in sorted(runs, key=lambda r: r[0] - r[1]):
        gutter = left_edge + (start + end) / 2
        if _columns_are_prose(body, gutter):
            return gutter
    return None


def _coverage(body: list[Frag], left_edge: float, bins: int) -> list[int]:
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


def _columns_are_prose(body: list[Frag], gutter: float) -> bool:
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


def _block_lines(block: list[Frag], page: int, block_no: int) -> list[Line]:
    rows: list[list[Frag]] = []
    for frag in sorted(block, key=lambda f: (f.y0 + f.y1) / 2):
        row = rows[-1] if rows else None
        if row is not None:
            y0, y1 = min(f.y0 for f in row), max(f.y1 for f in row)
            if _overlap(frag.y0, frag.y1, y0, y1) > 0.5 * min(frag.height, y1 - y0):
                row.append(frag)
                continue
        rows.append([frag])
    return [_row_to_line(row, page, block_no) for row in rows]


def _row_to_line(row: list[Frag], page: int, block_no: int) -> Line:
    row.sort(key=lambda f: f.x0)
    sep = " | " if len(row) >= TABLE_CELLS else " "
    text = re.sub(r"[ \t]+", " ", sep.join(f.text.strip() for f in row)).strip()
    main = max(row, key=lambda f: len(f.text))
    return Line(
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
