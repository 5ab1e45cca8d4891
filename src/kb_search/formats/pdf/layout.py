"""PDF page text: pypdfium2's characters -> fragments (runs on one baseline), and the line and
page types the PDF reader passes along.

Characters on one baseline become fragments (bold, rotated text kept apart; glyphs without a
Unicode mapping dropped). ``reading_order`` turns fragments into lines in reading order;
what the lines mean (headings, paragraphs) is ``structure``'s.
"""

from __future__ import annotations

import math
import re
import statistics
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from kb_search.formats.pdf.glyphs import ACCENTS, PageGlyphs, font_info

TABLE_CELLS = 3
# A justified line stretches its blanks alike, and TeX's blank after a sentence is wider still:
# up to this many times the line's word blank, it is no gap between a table's cells (a cell's
# words stand a blank apart, the next cell an em or more away).
SENTENCE_SPACE = 2.5
SENTENCE_ENDS = frozenset(".!?")
# What a fragment's or a line's text is: code (braces, operators, a call), a figure alone,
# the dots that lead a contents entry to its page.
CODE_RE = re.compile(r"[\\{}=;<>\[\]]|\w\(")
# A figure alone: a page number, an amount ('123 456,00', '-4.5%'). White after the figure
# only after a '%' or ')': the run of digits and spaces takes it otherwise, and two repeats
# that both take spaces backtrack quadratically on a long run of them.
FIGURE_RE = re.compile(r"^\s*[-+\u2212$\u20ac\u00a3(]?\d[\d\s.,:\u2009\u202f]*(?:[%)]\s*)?$")
# The dots that lead a contents entry to its page number, one fragment each or a run.
LEADER_RE = re.compile(r"^[\s.\u00b7\u2024\u2026]*$")
# TeX's bold fonts say so by 'bx' in their name: CMBX10, SFBX1200, cmssbx10, ECBX, LMRoman... has
# 'Bold'. A subset prefix ('ABCDEF+') may come first.
TEX_BOLD_RE = re.compile(r"(^|\+)(cm|sf|ec|tc)\w*bx", re.I)
FIXED_PITCH_FLAG = 1  # PDF font descriptor flag bit 1
# LaTeX's picture-mode fonts: their glyphs are slopes and arcs of lines and circles
PICTURE_FONT_RE = re.compile(r"^(line|linew|lcircle|lcirclew)10$", re.I)
# Fixed-pitch fonts that do not set the flag: TeX's typewriter faces and the usual code fonts.
MONO_NAME_RE = re.compile(
    r"(^|\+)(cmtt|sftt|ectt|cmsltt|lmmono|txtt|pcrr|ucrr|fvmr|beramono)|mono|courier|consol"
    r"|menlo|inconsolata|sourcecodepro|typewriter",
    re.I,
)
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
    mono: bool = False  # a fixed-pitch font: code, a listing, a terminal session
    vertical: bool = False  # a column of vertical writing, read top to bottom

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
    mono: bool = False  # every fragment in a fixed-pitch font: a line of a listing


@dataclass
class Page:
    number: int
    height: float
    lines: list[Line] = field(default_factory=list)
    width: float = 0.0


# --------------------------------------------------------------------------- fragments


def page_fragments(page: pdfium.PdfPage, glyphs: PageGlyphs | None = None) -> list[Frag]:
    """The page's fragments as the page is shown (turned by its /Rotate); `glyphs` names the
    glyphs pdfium leaves unmapped (ligatures) or reads as the wrong letter (CMSY's '⟨')."""
    view = _View(page.get_rotation(), *page.get_size())
    frags = _read(page, view, glyphs)
    if (not frags or any(f.vertical for f in frags)) and _give_columns_width(page):
        frags = _read(page, view, glyphs)
    return frags


class _View:
    """Page space -> the page as shown, origin top-left: a page with /Rotate 90 (a landscape
    table, a newspaper set sideways) has its text turned the other way in page space, which
    reads upright once shown."""

    def __init__(self, rotation: int, width: float, height: float) -> None:
        self.rotation = rotation % 360
        self.height = height
        # the page's own size, before the turn
        self._w, self._h = (height, width) if self.rotation in (90, 270) else (width, height)
        self.angle = math.radians(self.rotation)

    def box(self, rect: pdfium_c.FS_RECTF) -> tuple[float, float, float, float]:
        """(x0, x1, y0, y1) as shown."""
        left, right, bottom, top = rect.left, rect.right, rect.bottom, rect.top
        if self.rotation == 90:
            return bottom, top, left, right
        if self.rotation == 180:
            return self._w - right, self._w - left, bottom, top
        if self.rotation == 270:
            return self._h - top, self._h - bottom, self._w - right, self._w - left
        return left, right, self._h - top, self._h - bottom


def _read(page: pdfium.PdfPage, view: _View, glyphs: PageGlyphs | None) -> list[Frag]:
    textpage = page.get_textpage()
    try:
        # a run in LaTeX's picture fonts drew a line or a circle: its 'letters' are no text
        return [f for f in _fragments(textpage, view, glyphs) if f.text]
    finally:
        textpage.close()


def _give_columns_width(page: pdfium.PdfPage) -> int:
    """pdfium's text page skips every text object of no width, and a column of vertical
    writing in a font it does not have (no glyph boxes, every advance downwards) has none: a
    shear of a thousandth gives each such column a little width, in memory only, so that its
    text is read. Returns how many columns it changed."""
    changed = 0
    for obj in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_TEXT], max_depth=3):
        left, bottom, right, top = obj.get_bounds()
        if right - left < 0.01 and top - bottom > 1.0:
            pdfium_c.FPDFPageObj_Transform(obj.raw, 1, 0, 0.001, 1, 0, 0)
            changed += 1
    return changed


def _fragments(
    textpage: pdfium.PdfTextPage, view: _View, glyphs: PageGlyphs | None
) -> Iterable[Frag]:
    """Group characters, in content-stream order, into runs on one baseline without big gaps."""
    raw = textpage.raw
    rect = pdfium_c.FS_RECTF()
    get_unicode, get_box = pdfium_c.FPDFText_GetUnicode, pdfium_c.FPDFText_GetLooseCharBox
    rotated = _RotatedText()
    turned, height = view.rotation != 0, view.height
    isfinite = math.isfinite
    styles = _FontStyles(textpage)
    chars: list[str] = []
    heights: list[float] = []  # per character: the run's size is their median
    bx0 = by0 = bx1 = by1 = 0.0  # box of the current run
    last_x0 = last_x1 = last_y0 = last_y1 = 0.0
    first_index = last_index = 0
    space = vertical = aside = False
    word = 0.0  # the widest blank between words of the current run
    count = textpage.count_chars()
    # the ASCII codes some font of the page renames ('h' is '⟨' in TeX's CMSY): only these
    # characters have their font looked up
    renamed = glyphs.renamed_codes() if glyphs is not None and count else frozenset()
    for i in range(count):
        code = get_unicode(raw, i)
        if 0xD800 <= code < 0xDC00 and i + 1 < count:
            # a character beyond the first plane (math italic 𝑎, rare kanji) comes as two
            # halves, each with the whole glyph's box: joined here, its second half skipped
            low = get_unicode(raw, i + 1)
            if 0xDC00 <= low < 0xE000:
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
        ch = CHARS[code] if code < CHAR_TABLE_SIZE else _char(code)
        if glyphs is not None and code < 0x20:
            # a glyph pdfium could not name reports its bare character code ('fi' as 0x1B or
            # 0x0C, 'fl' as 0x0D): the font's encoding may name it. 0x02 is also pdfium's own
            # line-end hyphen: there only a math symbol the font sets at 2 counts (a
            # re-encoded CMSY's '⟨')
            ch = glyphs.text(raw, i, code, math_only=code == 2) or ch
        elif code in renamed and glyphs is not None:
            ch = glyphs.renamed_text(raw, i, code) or ch
        if not ch:
            continue
        if ch.isspace():
            # pdfium reads a blank after a glyph drawn back over the run: no word ends there
            space = space or (bool(chars) and not aside)
            rotated.gap(ch in "\r\n" and pdfium_c.FPDFText_IsGenerated(raw, i))
            continue
        if not get_box(raw, i, rect):
            continue
        if turned:
            x0, x1, y0, y1 = view.box(rect)
        else:  # the common case, inline: this runs for every character
            x0, x1, y0, y1 = rect.left, rect.right, height - rect.top, height - rect.bottom
        if not isfinite(x0 + x1 + y0 + y1):
            continue  # a hostile page's glyph at NaN or infinity stands nowhere on it
        # min() and max() spelt out in this loop (as they choose, ties included): it runs for
        # every character, and the calls cost more than the rest of its arithmetic
        h = y1 - y0
        if h < 0.1:
            h = 0.1
        # ligatures expand to several chars sharing one box, so compare with the last x0
        continues = (
            chars
            and not vertical
            and (by1 if by1 < y1 else y1) - (by0 if by0 > y0 else y0)
            > 0.5 * (by1 - by0 if by1 - by0 < h else h)
            and (
                x0 - last_x1 <= h
                # a sentence's end in a justified line: its blank stretched with the line's
                or (space and x0 - last_x1 <= SENTENCE_SPACE * word and _ends_a_sentence(chars, ch))
            )
            and x0 >= last_x0 - 0.5 * h
        )
        below = (
            not continues
            and (vertical or len(chars) == 1)
            and _stacks_below(chars[-1], ch, (last_x0, last_y0, last_x1, last_y1), (x0, y0, x1, y1))
        )
        if below:
            vertical = True
            if space or y0 - last_y1 > 0.6 * h:
                chars.append(" ")
            chars.append(ch)
            heights.append(h)
            bx0, by0, bx1, by1 = min(bx0, x0), min(by0, y0), max(bx1, x1), max(by1, y1)
        elif not continues:
            # only a break in the flow can start rotated text, so the angle is checked here
            if _is_rotated(pdfium_c.FPDFText_GetCharAngle(raw, i), view.angle):
                rotated.add(ch)
                continue
            if (
                ch in ACCENTS
                and chars
                and _drawn_back_over(x0, x1, y0, y1, (bx0, by0, last_x1, by1))
            ):
                # a spacing accent drawn back over a letter of the run (TeX's accent after its
                # word): a fragment of its own, and the run goes on where it stopped, so the
                # letter after it is not set apart ('Devanagar', '¯' over its 'a', then 'ı')
                yield _make_frag(styles, [ch], [h], (x0, y0, x1, y1), i, i)
                space, aside = False, True
                continue
            if chars:
                box = (bx0, by0, bx1, by1)
                yield _make_frag(styles, chars, heights, box, first_index, last_index, vertical)
            chars, heights, space, vertical, word = [ch], [h], False, False, 0.0
            bx0, by0, bx1, by1 = x0, y0, x1, y1
            first_index = i
        else:
            if space or x0 - last_x1 > 0.6 * h:
                chars.append(" ")
                word = max(word, x0 - last_x1)
            chars.append(ch)
            heights.append(h)
            if x0 < bx0:
                bx0 = x0
            if y0 < by0:
                by0 = y0
            if x1 > bx1:
                bx1 = x1
            if y1 > by1:
                by1 = y1
        last_x0, last_x1, last_y0, last_y1, last_index = x0, x1, y0, y1, i
        space = aside = False
    if chars:
        box = (bx0, by0, bx1, by1)
        yield _make_frag(styles, chars, heights, box, first_index, last_index, vertical)
    for text in rotated.lines():
        yield Frag(text, 0.0, view.height, 0.0, view.height, 0.0, rotated=True)


def _ends_a_sentence(chars: list[str], ch: str) -> bool:
    """Whether the run ends a sentence ('supported.') and `ch` may start the next: not a
    contents entry's leader dots ('. . .'), nor a page number or a figure after them."""
    return (
        len(chars) >= 2 and chars[-1] in SENTENCE_ENDS and chars[-2].isalnum() and not ch.isdigit()
    )


def _drawn_back_over(
    x0: float, x1: float, y0: float, y1: float, run: tuple[float, float, float, float]
) -> bool:
    """Whether a glyph's box lies within the run's width so far, on its line."""
    left, top, right, bottom = run
    return left <= x0 and x1 <= right + 0.5 * (x1 - x0) and min(y1, bottom) - max(y0, top) > 0


def is_wide(ch: str) -> bool:
    """A character of East Asian full width (kanji, kana, hangul, full-width punctuation):
    the kind that is set in vertical columns."""
    return unicodedata.east_asian_width(ch) in ("W", "F")


def _stacks_below(
    prev: str, ch: str, prev_box: tuple[float, float, float, float], box: tuple[float, ...]
) -> bool:
    """Whether `ch` goes on a vertical column under `prev`: both wide characters, the new one
    in the same column (most of its width shared) and just below (vertical writing, tategaki)."""
    if not (is_wide(prev) and is_wide(ch)):
        return False
    px0, py0, px1, py1 = prev_box
    x0, y0, x1, y1 = box
    share = min(x1, px1) - max(x0, px0)
    if share <= 0.5 * min(x1 - x0, px1 - px0):
        return False
    ph = py1 - py0
    return py0 + 0.5 * ph <= y0 <= py1 + max(ph, y1 - y0)


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
    if 0x1D400 <= code <= 0x1D7FF:  # Mathematical Alphanumeric Symbols: 𝑎 is an italic a
        return unicodedata.normalize("NFKC", chr(code))
    return chr(code)


# ``_char`` of the codes below this, looked up: it runs for every character of every page.
CHAR_TABLE_SIZE = 0x3000
CHARS = tuple(_char(code) for code in range(CHAR_TABLE_SIZE))


def _is_rotated(angle: float, turn: float = 0.0) -> bool:
    """Text turned from upright as shown: pdfium's angle in page space (0 to 2 pi, or -1 when
    it has none) plus the page's turn."""
    if angle < 0:
        return False
    angle = (angle + turn) % (2 * math.pi)
    return 0.2 < angle < 2 * math.pi - 0.2


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
    styles: _FontStyles,
    chars: list[str],
    heights: list[float],
    box: tuple[float, float, float, float],
    first: int,
    last: int,
    vertical: bool = False,
) -> Frag:
    text = "".join(chars).translate(LIGATURES)
    bold, mono, drawing = styles.style(first)
    if last != first:
        last_bold, last_mono, last_drawing = styles.style(last)
        # a listing's line number may lead in another font: the middle and the end decide
        mid_mono = styles.mono((first + last) // 2)
        bold, mono = bold and last_bold, mid_mono and last_mono
        drawing = drawing and last_drawing
    if drawing:
        text = ""  # strokes of a picture in LaTeX's picture fonts, dropped by `_read`
    # the median glyph height, not the run's box: one tall '{' or '(' must not make an e-mail
    # line the largest text on the page
    size = statistics.median(heights)
    return Frag(text, box[0], box[1], box[2], box[3], size, bold, mono=mono, vertical=vertical)


class _FontStyles:
    """(bold, fixed-pitch, picture font) of a page's characters' fonts, from their weight,
    flags and name: what a font's name and flags tell is worked out once per page, not for
    each fragment."""

    def __init__(self, textpage: pdfium.PdfTextPage) -> None:
        self._raw = textpage.raw
        self._named: dict[tuple[str, int], tuple[bool, bool, bool]] = {}

    def style(self, index: int) -> tuple[bool, bool, bool]:
        found = self._by_name(index)
        if not found[0] and pdfium_c.FPDFText_GetFontWeight(self._raw, index) >= 600:
            return True, found[1], found[2]
        return found

    def mono(self, index: int) -> bool:
        return self._by_name(index)[1]

    def _by_name(self, index: int) -> tuple[bool, bool, bool]:
        key = font_info(self._raw, index)
        found = self._named.get(key)
        if found is None:
            found = self._named[key] = _named_style(*key)
        return found


def _named_style(name: str, flags: int) -> tuple[bool, bool, bool]:
    """(bold, fixed-pitch, picture font) as a font's name and descriptor flags say. LaTeX's
    picture fonts (line10, lcircle10 and their wide kin) map slopes and arcs of lines and
    circles to letters: their glyphs are drawing, not text."""
    picture = PICTURE_FONT_RE.match(name.split("+", 1)[-1]) is not None
    name = name.lower()
    mono = bool(flags & FIXED_PITCH_FLAG) or MONO_NAME_RE.search(name) is not None
    bold = any(w in name for w in ("bold", "black", "heavy", "semibold", "demi"))
    return bold or TEX_BOLD_RE.search(name) is not None, mono, picture
