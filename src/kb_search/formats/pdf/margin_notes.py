"""Notes in a page's outer margin: found, then read beside the text they annotate.

A margin note (a macro's name beside its description, a reviewer's remark, a key setting)
stands in a white strip's far side with few lines, beside a column of text. It is read as a
block of its own just before the text it stands beside, never interleaved with that text's
lines; a remark inside a paragraph is read before the paragraph, which it would cut in two.
A table's first or last column is no margin: it has a cell on nearly every row.
"""

from __future__ import annotations

import bisect
import itertools
import statistics

from kb_search.formats.pdf.layout import FIGURE_RE, LEADER_RE, Frag
from kb_search.formats.pdf.rows import coverage, text_rows, white_runs

# Lines of text beside notes in its margin before they count as notes: fewer when the notes
# are in smaller type (a short section with its key settings in the margin).
MIN_MARGIN_TEXT = 10
MIN_MARGIN_TEXT_SMALL_NOTES = 6
NOTE_SIZE_RATIO = 0.85
# Notes in a margin, against the text's lines, when most of them sit off the text's rows.
MAX_NOTES_OFF_ROWS = 1.2
# Notes on the text's rows, against its pieces, where they are not a table's first column.
MAX_NOTES_ON_ROWS = 0.5


def notes_beside_text(frags: list[Frag], gutter: float, notes_left: bool) -> list[list[Frag]]:
    """Rows read across; notes in their outer margin (left of `gutter` when `notes_left`) each
    read as a block of their own, just before the text they stand beside."""
    # a long note line may run past the strip, but stops short of the text's edge
    edge = min((f.x0 for f in frags if f.x0 >= gutter), default=gutter)
    on_left = [f.x1 <= gutter or (notes_left and f.x0 < gutter and f.x1 < edge) for f in frags]
    left = [f for f, is_left in zip(frags, on_left, strict=True) if is_left]
    right = [f for f, is_left in zip(frags, on_left, strict=True) if not is_left]
    notes, text = (left, right) if notes_left else (right, left)
    return _notes_before_their_text(notes, text)


def margin_gutter(frags: list[Frag]) -> tuple[float, bool] | None:
    """The white strip between the text and notes in its outer margin (margin notes, macro
    names beside their description): few lines on the narrow side, almost none crossing the
    strip (a running head may). A table's first column is not one: it has a cell on nearly
    every row. Returns the strip's x and whether the notes are on its left."""
    body = [f for f in frags if len(f.text) >= 3]
    if len(body) < MIN_MARGIN_TEXT_SMALL_NOTES:
        return None
    left_edge = min(f.x0 for f in body)
    width = max(f.x1 for f in body) - left_edge
    if width < 100:
        return None
    cover = coverage(body, left_edge, int(width) + 1)
    outer = int(0.3 * width)
    for lo, hi in ((0, outer), (int(width) - outer, int(width))):
        for start, end in white_runs(cover, lo, hi, 2):
            if end - start < 6:
                continue
            gutter = left_edge + _emptiest(cover, start, end)
            left = [f for f in body if f.x1 <= gutter]
            right = [f for f in body if f.x0 >= gutter]
            notes, text = (left, right) if lo == 0 else (right, left)
            if _mostly_numbers(frags, gutter, lo == 0):
                continue  # a listing's line numbers beside its code, a contents page's pages
            if len(text) < (
                MIN_MARGIN_TEXT_SMALL_NOTES if _smaller(notes, text) else MIN_MARGIN_TEXT
            ):
                continue
            if (
                len(notes) <= 0.3 * len(text)
                or (len(notes) <= MAX_NOTES_ON_ROWS * len(text) and not _a_cell_a_row(notes, text))
                or (len(notes) <= MAX_NOTES_OFF_ROWS * len(text) and _off_the_rows(notes, text))
            ):
                return gutter, lo == 0
    return None


def _mostly_numbers(frags: list[Frag], gutter: float, notes_left: bool) -> bool:
    """Whether most of what stands beyond the strip, short pieces included, is bare figures
    and the rest single lines: the page numbers of a table of contents (an entry's author may
    stand beside its number), a table's amounts, not notes about the text. A note of several
    lines among numbers (a reviewer's remark beside a page image's grid) is a note still."""
    side = [
        f
        for f in frags
        if (f.x1 <= gutter if notes_left else f.x0 >= gutter) and not LEADER_RE.match(f.text)
    ]
    if not side:
        return True  # nothing beyond the strip: no notes
    words = [f for f in side if not FIGURE_RE.match(f.text)]
    if len(words) > 0.5 * len(side):
        return False
    return all(len(group) == 1 for group in _note_groups(words))


def _a_cell_a_row(notes: list[Frag], text: list[Frag]) -> bool:
    """Whether a note stands on nearly every row of the text: a table's first column (each
    row's name), where names in a margin stand beside some lines and not others."""
    rows = text_rows(text)
    middles = sorted((n.y0 + n.y1) / 2 for n in notes)

    def beside(row: list[Frag]) -> bool:  # by bisection: a page's rows times its notes is quadratic
        top, bottom = min(f.y0 for f in row), max(f.y1 for f in row)
        k = bisect.bisect_left(middles, top)
        return k < len(middles) and middles[k] <= bottom

    return sum(beside(row) for row in rows) >= 0.8 * len(rows)


def _smaller(notes: list[Frag], text: list[Frag]) -> bool:
    """Notes set in clearly smaller type than the text they stand beside."""
    if not notes or not text:
        return False
    return statistics.median(f.size for f in notes) < NOTE_SIZE_RATIO * statistics.median(
        f.size for f in text
    )


def _off_the_rows(notes: list[Frag], text: list[Frag]) -> bool:
    """Most notes sit between the text's lines, not on them, and run over a few lines each:
    comments set in the margin at their own leading (a review's remarks), where a table's last
    column keeps to its rows or puts one figure beside each cell."""
    centres = sorted((f.y0 + f.y1) / 2 for f in text)
    on_a_row = 0
    for note in notes:
        mid = (note.y0 + note.y1) / 2
        k = bisect.bisect_left(centres, mid)
        near = [abs(centres[j] - mid) for j in (k - 1, k) if 0 <= j < len(centres)]
        on_a_row += bool(near) and min(near) < 0.3 * max(note.height, 1.0)
    if on_a_row >= 0.5 * len(notes):
        return False
    # remarks run over lines; a table's dates or figures stand one to a cell
    grouped = sum(len(group) for group in _note_groups(notes) if len(group) >= 2)
    return grouped >= 0.5 * len(notes)


def _emptiest(cover: list[int], start: int, end: int) -> float:
    """The middle of the widest stretch of start..end that the fewest fragments cross: a run
    of a few crossings may hold the notes themselves, and the strip must pass beside them."""
    least = min(cover[start : end + 1])
    best, best_len, run_start = (start + end) / 2, 0, None
    for x in range(start, end + 2):
        if x <= end and cover[x] == least:
            run_start = x if run_start is None else run_start
        elif run_start is not None:
            if x - run_start > best_len:
                best, best_len = (run_start + x - 1) / 2, x - run_start
            run_start = None
    return best


def _notes_before_their_text(notes: list[Frag], text: list[Frag]) -> list[list[Frag]]:
    """A one-line note opens the text it stands beside (its row reads 'drama* The starred
    version ...'); a note of several lines is a block of its own, read just before that text.
    A remark (words, not a name) beside a line inside a paragraph is read before the
    paragraph, which it would cut in two; bare figures among the notes (a page image's ruler)
    are read after the text."""
    blocks: list[list[Frag]] = []
    # by middle: the text above a note is a prefix (each block is read by its rows again)
    rest = sorted(text, key=lambda f: ((f.y0 + f.y1) / 2, f.x0))
    middles = [(f.y0 + f.y1) / 2 for f in rest]
    taken = 0  # rest[:taken] is read already
    current: list[Frag] = []
    figures = [f for f in notes if FIGURE_RE.match(f.text)]
    words = [f for f in notes if not FIGURE_RE.match(f.text)]
    tops: list[float] | None = None
    centres = sorted((f.y0 + f.y1) / 2 for f in text)
    for group in _note_groups(words, text):
        top = min(f.y0 for f in group)
        start = top
        if _remark(group) and _beside(group[0], centres):
            # the first row of the paragraph the note stands in, when that is a row above
            tops = _paragraph_tops(text) if tops is None else tops
            k = bisect.bisect_right(tops, top + 0.5 * group[0].height) - 1
            if k >= 0 and tops[k] < top - 0.5 * group[0].height:
                start = tops[k]
        end = max(taken, bisect.bisect_left(middles, start))
        current += rest[taken:end]
        taken = end
        if current:
            blocks.append(current)
        if len(group) == 1 and start == top:
            current = group
        else:
            blocks.append(group)
            current = []
    current += rest[taken:]
    for block in (current, figures):
        if block:
            blocks.append(block)
    return blocks


def _beside(note: Frag, centres: list[float]) -> bool:
    """Whether a line of the text (`centres`: the text's middles, sorted) stands level with
    the note (by bisection: a page's notes times its text would be quadratic)."""
    k = bisect.bisect_left(centres, note.y0)
    return k < len(centres) and centres[k] <= note.y1


def _remark(group: list[Frag]) -> bool:
    """A note of words in a text font (a reviewer's comment), not a name or a setting
    ('\\abb<Kennung>', 'line-style=dashed'): two or more words of letters alone."""
    if any(f.mono for f in group):
        return False
    tokens = " ".join(f.text for f in group).split()
    return sum(len(t) >= 2 and t.strip(".,;:!?").isalpha() for t in tokens) >= 2


def _paragraph_tops(text: list[Frag]) -> list[float]:
    """The tops of the rows that begin a paragraph: the first, an indented one, one under a
    line that ends short of the text's edge or under more white than the lines keep."""
    rows = text_rows(text)
    if not rows:
        return []
    x0 = [min(f.x0 for f in row) for row in rows]
    x1 = [max(f.x1 for f in row) for row in rows]
    y0 = [min(f.y0 for f in row) for row in rows]
    y1 = [max(f.y1 for f in row) for row in rows]
    line = statistics.median(b - a for a, b in zip(y0, y1))
    left, right = statistics.median(x0), max(x1)
    gaps = [b - a for a, b in zip(y1, y0[1:])]
    usual = statistics.median(gaps) if gaps else 0.0
    tops = [y0[0]]
    for k in range(1, len(rows)):
        if (
            x0[k] > left + 0.5 * line
            or x1[k - 1] < right - 2 * line
            or gaps[k - 1] > usual + 0.5 * line
        ):
            tops.append(y0[k])
    return tops


def _note_groups(notes: list[Frag], text: list[Frag] | None = None) -> list[list[Frag]]:
    """Notes in top-to-bottom order, lines of one note (a line apart at most) kept together.
    Beside `text`, a bold line with no text on its row and a plain line are two notes: a
    cheat sheet's box title and the label below or above it."""
    groups: list[list[Frag]] = []
    rows = _Rows(text or [])
    bottom = 0.0  # of the last group
    for frag in sorted(notes, key=lambda f: (f.y0, f.x0)):
        last = groups[-1] if groups else None
        if (
            last
            and frag.y0 - bottom <= 1.0 * max(frag.height, 1.0)
            and not (text and _box_title(last[-1], frag, rows))
        ):
            last.append(frag)
            bottom = max(bottom, frag.y1)
        else:
            groups.append([frag])
            bottom = frag.y1
    return groups


class _Rows:
    """Whether any of the text stands level with a line, by bisection (a page's notes times
    its text would be quadratic): the text by top, with the lowest bottom so far."""

    def __init__(self, text: list[Frag]) -> None:
        ordered = sorted(text, key=lambda f: f.y0)
        self.tops = [f.y0 for f in ordered]
        self.lowest = list(itertools.accumulate((f.y1 for f in ordered), max))

    def level_with(self, line: Frag) -> bool:
        k = bisect.bisect_left(self.tops, line.y1)  # the text that starts above its bottom
        return k > 0 and self.lowest[k - 1] > line.y0


def _box_title(above: Frag, below: Frag, rows: _Rows) -> bool:
    """Whether one of two note lines, one bold and one not, is bold and has no text on its row."""
    if above.bold == below.bold:
        return False
    return not rows.level_with(above if above.bold else below)
