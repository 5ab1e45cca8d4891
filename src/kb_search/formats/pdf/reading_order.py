"""PDF reading order: a page's fragments -> lines in the order a reader follows.

A page is read as a stack of bands, top to bottom. A band is a run of text rows that share a
vertical white strip (a gutter) with prose on both sides: two or more columns, read column by
column (and each column again the same way, for three or four columns). Rows that share no
gutter (a title, an abstract, a full-width figure caption, a table) are read across. Notes in
an outer margin are read after or before their column, not interleaved with it. Each block's
fragments then become lines, top to bottom; a row of three or more cells keeps them apart with
' | ' (a table row).
"""

from __future__ import annotations

import bisect
import re
import statistics
import unicodedata
from collections.abc import Iterable
from typing import NamedTuple

from kb_search.formats.pdf import vertical
from kb_search.formats.pdf.layout import CODE_RE, FIGURE_RE, LEADER_RE, TABLE_CELLS, Frag, Line
from kb_search.formats.pdf.margin_notes import MIN_MARGIN_TEXT, margin_gutter, notes_beside_text
from kb_search.formats.pdf.rows import coverage, text_rows, white_runs

MAX_DEPTH = 3  # columns within columns: up to four columns on a page
MIN_BAND_ROWS = 3  # rows that share a gutter before they count as columns
MIN_GUTTER = 4.0  # points of white between two columns
INNER = (0.15, 0.85)  # where a gutter may lie, as shares of the text's width
# A white strip open this many rows down that is no gutter (a generated table of thousands of
# rows; a printed page has 100 at most) is not followed and judged again from each of its
# rows, which is quadratic in the page: its rows down to half this many above its end are
# read across untried.
MAX_BAND_ROWS = 200
# A page set in columns from top to bottom (a reference card): white strips this many lines
# wide that nothing crosses, splitting the page into at least this many columns of about one
# width (the narrowest at least this share of the widest), that fill the page (each at least
# this share of the text's width; a table's narrow columns stand far apart).
PAGE_GUTTER_LINES = 3.0
MIN_PAGE_COLUMNS = 3
PAGE_COLUMN_WIDTHS = 0.6
PAGE_COLUMN_SHARE = 0.2
# A band of columns ends at white across both columns at least a line high, after which one
# column stays empty for this many lines: the columns were balanced and a new section (its
# heading in the left column) starts below, as multicol sets them.
SECTION_BREAK_LINES = 3.0
# Type this much larger than a band's body text: a heading.
HEADING_SIZE_RATIO = 1.2
# A band's side this much narrower than the other: a margin box or names, not a column.
NARROW_SIDE = 0.7
# White above rows on one side only, below a band of columns: the band has ended.
FOOT_WHITE_LINES = 3.0
# A band's last row under this much white, in type this much smaller than the band's: a foot.
FOOT_TAIL_LINES = 1.5
FOOT_SIZE_RATIO = 0.9
# Paragraphs side by side (a text beside its translation): white this many lines high more
# than a column's leading before each, at least this many such breaks, each pair this many
# rows (the median).
PAIR_WHITE_LINES = 0.5
MIN_PAIR_BREAKS = 2
MIN_PAIR_ROWS = 2
# A listing numbered line by line: this many lines counting up, a share of them with code in.
MIN_LISTING_LINES = 4
LISTING_NUMBER_RE = re.compile(r"^(\d{1,5})(?:\s|$)")
# A fragment of dots this many of its type's heights tall: a rule drawn in dots, not a line.
RULE_LINES = 3.0
# A justified line's word spaces: the widest at most this many times the narrowest (a full stop
# stretches the space after it).
JUSTIFIED_GAPS = 1.6

# Text this many page widths off the page is far off it: read last. Text just off it (a
# beamer overlay's hidden block two widths away) keeps its place among the rest.
FAR_OFF_PAGE = 10
# Text beside the page's text across white this many times as wide as it, and this share of
# its characters at most: kept off the page (the column analysis measures the page without it).
OFF_PAGE_GAP = 2.0
OFF_PAGE_TEXT = 0.2

Interval = tuple[float, float]


def layout(frags: list[Frag], page: int, width: float) -> list[Line]:
    """The page's fragments as lines in reading order (rotated text, a rule drawn in dots and
    text off the page last, in stream order)."""
    # text far off the page (a hostile or broken file's x of 3e7) is read last, like turned
    # text: the column analysis measures white across the text's width point by point
    aside = [f for f in frags if f.rotated or (f.text.strip() and _drawn_rule(f))]
    set_aside = {id(f) for f in aside}
    upright: list[Frag] = []
    for f in frags:
        if f.text.strip() and id(f) not in set_aside:
            near = -FAR_OFF_PAGE * width <= f.x0 and f.x1 <= (1 + FAR_OFF_PAGE) * width
            (upright if near else aside).append(f)
    lines: list[Line] = []
    if vertical.written_vertically(upright):
        blocks = vertical.tiers(upright)
        for block_no, block in enumerate(blocks):
            lines.extend(vertical.column_lines(block, page, block_no, width))
    else:
        blocks = order_blocks(upright)
        for block_no, block in enumerate(blocks):
            lines.extend(_block_lines(block, page, block_no))
    for offset, frag in enumerate(aside):
        line = _row_to_line([frag], page, len(blocks))
        line.y0 = line.y1 = frag.y0 + offset * 0.001  # keeps stream order below the page body
        lines.append(line)
    return lines


def _drawn_rule(frag: Frag) -> bool:
    """Dots stacked down the page (a dotted rule between two columns, set in type): one
    fragment many lines high. On the rows it spans it would stand as a cell of each."""
    return (
        frag.y1 - frag.y0 > RULE_LINES * max(frag.size, 1.0)
        and not frag.vertical
        and LEADER_RE.match(frag.text) is not None
    )


# --------------------------------------------------------------------------- bands and columns


def order_blocks(frags: list[Frag], depth: int = 0) -> list[list[Frag]]:
    """Split fragments into reading-order blocks: bands top to bottom, columns left to right."""
    if not frags:
        return []
    left_edge = min(f.x0 for f in frags)
    width = max(f.x1 for f in frags) - left_edge
    if depth == 0:
        left_edge, width = _main_span(frags, left_edge, width)
    if depth >= MAX_DEPTH or len(frags) < 2 * MIN_BAND_ROWS or width < 100:
        return [frags]
    if depth == 0:
        columns = _page_columns(frags, left_edge, width)
        if columns:  # each column's rows read across: a command, then what it does
            return columns
    lo, hi = left_edge + INNER[0] * width, left_edge + INNER[1] * width
    rows = text_rows(frags)
    free = [_free(row, lo, hi) for row in rows]
    line = statistics.median(f.height for f in frags)
    # white above each row, across the page: where a section break may fall
    white = [0.0] + [
        min(f.y0 for f in row) - max(f.y1 for f in above) for above, row in zip(rows, rows[1:])
    ]
    blocks: list[list[Frag]] = []
    across: list[Frag] = []  # rows read across, waiting for the next band of columns
    memo = _SideMemo()
    i = 0
    while i < len(rows):
        found = _band(rows, free, i, line, white, memo)
        if found is None or found[1] is None:  # rows read across: this one, or a long table's
            stop = i + 1 if found is None else found[0]
            for row in rows[i:stop]:
                across.extend(row)
            i = stop
            continue
        j, gutter = found
        start = _columns_start(rows, i, j, gutter, line)
        if start > i:  # rows above it belong to one side only: read across, then look again
            for row in rows[i:start]:
                across.extend(row)
            i = start
            continue
        end = _columns_end(rows, i, j, gutter, line)
        blocks.extend(_single(across))
        across = [f for row in rows[end:j] for f in row]
        for pair in _parallel_pairs(rows[i:end], white[i:end], gutter, line):
            band = [f for row in pair for f in row]
            for side in ([f for f in band if f.x1 <= gutter], [f for f in band if f.x0 >= gutter]):
                blocks.extend(order_blocks(side, depth + 1))
        i = j
    blocks.extend(_single(across))
    return blocks


def _main_span(frags: list[Frag], left_edge: float, width: float) -> tuple[float, float]:
    """(left edge, width) of the page's text, less a little text beside it across white
    twice as wide as the page's text (marks kept off the page, widths away): measured with
    it, the middle of the page where a gutter lies would be taken for a margin. Columns
    standing far apart each hold a good share of the text."""
    spans: list[list[float]] = []  # [x0, x1, characters] of runs no white strip cuts
    for f in sorted(frags, key=lambda f: f.x0):
        if spans and f.x0 <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], f.x1)
            spans[-1][2] += len(f.text)
        else:
            spans.append([f.x0, f.x1, float(len(f.text))])
    if len(spans) < 2:
        return left_edge, width
    # the widest white strip splits the text in two: the side with more text is the page's
    k = max(range(1, len(spans)), key=lambda k: spans[k][0] - spans[k - 1][1])
    gap = spans[k][0] - spans[k - 1][1]
    sides = spans[:k], spans[k:]
    chars = [sum(c for _, _, c in side) for side in sides]
    main = sides[0] if chars[0] >= chars[1] else sides[1]
    main_width = main[-1][1] - main[0][0]
    if gap <= OFF_PAGE_GAP * main_width or min(chars) > OFF_PAGE_TEXT * max(chars):
        return left_edge, width
    return main[0][0], main_width


def _parallel_pairs(
    rows: list[list[Frag]], white: list[float], gutter: float, line: float
) -> list[list[list[Frag]]]:
    """The band's rows cut where each pair of paragraphs side by side begins, when every
    paragraph of both columns starts on a row level with one of the other's: a text beside
    its translation, a source beside its commentary, entries of a two-column list of prose.
    Each pair is read left then right, before the next. Columns that run on (a paper's) break
    their paragraphs where their own text does; two or three of them level by chance is not
    every one of either side."""
    # white across both columns above two rows or more, else no pairs (the cheap test)
    if sum(w >= PAIR_WHITE_LINES * line for w in white[1:]) < MIN_PAIR_BREAKS:
        return [rows]
    sides = [
        [
            (k, min(f.y0 for f in mine), max(f.y1 for f in mine))
            for k, row in enumerate(rows)
            if (mine := [f for f in row if (f.x1 <= gutter) == on_left])
        ]
        for on_left in (True, False)
    ]
    if min(len(side) for side in sides) < 2 * MIN_PAIR_BREAKS:
        return [rows]
    # where both columns run (a heading over one of them is no pair's start)
    first = max(side[0][0] for side in sides)
    last = min(side[-1][0] for side in sides)
    starts = []
    for side in sides:
        gaps = [(k, top - bottom) for (_, _, bottom), (k, top, _) in zip(side, side[1:])]
        leading = statistics.median(gap for _, gap in gaps)
        starts.append(
            {k for k, gap in gaps if first < k <= last and gap >= leading + PAIR_WHITE_LINES * line}
        )
    if starts[0] != starts[1] or len(starts[0]) < MIN_PAIR_BREAKS:
        return [rows]
    cuts = [0, *sorted(starts[0]), len(rows)]
    pairs = [rows[a:b] for a, b in zip(cuts, cuts[1:])]
    # paragraphs, not a list of one-line entries level by their pitch (read down each column)
    if statistics.median(len(pair) for pair in pairs) < MIN_PAIR_ROWS:
        return [rows]
    return pairs


def _page_columns(frags: list[Frag], left_edge: float, width: float) -> list[list[Frag]]:
    """The page's columns, when wide white strips run its whole height: a reference card
    set in three columns of boxes, each box rows of a command and what it does. Read by
    bands, the rows of one column's boxes would share white strips with the next column's and
    be read across, and a box's commands and their definitions would be read as columns; a
    reader runs down one column before the next, each row a command and then what it does.
    A table's columns also run the page's height, but stand a few points apart, differ in
    width, or are narrow with wide white between them."""
    line = statistics.median(f.height for f in frags)
    cover = coverage(frags, left_edge, int(width) + 1)
    gutters = [
        left_edge + (start + end) / 2
        for start, end in white_runs(cover, 1, int(width) - 1, 0)
        if end - start >= PAGE_GUTTER_LINES * line
    ]
    if len(gutters) < MIN_PAGE_COLUMNS - 1:
        return []
    edges = [left_edge, *gutters, left_edge + width + 1]
    columns = [[f for f in frags if a <= f.x0 and f.x1 <= b] for a, b in zip(edges, edges[1:])]
    widths = [max(f.x1 for f in col) - min(f.x0 for f in col) for col in columns if col]
    if len(widths) < len(columns) or min(widths) < max(
        PAGE_COLUMN_WIDTHS * max(widths), PAGE_COLUMN_SHARE * width
    ):
        return []
    if any(len(text_rows(col)) < 2 * MIN_BAND_ROWS for col in columns):
        return []
    return columns


def _band(
    rows: list[list[Frag]],
    free: list[list[Interval]],
    i: int,
    line: float,
    white: list[float],
    memo: _SideMemo | None = None,
) -> tuple[int, float | None] | None:
    """(end row, gutter) of the band of columns that starts at row i, if one does: each white
    stretch of row i is followed down the rows while it stays open, widest first, and until
    a section break. (row, None) when none does but a stretch stayed open for MAX_BAND_ROWS
    rows or more: the rows down to that row are read across untried."""
    skip = None
    for start in sorted(free[i], key=lambda iv: iv[0] - iv[1]):
        if start[1] - start[0] < MIN_GUTTER:
            break
        shared, j = [start], i + 1
        while j < len(rows):
            both = [iv for iv in _intersect(shared, free[j]) if iv[1] - iv[0] >= MIN_GUTTER]
            if not both or _section_break(rows, i, j, both, line, white[j]):
                break
            shared, j = both, j + 1
        if j - i < MIN_BAND_ROWS:
            continue
        gutter = _band_gutter(rows[i:j], shared, memo)
        if gutter is not None:
            return j, gutter
        if j - i >= MAX_BAND_ROWS:
            skip = max(skip or 0, j - MAX_BAND_ROWS // 2)
    return None if skip is None else (skip, None)


def _section_break(
    rows: list[list[Frag]], i: int, j: int, shared: list[Interval], line: float, white: float
) -> bool:
    """Whether balanced columns (rows i..j-1) end above row j and a new section starts there:
    both columns end on about the same line, white across the page at least a line high
    follows, and below it the right column stays empty for a few lines while the left one
    holds the next section's heading. A paragraph break that falls in both columns at once
    leaves no such hole; a heading inside one column has the other column's text beside it;
    a picture in one column leaves the columns unbalanced. A listing and its output that end
    together break at any white across both: each pair is read before the next. A heading in
    larger type (a numbered section of parallel texts, each a pair of short columns) breaks
    after fewer lines and less white: body text does not grow between two lines of a column."""
    # (the heading test looks over the band: it runs only where white alone cannot decide)
    # a band is judged on its last rows: at each white row of a long one, all of its rows
    # (and all below it) would be looked through, quadratic in the page
    i = max(i, j - MAX_BAND_ROWS)
    if white < 0.5 * line or (white < line and not _larger_than_body(rows[j], rows[i:j])):
        return False
    above = max(f.y1 for f in rows[j - 1])
    a, b = max(shared, key=lambda iv: iv[1] - iv[0])
    gutter = (a + b) / 2
    last = _first_each_side(rows, range(j - 1, i - 1, -1), gutter)  # the columns' last lines
    if last is None or abs(last[0].y1 - last[1].y1) > 1.5 * line:
        return False
    if (last[0].mono or last[1].mono) and _code_beside_output(
        [f for row in rows[i:j] for f in row], gutter
    ):
        return True
    if _heading_opens_both(rows, i, j, gutter, line, white):
        return True
    if j - i < 2 * MIN_BAND_ROWS and (
        j - i < MIN_BAND_ROWS + 1 or not _larger_than_body(rows[j], rows[i:j])
    ):
        return False
    first = _first_each_side(rows, range(j, min(j + MAX_BAND_ROWS, len(rows))), gutter)
    if first is None:  # (where the columns go on)
        return False
    first_left, first_right = first
    if first_left.y0 >= first_right.y0 or first_right.y0 - above < SECTION_BREAK_LINES * line:
        return False
    band = [f for row in rows[i:j] for f in row]
    sides = [f for f in band if f.x1 <= gutter], [f for f in band if f.x0 >= gutter]
    if min(len(side) for side in sides) < MIN_BAND_ROWS:
        return False
    # the same two columns go on below (a sidebar or a new layout starting there is no break):
    # each starts at its column's edge or, an indented first line, where the band's did
    opened = _first_each_side(rows, range(i, j), gutter)
    return opened is not None and all(
        min(abs(first.x0 - min(f.x0 for f in side)), abs(first.x0 - start.x0)) <= 2 * line
        for first, side, start in (
            (first_left, sides[0], opened[0]),
            (first_right, sides[1], opened[1]),
        )
    )


def _heading_opens_both(
    rows: list[list[Frag]], i: int, j: int, gutter: float, line: float, white: float
) -> bool:
    """Whether row j starts a new pair of columns under a heading in the left column, the
    right column going on level with it: white a line high across both columns, wider than
    any paragraph break of the right column above, then a heading on the left. A heading
    inside a column that runs on has the other column's text beside it, not white above."""
    left = [f for f in rows[j] if f.x1 <= gutter]
    if white < line or j - i < MIN_BAND_ROWS or not left:
        return False
    if not any(f.x0 >= gutter for f in rows[j]) or not _larger_than_body(left, rows[i:j]):
        return False
    right = [row for row in rows[i:j] if any(f.x0 >= gutter for f in row)]
    gaps = [
        min(f.y0 for f in b if f.x0 >= gutter) - max(f.y1 for f in a if f.x0 >= gutter)
        for a, b in zip(right, right[1:])
    ]
    return white > max(gaps, default=0.0) + 0.25 * line


def _larger_than_body(row: list[Frag], band: list[list[Frag]]) -> bool:
    """Whether the row's type is larger than most of the band's: a heading."""
    sizes = [f.size for r in band for f in r if len(f.text) >= 3 and f.size > 0]
    # OCR gives no sizes (0): no row is known to be larger there
    return bool(sizes) and max(f.size for f in row) >= HEADING_SIZE_RATIO * statistics.median(sizes)


def _columns_start(rows: list[list[Frag]], i: int, j: int, gutter: float, line: float) -> int:
    """The row where the band's narrower side begins, when that is lines below the band's
    top: a box set in the margin beside a paragraph lower down shares the white strip with
    the text's left edge all the way up, but rows above the box are the text's alone, and
    read as columns they would put the box before them. Columns of about one width that
    begin apart (a figure atop one of them) keep the band: read across, the other column's
    first lines would come before the figure's column."""
    numbered = _figures_beside_rows(rows, i, j, gutter)
    if numbered > i:
        return numbered
    sides = (
        [f for row in rows[i:j] for f in row if f.x1 <= gutter],
        [f for row in rows[i:j] for f in row if f.x0 >= gutter],
    )
    widths = [max(f.x1 for f in side) - min(f.x0 for f in side) for side in sides]
    narrow = 0 if widths[0] < widths[1] else 1
    if widths[narrow] >= NARROW_SIDE * widths[1 - narrow]:
        return i
    start = next(
        k
        for k in range(i, j)
        if any((f.x1 <= gutter) if narrow == 0 else (f.x0 >= gutter) for f in rows[k])
    )
    if min(f.y0 for f in rows[start]) - min(f.y0 for f in rows[i]) < MIN_BAND_ROWS * line:
        return i
    return start


def _figures_beside_rows(rows: list[list[Frag]], i: int, j: int, gutter: float) -> int:
    """The band's first row with words on both sides, when the rows above it hold nothing but
    bare figures on one side: a running head's page number, the last entries of a contents
    page with their page numbers. Read as that column's first lines, the numbers would leave
    their rows for the foot of the other column."""
    for on_left in (True, False):  # which side holds the figures
        figures = False
        for k in range(i, j):
            side = [f for f in rows[k] if (f.x1 <= gutter) == on_left]
            if any(not FIGURE_RE.match(f.text) for f in side):
                if figures:
                    return k
                break
            figures = figures or bool(side)
    return i


def _columns_end(rows: list[list[Frag]], i: int, j: int, gutter: float, line: float) -> int:
    """The row after the band's columns end, when rows on one side only follow them below
    white across the page several lines high: a page's foot under one of three columns of
    figures, read after the columns. A column that runs on below the other (a paper's last
    page) has no such white above its tail."""
    last = [
        max(
            (k for k in range(i, j) if any(on_left == (f.x1 <= gutter) for f in rows[k])), default=i
        )
        for on_left in (True, False)
    ]
    end = min(last) + 1
    if end >= j:
        return _foot_below(rows, i, j, line)
    bottom = max(f.y1 for row in rows[i:end] for f in row)
    if min(f.y0 for f in rows[end]) - bottom < FOOT_WHITE_LINES * line:
        return _foot_below(rows, i, j, line)
    return end


def _foot_below(rows: list[list[Frag]], i: int, j: int, line: float) -> int:
    """The band's end before its last row when that row is a foot: smaller type under white
    wider than the columns' leading, below the columns' last lines (a newspaper page's foot
    under the first of four columns, read otherwise between the third and the fourth)."""
    if j - i < 2 * MIN_BAND_ROWS:
        return j
    foot, above = rows[j - 1], rows[j - 2]
    white = min(f.y0 for f in foot) - max(f.y1 for f in above)
    if white < FOOT_TAIL_LINES * line:
        return j
    body = statistics.median(f.size for row in rows[i : j - 1] for f in row)
    if max(f.size for f in foot) >= FOOT_SIZE_RATIO * body:
        return j
    return j - 1


def _first_each_side(
    rows: list[list[Frag]], order: Iterable[int], gutter: float
) -> tuple[Frag, Frag] | None:
    """The first fragment left of the gutter and the first right of it, going through the
    rows in the order given; None when a side has none."""
    left = right = None
    for k in order:
        for f in rows[k]:
            if left is None and f.x1 <= gutter:
                left = f
            elif right is None and f.x0 >= gutter:
                right = f
        if left is not None and right is not None:
            return left, right
    return None


def _free(row: list[Frag], lo: float, hi: float) -> list[Interval]:
    """The white stretches of a row between lo and hi."""
    out: list[Interval] = []
    x = lo
    for f in sorted(row, key=lambda f: f.x0):
        if f.x0 > x:
            out.append((x, min(f.x0, hi)))
        x = max(x, f.x1)
        if x >= hi:
            break
    if x < hi:
        out.append((x, hi))
    return [(a, b) for a, b in out if b > a]


def _intersect(a: list[Interval], b: list[Interval]) -> list[Interval]:
    out: list[Interval] = []
    for a0, a1 in a:
        for b0, b1 in b:
            lo, hi = max(a0, b0), min(a1, b1)
            if hi > lo:
                out.append((lo, hi))
    return out


def _band_gutter(
    band_rows: list[list[Frag]], shared: list[Interval], memo: _SideMemo | None = None
) -> float | None:
    """The widest shared white strip with prose on both sides, or code on one side and its
    output on the other, if any."""
    band = [f for row in band_rows for f in row]
    memo = memo or _SideMemo()
    for a, b in sorted(shared, key=lambda iv: iv[0] - iv[1]):
        if b - a < MIN_GUTTER:
            break
        gutter = (a + b) / 2
        columns = (
            _columns_are_prose(band_rows, gutter, memo)
            or _code_beside_output(band, gutter)
            or _index_columns(band_rows, gutter, memo)
            or _columns_are_prose(_while_both_sides(band_rows, gutter), gutter, memo)
        )
        if columns and not _labelled_rows(band, gutter) and not _one_listing(band, gutter):
            return gutter
    return None


def _while_both_sides(rows: list[list[Frag]], gutter: float) -> list[list[Frag]]:
    """The band's rows down to the last one with text on both sides of the gutter, when body
    text runs on below it on one side: a short column (a few headings and a reference beside
    the top of a long one, a newsletter's last page) leaves the white strip open down to the
    page's foot, and judged over all those rows its share of the band's text is too small for
    a column: the page would be read across at its top. Notes in smaller type under both
    columns (parallel texts' footnotes) are no column running on, and remarks in a margin
    narrower than the text no column: [] then."""
    both = [
        k
        for k, row in enumerate(rows)
        if any(f.x1 <= gutter for f in row) and any(f.x0 >= gutter for f in row)
    ]
    if not both or both[-1] + 1 >= len(rows):
        return []
    head, tail = rows[: both[-1] + 1], rows[both[-1] + 1 :]
    sides = [[f for row in head for f in row if (f.x1 <= gutter) == on_left] for on_left in (1, 0)]
    widths = [max(f.x1 for f in side) - min(f.x0 for f in side) for side in sides]
    if min(widths) < NARROW_SIDE * max(widths):  # remarks or a ruler in the margin
        return []
    body = statistics.median(f.size for row in head for f in row)
    if statistics.median(f.size for row in tail for f in row) < FOOT_SIZE_RATIO * body:
        return []
    return head


def _one_listing(band: list[Frag], gutter: float) -> bool:
    """Fixed-pitch type on both sides: one listing whose lines hold two statements each, or
    are aligned in two parts ('\\usepackage{a}    \\usepackage{b}'), read line by line."""
    return all(
        side and sum(f.mono for f in side) >= 0.9 * len(side)
        for side in ([f for f in band if f.x1 <= gutter], [f for f in band if f.x0 >= gutter])
    )


def _code_beside_output(band: list[Frag], gutter: float) -> bool:
    """Source on one side in a fixed-pitch font, what it typesets on the other: a listing and
    its result side by side, to be read one after the other, not interleaved."""
    left = [f for f in band if f.x1 <= gutter]
    right = [f for f in band if f.x0 >= gutter]
    if len(left) < MIN_BAND_ROWS or len(right) < MIN_BAND_ROWS:
        return False
    share = [sum(f.mono for f in side) / len(side) for side in (left, right)]
    if max(share) < 0.8 or min(share) > 0.2:
        return False
    # the listing's own line numbers (often in another font) are not its output, nor the
    # amounts of a table that ends beside it
    code, other = (right, left) if share[0] < share[1] else (left, right)
    if sum(bool(FIGURE_RE.match(f.text)) for f in other) >= 0.5 * len(other):
        return False
    if _names_in_a_table(code, other) or _labels_beside_commands(code, other):
        return False
    # a listing runs line after line; names set in the margin beside the paragraphs that
    # explain them stand lines apart
    code = sorted(code, key=lambda f: f.y0)
    gaps = [b.y0 - a.y1 for a, b in zip(code, code[1:])]
    return statistics.median(gaps) <= statistics.median(f.height for f in code)


def _names_in_a_table(code: list[Frag], other: list[Frag]) -> bool:
    """Names in a fixed-pitch font (options, environments, fonts), each on the row of what
    it stands for: a table, read by rows. Source beside its output reads like code (braces,
    backslashes, calls) and its lines keep a pitch of their own."""
    if sum(CODE_RE.search(f.text) is not None for f in code) >= 0.3 * len(code):
        return False
    baselines = sorted(f.y1 for f in other)
    return sum(_on_a_baseline(f, baselines) for f in code) >= 0.8 * len(code)


def _labels_beside_commands(code: list[Frag], other: list[Frag]) -> bool:
    """A cheat sheet's labels beside its commands (what to do | the command): each label on
    the row of the first command it names, commands going on for rows without one, box
    titles in bold on rows of their own. Output beside its source runs line after line."""
    labels = sorted((f for f in other if not f.bold), key=lambda f: f.y0)
    if len(other) < 2 or len(labels) > 0.5 * len(code):
        return False
    if any(b.y0 - a.y1 < 0.5 * a.height for a, b in zip(labels, labels[1:])):
        return False  # lines that follow each other: output, not labels rows apart
    baselines = sorted(f.y1 for f in code)
    return all(_on_a_baseline(f, baselines) for f in labels)


def _on_a_baseline(frag: Frag, baselines: list[float]) -> bool:
    """Whether `frag` sits on one of the sorted `baselines` (within a fifth of its height)."""
    k = bisect.bisect_left(baselines, frag.y1 - 0.2 * frag.height)
    return k < len(baselines) and baselines[k] <= frag.y1 + 0.2 * frag.height


def _labelled_rows(band: list[Frag], gutter: float) -> bool:
    """A two-column table of commands and what they do (a cheat sheet): a label stands on the
    row of the command it names and commands go on for rows without one, so the labels are
    scattered down the commands. A short column of prose beside a long one is one run of rows;
    output beside its source keeps rows of its own; a table of prose on both sides, or notes in
    the margin beside prose, keep the reading they had."""
    halves = [f for f in band if f.x1 <= gutter], [f for f in band if f.x0 >= gutter]
    code = [bool(half) and sum(f.mono for f in half) >= 0.8 * len(half) for half in halves]
    if code[0] == code[1]:
        return False
    sides = [
        (any(f.x1 <= gutter for f in row), any(f.x0 >= gutter for f in row))
        for row in text_rows(band)
    ]
    label = 1 if code[0] else 0  # the labels stand beside the commands
    labels = [k for k, side in enumerate(sides) if side[label]]
    entries = sum(side[1 - label] for side in sides)
    both = sum(a and b for a, b in sides)
    if len(labels) < MIN_BAND_ROWS or both < 0.8 * len(labels) or len(labels) > 0.75 * entries:
        return False
    gaps = sum(b - a > 1 for a, b in zip(labels, labels[1:]))
    return gaps >= 0.3 * len(labels)


class _RowSides(NamedTuple):
    """A row's fragments on the two sides of a gutter, as the prose test counts them."""

    left: int  # fragments left of the gutter
    right: int  # and right of it
    left_bold: bool  # every fragment left of it bold
    other_bold: bool  # every other fragment bold
    left_runs: list[tuple[float, int]]  # ``_line_runs`` of each side
    right_runs: list[tuple[float, int]]


class _SideMemo:
    """What the band tests ask of each row on the two sides of a gutter, worked out once per
    row and gutter: each row of a table is tested again for every band that starts above it,
    mostly with the same gutter. Kept for one ``order_blocks`` call, whose rows it holds."""

    def __init__(self) -> None:
        self._rows: list[list[Frag]] = []  # the rows known by their id: kept alive
        self._prose: dict[tuple[int, float], _RowSides] = {}
        self._index: dict[tuple[int, float, bool], tuple[str, bool, str] | None] = {}
        self._ends: dict[int, bool] = {}

    def prose(self, row: list[Frag], gutter: float) -> _RowSides:
        key = (id(row), gutter)
        found = self._prose.get(key)
        if found is None:
            self._rows.append(row)
            left = [f for f in row if f.x1 <= gutter]
            right = [f for f in row if f.x0 >= gutter]
            found = self._prose[key] = _RowSides(
                len(left),
                len(right),
                all(f.bold for f in left),
                all(f.bold for f in row if not f.x1 <= gutter),
                _line_runs(left),
                _line_runs(right),
            )
        return found

    def index_line(
        self, row: list[Frag], gutter: float, on_left: bool
    ) -> tuple[str, bool, str] | None:
        """The row's text on one side as an index line (text, an entry with its pages, its
        initial), None where that side is empty."""
        key = (id(row), gutter, on_left)
        if key in self._index:
            return self._index[key]
        self._rows.append(row)
        side = sorted((f for f in row if (f.x1 <= gutter) == on_left), key=lambda f: f.x0)
        found = None
        if side:
            text = " ".join(f.text.strip() for f in side)
            entry = _index_entry(text)
            found = (text, entry, _initial(text) if entry else "")
        self._index[key] = found
        return found

    def ends_in_page(self, row: list[Frag]) -> bool:
        """Whether the row's last fragment ends in what ends a list of pages."""
        key = id(row)
        found = self._ends.get(key)
        if found is None:
            self._rows.append(row)
            last = max(row, key=lambda f: f.x0).text.rstrip()[-1:]
            found = self._ends[key] = last in PAGE_LIST_ENDS
        return found


def _columns_are_prose(
    rows: list[list[Frag]], gutter: float, memo: _SideMemo | None = None
) -> bool:
    """Tables also have white strips; columns of text have many long lines on both sides.
    A line is judged whole: the pieces a font change cut it into (a word in italics, `code`,
    a bullet) are one stretch of text, cells apart are not."""
    memo = memo or _SideMemo()
    facts = [memo.prose(row, gutter) for row in rows]
    left = sum(fact.left for fact in facts)
    right = sum(fact.right for fact in facts)
    if min(left, right) < MIN_BAND_ROWS:  # fewer pieces than lines can take: no columns
        return False
    # box titles beside their boxes' rows: no column
    if all(fact.left_bold for fact in facts) or all(fact.other_bold for fact in facts):
        return False
    sides: list[list[tuple[float, int]]] = [[], []]
    for fact in facts:
        sides[0] += fact.left_runs
        sides[1] += fact.right_runs
    total = sum(chars for side in sides for _, chars in side)
    if not total:
        return False
    for side in sides:
        if len(side) < MIN_BAND_ROWS or sum(chars for _, chars in side) < 0.15 * total:
            return False
    prose = [_prose(side) for side in sides]
    # a column of short lines (a list, commands, a heading and its items) beside a column of
    # prose, as long as its own lines run full width now and then: wrapped text, not cells
    return all(prose) or (any(prose) and all(_wraps(side) for side in sides))


def _index_columns(rows: list[list[Frag]], gutter: float, memo: _SideMemo | None = None) -> bool:
    """An index or a glossary set in two columns: on both sides most lines are an entry and
    its pages ('cross-reference 1, 2'), in alphabetical order. Short as they are, they are no
    table's cells: a reader runs down one column before the next."""
    # the right column's entries end their rows: too few rows ending in a page, no index (a
    # cheap test first, as this is tried for every candidate band of every page)
    memo = memo or _SideMemo()
    ends = sum(memo.ends_in_page(row) for row in rows if row)
    if ends < INDEX_MIN_ENTRIES:
        return False
    for on_left in (True, False):
        lines = [line for row in rows if (line := memo.index_line(row, gutter, on_left))]
        entries = [line for line in lines if line[1]]
        if len(entries) < INDEX_MIN_ENTRIES or len(entries) < INDEX_SHARE * len(lines):
            return False
        initials = [initial for _, _, initial in entries]
        ordered = sum(a <= b for a, b in zip(initials, initials[1:]))
        if ordered < INDEX_SHARE * (len(initials) - 1):
            return False
    return True


# An index column: this many entries with their pages at least, and this share of its lines
# (a letter's heading, a sub-entry's parent have none), and of them in alphabetical order.
INDEX_MIN_ENTRIES = 6
INDEX_SHARE = 0.6
PAGE_LIST_CHARS = "0123456789,–- "
PAGE_LIST_ENDS = frozenset(PAGE_LIST_CHARS.strip())


def _index_entry(text: str) -> bool:
    """Whether a line is words and then, a blank apart, a list of pages ('eloquence 3, 7')."""
    body = text.rstrip(PAGE_LIST_CHARS)
    tail = text[len(body) :]
    return tail[:1] == " " and any(c.isdigit() for c in tail) and any(c.isalpha() for c in body)


def _initial(text: str) -> str:
    """The first letter, accents and case aside ('\\tstidx' by its 't', 'Tårnby' by its 't')."""
    return next((c for c in unicodedata.normalize("NFKD", text).casefold() if c.isalpha()), "")


def _prose(runs: list[tuple[float, int]]) -> bool:
    """Lines mostly as wide as the column's widest and of a sentence's length."""
    widths = sorted(width for width, _ in runs)
    if statistics.median(widths) < 0.5 * widths[int(0.9 * (len(widths) - 1))]:
        return False
    return statistics.median(chars for _, chars in runs) >= 12


WRAPPED_SHARE = 0.15  # of a column's lines that run to its full width


def _wraps(runs: list[tuple[float, int]]) -> bool:
    widest = max(width for width, _ in runs)
    full = [chars for width, chars in runs if width >= 0.85 * widest]
    return len(full) >= max(MIN_BAND_ROWS, WRAPPED_SHARE * len(runs)) and min(full) >= 30


# Pieces of one line a font change split sit about a space apart; cells of a table further.
RUN_GAP = 0.6  # of the line's height


def _line_runs(row: list[Frag]) -> list[tuple[float, int]]:
    """(width, characters) of each stretch of text of three or more characters on one side
    of a row: neighbouring fragments at most a space apart joined."""
    if not row:
        return []
    runs = []
    row = sorted(row, key=lambda f: f.x0)
    x0, x1, chars = row[0].x0, row[0].x1, len(row[0].text.strip())
    for f in row[1:]:
        if f.x0 - x1 <= RUN_GAP * f.height:
            x1, chars = max(x1, f.x1), chars + len(f.text.strip())
            continue
        runs.append((x1 - x0, chars))
        x0, x1, chars = f.x0, f.x1, len(f.text.strip())
    runs.append((x1 - x0, chars))
    return [(width, chars) for width, chars in runs if chars >= 3]


def _single(frags: list[Frag]) -> list[list[Frag]]:
    """Rows read across; notes in their outer margin each read as a block of their own, just
    before the text they stand beside (a macro name before its description)."""
    if not frags:
        return []
    found = margin_gutter(frags)
    if found is None:
        return _box_title_beside(frags)
    return notes_beside_text(frags, *found)


def _box_title_beside(frags: list[Frag]) -> list[list[Frag]]:
    """Rows read across; a title in bold or larger type standing right of a column's text,
    white lines wide between them, on a row or two of it: on a poster, the title of the next
    column's box, set on the column's first line. Read across, it would end that line; it is
    read after the column, where the box it names begins."""
    body = [f for f in frags if len(f.text) >= 3]
    if len(body) < MIN_MARGIN_TEXT:
        return [frags]
    line = statistics.median(f.height for f in body)
    size = statistics.median(f.size for f in body)
    edge = statistics.median(f.x1 for f in body)  # where the column's lines end
    titles = [f for f in frags if f.x0 > edge + 2 * line]
    rest = [f for f in frags if f.x0 <= edge + 2 * line]
    if not titles or len(titles) > 2 or not rest:
        return [frags]
    if any(f.x1 > min(t.x0 for t in titles) - 2 * line for f in rest):
        return [frags]  # text runs on towards it: one row of a table, a wide line
    if not all(t.bold or (size > 0 and t.size >= HEADING_SIZE_RATIO * size) for t in titles):
        return [frags]
    if any(FIGURE_RE.match(t.text) or not _leads_its_column(t, rest, line) for t in titles):
        return [frags]  # a running head's page number, its section beside its folio
    return [rest, titles]


def _leads_its_column(title: Frag, text: list[Frag], line: float) -> bool:
    """Whether text stands on the title's row and goes on below it within a line: a running
    head stands apart from the page's text, white lines below it."""
    beside = [f for f in text if min(f.y1, title.y1) - max(f.y0, title.y0) > 0]
    if not beside:
        return False
    bottom = max(f.y1 for f in beside)
    return any(0 <= f.y0 - bottom <= line for f in text)


# --------------------------------------------------------------------------- lines


def _block_lines(block: list[Frag], page: int, block_no: int) -> list[Line]:
    rows = text_rows(block)
    lines = [_row_to_line(row, page, block_no) for row in rows]
    for k, line in enumerate(lines):
        if line.cells >= TABLE_CELLS and _justified(line, lines[max(k - 1, 0) : k + 2], rows[k]):
            lines[k] = _row_to_line(rows[k], page, block_no, words=True)
    for start, end in _numbered_listings(lines):
        for k in range(start, end):
            lines[k] = _row_to_line(rows[k], page, block_no, listing=True)
    return lines


def _numbered_listings(lines: list[Line]) -> list[tuple[int, int]]:
    """Runs of lines that count up by one at their start (44, 45, 46 ...; an empty line of
    the listing is its bare number) and read like code: a listing set in a text font, which
    keeps its lines as a listing in a fixed-pitch font does. A contents page counts up too,
    but reads like prose."""
    runs: list[tuple[int, int]] = []
    start, expected = 0, None
    for k, line in enumerate([*lines, None]):
        m = LISTING_NUMBER_RE.match(line.text) if line is not None else None
        number = int(m.group(1)) if m else None
        if number is not None and number == expected:
            expected = number + 1
            continue
        if expected is not None and k - start >= MIN_LISTING_LINES:
            run = lines[start:k]
            if sum(CODE_RE.search(ln.text) is not None for ln in run) >= 0.3 * len(run):
                runs.append((start, k))
        start, expected = k, (number + 1 if number is not None else None)
    return runs


def _justified(line: Line, around: list[Line], row: list[Frag]) -> bool:
    """A short line of a justified paragraph, its word spaces stretched wide enough to part
    its words ('The  package  works  by  redefining  the'): one word a fragment, the white
    between them about even, and a line of one piece above or below it with the same left
    and right edges. A table's cells are seldom single words spaced evenly to the margins of
    the text beside them."""
    if any(" " in f.text.strip() for f in row):
        return False
    gaps = [b.x0 - a.x1 for a, b in zip(row, row[1:])]
    if min(gaps) <= 0 or max(gaps) > JUSTIFIED_GAPS * min(gaps):
        return False
    edge = max(line.size, 1.0)
    return any(
        other is not line
        and other.cells == 1
        and not other.mono
        and abs(other.x0 - line.x0) <= edge
        and abs(other.x1 - line.x1) <= edge
        for other in around
    )


def _row_to_line(
    row: list[Frag], page: int, block_no: int, listing: bool = False, words: bool = False
) -> Line:
    row.sort(key=lambda f: f.x0)
    # a listing's line numbers may be set in another font
    code = [f for f in row if not f.text.strip().isdigit()]
    mono = listing or (bool(code) and all(f.mono for f in code))
    if mono:  # a line of code keeps its inner spacing: 'x = 1    # comment'
        text = _spaced(row)
    else:
        sep = " | " if len(row) >= TABLE_CELLS and not words else " "
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
        cells=1 if mono or words else len(row),
        mono=mono,
    )


def char_width(frags: list[Frag]) -> float:
    """The advance of one character of a fixed-pitch font, from the fragments' widths."""
    widths = [(f.x1 - f.x0) / len(f.text) for f in frags if len(f.text) >= 2]
    return statistics.median(widths) if widths else 5.0


def _spaced(row: list[Frag]) -> str:
    step = char_width(row)
    out = row[0].text.rstrip()
    for prev, frag in zip(row, row[1:]):
        gap = max(1, round((frag.x0 - prev.x1) / step)) if step > 0 else 1
        out += " " * min(gap, 40) + frag.text.strip()
    return out
