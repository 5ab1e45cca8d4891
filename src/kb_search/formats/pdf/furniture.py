"""Page furniture of a PDF: what a reader's eye skips and a search index must not hold.

Running heads and feet (repeated exactly, or varying by section with the page number beside
them), bare page numbers, and the line numbers of drafts and review copies. Heads are found by
where they sit (the same slot at the top or bottom of many pages) and by the page number they
carry, so they are dropped before they can become headings.
"""

from __future__ import annotations

import bisect
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable
from itertools import pairwise

from kb_search.formats.pdf.layout import CODE_RE, Frag, Line, Page

PAGE_NUMBER_RE = re.compile(
    r"^[-\u2013\s]*(page\s+)?(\d{1,4}|[ivxlc]{1,6})(\s*(/|of)\s*\d{1,4})?[-\u2013\s]*$", re.I
)
# A head or foot that carries the page number at either end: '4.2. MATH SPACING COMMANDS 13',
# '12 Chapter 3. Tables', 'Page 7 of 40' (the number before 'of'). A number that leads a
# section number ('4.3 Nested conditions' atop a column) is no page's.
LEADING_NUMBER_RE = re.compile(r"^\W*(?:page\s+)?(\d{1,4})\b(?![.,]\d)", re.I)
TRAILING_NUMBER_RE = re.compile(r"\b(\d{1,4})(?:\s*(?:/|of)\s*\d{1,4})?\W*$", re.I)
# run on `_head_key`'s text, whose blanks are single spaces: one space, so linear on any input
EDGE_NUMBER_KEY_RE = re.compile(r"^# | #$|^#$")
EDGE_LINES = 3  # lines at the top and at the bottom of a page that may be furniture
MARGIN_SHARE = 0.15  # ... when they lie in this share of the page height from its edge
HEAD_MAX_WORDS = 16
SLOT_POINTS = 3.0  # heads on different pages sit within this many points of one another
SECTION_HEADS_MIN_PAGES = 8  # from this length on, a text atop three pages is a running head
LINE_NUMBERS_MIN = 5  # a draft's margin holds at least this many line numbers on a page
# ... or this many when every fifth (or tenth) line is numbered, as critical editions do
FIFTHS_MIN = 3
GUTTER_NUMBER_POINTS = 30  # a line number in a gutter ends this close to its column's edge
LINE_NUMBER_SIZE = 0.9  # ... and is set this much smaller than the line it numbers
LISTING_CODE_SHARE = 0.3  # of numbered lines with code in: a listing's numbers
# Fragments looked at around a gutter number: the last this many that begin above its foot
# (its row's, on any page a person reads). One fragment as tall as the page would otherwise
# put the whole page above each number: quadratic on a page of thousands of rows.
ROW_FRAGS = 200
CENTRE_SHARE = 0.05  # a folio centred on the page lies this share of its width from the middle


# --------------------------------------------------------------------------- line numbers


def drop_line_numbers(frags: list[Frag]) -> list[Frag]:
    """A page without its line numbers: bare numbers stacked in a margin beside the text (left
    of the left edge most lines start at, or right of the right edge), counting up or down by
    one step at a regular pitch."""
    # decimal digits only: '①' and '²' are digits to str.isdigit, and int() refuses them
    numbers = [f for f in frags if f.text.strip().isdecimal() and len(f.text.strip()) <= 5]
    if len(numbers) < FIFTHS_MIN:
        return frags
    text = [f for f in frags if not f.text.strip().isdecimal() and not f.rotated]
    if len(text) < LINE_NUMBERS_MIN:
        return frags
    starts = Counter(round(f.x0) for f in text)
    left_edge = starts.most_common(1)[0][0]
    right_edge = max(f.x1 for f in text)
    left = [f for f in numbers if f.x1 <= left_edge - 1]
    right = [f for f in numbers if f.x0 >= right_edge - 1]
    columns = _stacks(left, lambda f: f.x1) + _stacks(right, lambda f: f.x0)
    columns += _stacks(_in_gutters(numbers, text, starts, left_edge), lambda f: f.x1)
    drop: set[int] = set()
    for column in columns:
        # bold numbers down a margin are chapters in a table of contents
        bold = sum(f.bold for f in column) > len(column) / 2
        if _enough(column, text) and not bold and _monotonic(column):
            drop.update(id(f) for f in column)
    return [f for f in frags if id(f) not in drop] if drop else frags


def _in_gutters(
    numbers: list[Frag], text: list[Frag], starts: Counter[int], left_edge: int
) -> list[Frag]:
    """Numbers just left of another column's left edge (one that LINE_NUMBERS_MIN lines start
    at), set smaller than the line they stand on, with no text across them: a two-column
    draft numbers the right column's lines in the gutter, as the left column's in the
    margin. A listing keeps its numbers. (Found by bisection: a page of thousands of numbers
    and lines is not compared pair by pair.)"""
    edges = sorted(x for x, count in starts.items() if x > left_edge and count >= LINE_NUMBERS_MIN)
    if not edges:
        return []
    by_top = sorted(text, key=lambda t: t.y0)
    tops = [t.y0 for t in by_top]
    tallest = max(t.y1 - t.y0 for t in text)
    found, code = [], 0
    for f in numbers:
        k = bisect.bisect_right(edges, f.x1)
        if k == len(edges) or edges[k] - f.x1 > GUTTER_NUMBER_POINTS:
            continue
        end = bisect.bisect_left(tops, f.y1)
        near = by_top[max(bisect.bisect_left(tops, f.y0 - tallest), end - ROW_FRAGS) : end]
        row = [t for t in near if f.y0 < t.y1]
        if any(t.x0 < f.x1 and f.x0 < t.x1 for t in row):
            continue
        after = min((t for t in row if t.x0 >= f.x1), key=lambda t: t.x0, default=None)
        # a listing's numbers stay on its lines, a list of figures' numbers (in the text's
        # size) on its entries: line numbers are set smaller than the lines they number
        if after is not None and not after.mono and f.size < LINE_NUMBER_SIZE * after.size:
            found.append(f)
            line = " ".join(t.text for t in row if t.x0 >= f.x1)
            code += CODE_RE.search(line) is not None
    # a listing set in a text font, numbered line by line, keeps its numbers (they mark it
    # as a listing, whose lines keep their indentation)
    return [] if code >= LISTING_CODE_SHARE * len(found) else found


def _stacks(frags: list[Frag], edge: Callable[[Frag], float]) -> list[list[Frag]]:
    """Frags whose aligned edges lie within SLOT_POINTS of the next one's, as stacks."""
    stacks: list[list[Frag]] = []
    for f in sorted(frags, key=edge):
        if stacks and edge(f) - edge(stacks[-1][-1]) <= SLOT_POINTS:
            stacks[-1].append(f)
        else:
            stacks.append([f])
    return stacks


def _enough(column: list[Frag], text: list[Frag]) -> bool:
    """Enough numbers to be a margin's line numbers: five, or three when they number every
    fifth or tenth line (5, 10, 15 down a short page of a critical edition) and each sits on
    a line of text, as a chart's axis (25, 20, 15 beside a plot) does not."""
    if len(column) >= LINE_NUMBERS_MIN:
        return True
    values = sorted(int(f.text) for f in column)
    steps = {b - a for a, b in pairwise(values)}
    fifths = len(steps) == 1 and steps <= {5, 10} and all(v % 5 == 0 for v in values)
    return len(column) >= FIFTHS_MIN and fifths and all(_on_a_line(f, text) for f in column)


def _on_a_line(number: Frag, text: list[Frag]) -> bool:
    middle = (number.y0 + number.y1) / 2
    return any(f.y0 <= middle <= f.y1 and f.x1 - f.x0 > 10 * number.height for f in text)


def _monotonic(column: list[Frag]) -> bool:
    """Numbers counting by one step (1, or 5 with every fifth line numbered) at a regular
    pitch: not a table of contents' chapter numbers, whose pitch follows the sections."""
    ordered = sorted(column, key=lambda f: f.y0)
    steps = [int(b.text) - int(a.text) for a, b in pairwise(ordered)]
    step, count = Counter(steps).most_common(1)[0]
    if step == 0 or count < 0.8 * len(steps):
        return False
    pitches = [b.y0 - a.y0 for a, b in pairwise(ordered)]
    typical = statistics.median(pitches)
    regular = sum(abs(p - typical) <= 0.2 * typical for p in pitches)
    return typical > 0 and regular >= 0.6 * len(pitches)


# --------------------------------------------------------------------------- heads and feet


def remove_headers_footers(pages: list[Page], keep: set[int] | None = None) -> None:
    """Drop running heads and feet and bare page numbers from the pages' lines, but not the
    lines in `keep` (by id: a slide's frame title repeats on its overlay pages)."""
    edges = {page.number: _edge_lines(page) for page in pages}
    furniture = _repeated_heads(edges, len(pages)) | _numbered_heads(edges, pages)
    furniture -= _listing_lines(pages)
    furniture |= _folios(pages)
    for page in pages:
        drop = {id(ln) for ln in page.lines if id(ln) in furniture}
        drop |= {id(ln) for ln in edges[page.number] if PAGE_NUMBER_RE.match(ln.text)}
        drop -= keep or set()
        if drop and len(drop) < len(page.lines):
            page.lines = [ln for ln in page.lines if id(ln) not in drop]


def _edge_lines(page: Page) -> list[Line]:
    """The topmost and bottom-most lines, when they sit in the page margins (rotated text, a
    margin stamp, counts: the reading order puts it last)."""
    margin = MARGIN_SHARE * page.height
    picked = _ends(_in_order(page), EDGE_LINES)
    unique = list({id(ln): ln for ln in picked}.values())
    return [ln for ln in unique if ln.y1 <= margin or ln.y0 >= page.height - margin]


def _repeated_heads(edges: dict[int, list[Line]], page_count: int) -> set[int]:
    """Edge lines whose text (digits aside) is found on several pages: running heads and feet,
    the same on every page or on the pages of one chapter ('3 THE USER INTERFACE' on its odd
    pages). The page number at either end is left out of the text, since it may be extracted
    as a line of its own on some pages and not on others; and a line set larger than the
    others of its text is a heading, not the head that repeats it."""
    if page_count < 3:
        return set()
    by_key: dict[str, list[Line]] = defaultdict(list)
    for lines in edges.values():
        for line in lines:
            if key := _head_key(line.text):
                by_key[key].append(line)
    threshold = 3 if page_count >= SECTION_HEADS_MIN_PAGES else max(3, 0.3 * page_count)
    heads: set[int] = set()
    for lines in by_key.values():
        if len({ln.page for ln in lines}) < threshold:
            continue
        size = statistics.median(ln.size for ln in lines)
        heads.update(id(ln) for ln in lines if ln.size <= 1.1 * size)
    return heads


def _listing_lines(pages: list[Page]) -> set[int]:
    """Monospace lines set at a listing's pitch under or over another: a listing's numbered
    last line at a page foot ('6 \\end{calctab}}', closing one on several pages) is code, not
    a running foot."""
    found: set[int] = set()
    for page in pages:
        for above, below in pairwise(_in_order(page)):
            if above.mono and below.mono and below.y0 - above.y1 <= above.y1 - above.y0:
                found.update((id(above), id(below)))
    return found


def _folios(pages: list[Page]) -> set[int]:
    """Bare page numbers that are the first or last line of their page, wherever the page's
    margins put them, when they count with the pages (the same offset from the physical page
    number on many pages): a folio set high above a deep bottom margin is still a folio."""
    by_offset: dict[int, list[Line]] = defaultdict(list)
    centred: set[int] = set()  # the page's own number, centred: a folio on a page of a leaflet
    for page in pages:
        # a page's last upright line may be its folio under turned figure labels
        ends = _ends(_upright(page), 1) + _ends(_in_order(page), 1)
        for line in {id(ln): ln for ln in ends}.values():
            m = PAGE_NUMBER_RE.match(line.text)
            if m and m.group(2).isdigit():
                by_offset[int(m.group(2)) - page.number].append(line)
                middle = (line.x0 + line.x1) / 2
                if int(m.group(2)) == page.number and abs(middle - page.width / 2) <= (
                    CENTRE_SHARE * page.width
                ):
                    centred.add(id(line))
    needed = max(3, 0.2 * len(pages))
    folios = {
        id(ln)
        for lines in by_offset.values()
        if len({ln.page for ln in lines}) >= needed
        for ln in lines
    }
    # too few pages to see numbers count with them: a centred number that is the page's is one
    return folios | centred if len(pages) < needed else folios


def _in_order(page: Page) -> list[Line]:
    return sorted(page.lines, key=lambda ln: ln.y0)


def _upright(page: Page) -> list[Line]:
    """The page's lines top to bottom, without its rotated text (a figure's turned labels,
    a margin stamp), which the reading order puts below the page body with no width."""
    return [ln for ln in _in_order(page) if ln.x1 > ln.x0]


def _ends(lines: list[Line], n: int) -> list[Line]:
    return lines[:n] + lines[-n:]


def _numbered_heads(edges: dict[int, list[Line]], pages: list[Page]) -> set[int]:
    """Edge lines that carry the page number (the same offset from the physical page number on
    several pages): heads that name the section change from page to page, but not that."""
    by_offset: dict[int, list[Line]] = defaultdict(list)
    body, body_box = _body_size(pages), _body_box(pages)
    for page in pages:
        for line in edges[page.number]:
            # a chapter heading set larger than the text is not a head, numbered as it may be;
            # larger by its line's box too: a font whose glyph boxes hug each letter measures
            # its 10pt text at 4.6 (reledmac), which no head would pass for
            larger = line.size > 1.1 * body and line.y1 - line.y0 > 1.1 * body_box
            if len(line.text.split()) > HEAD_MAX_WORDS or larger:
                continue
            for number in _edge_numbers(line.text):
                by_offset[number - page.number].append(line)
    if not by_offset:
        return set()
    heads: set[int] = set()
    needed = max(3, 0.2 * len(pages))
    for lines in by_offset.values():
        if len({ln.page for ln in lines}) >= needed:
            heads.update(id(ln) for ln in lines)
    return heads


def _body_size(pages: list[Page]) -> float:
    """The size most of the text is set in."""
    sizes: Counter[float] = Counter()
    for page in pages:
        for line in page.lines:
            sizes[round(line.size * 2) / 2] += len(line.text)
    return sizes.most_common(1)[0][0] if sizes else 0.0


def _body_box(pages: list[Page]) -> float:
    """The height of the line box most of the text is set in."""
    heights: Counter[float] = Counter()
    for page in pages:
        for line in page.lines:
            heights[round((line.y1 - line.y0) * 2) / 2] += len(line.text)
    return heights.most_common(1)[0][0] if heights else 0.0


def _edge_numbers(text: str) -> set[int]:
    found = (LEADING_NUMBER_RE.match(text), TRAILING_NUMBER_RE.search(text))
    return {int(m.group(1)) for m in found if m}


def _head_key(text: str) -> str:
    """The text, lower case, digits masked, without a page number at either end."""
    key = re.sub(r"\s+", " ", re.sub(r"\d+", "#", text.lower())).strip()
    return EDGE_NUMBER_KEY_RE.sub("", key)
