"""Text rows of a page's fragments, and the white strips that run down through them.

Fragments are grouped by the row they sit on, top to bottom; how many fragments cross each
point of the width tells where white strips (gutters, a margin's edge) run.
"""

from __future__ import annotations

from kb_search.formats.pdf.layout import Frag

# Type this many times larger than the small print on its row, far from it: not one line.
ASIDE_SIZE_RATIO = 1.6


def text_rows(frags: list[Frag]) -> list[list[Frag]]:
    """Fragments grouped by the text row they sit on, top to bottom."""
    rows: list[list[Frag]] = []
    top = bottom = small = large = 0.0
    for frag in sorted(frags, key=lambda f: (f.y0 + f.y1) / 2):
        if (
            rows
            and min(frag.y1, bottom) - max(frag.y0, top) > 0.5 * min(frag.height, bottom - top)
            # sizes alike (most rows) need no look along the row
            and not (
                max(large, frag.size) > ASIDE_SIZE_RATIO * min(small, frag.size)
                and _aside(rows[-1], frag)
            )
        ):
            rows[-1].append(frag)
            top, bottom = min(top, frag.y0), max(bottom, frag.y1)
            small, large = min(small, frag.size), max(large, frag.size)
        else:
            rows.append([frag])
            top, bottom, small, large = frag.y0, frag.y1, frag.size, frag.size
    return rows


def _aside(row: list[Frag], frag: Frag) -> bool:
    """Small print far along the row of large type, or large type far from small print: a
    slide's logo or corner mark beside its frame title is no part of the title's line."""
    for other in row:
        small, large = sorted((other, frag), key=lambda f: f.size)
        gap = max(other.x0 - frag.x1, frag.x0 - other.x1)
        if (
            small.size > 0
            and large.size > ASIDE_SIZE_RATIO * small.size
            and gap > 1.5 * large.size
            and not _line_number_before(small, large)
        ):
            return True
    return False


def _line_number_before(small: Frag, large: Frag) -> bool:
    """A bare number in small type at the start of a line (a listing's line numbers, set in
    script size): an indented line of code stands far from its number, and it is
    still the number's line."""
    return small.x1 <= large.x0 and small.text.strip().isdigit()


def coverage(body: list[Frag], left_edge: float, bins: int) -> list[int]:
    """How many fragments cross each point of the width (a running sum of starts and ends)."""
    delta = [0] * (bins + 1)
    for f in body:
        start = max(int(f.x0 - left_edge), 0)
        end = min(int(f.x1 - left_edge) + 1, bins)
        if start < end:
            delta[start] += 1
            delta[end] -= 1
    cover, running = [0] * bins, 0
    for x in range(bins):
        running += delta[x]
        cover[x] = running
    return cover


def white_runs(cover: list[int], lo: int, hi: int, allowed: int) -> list[tuple[int, int]]:
    """Stretches at least 4pt wide where no more than `allowed` fragments cross."""
    runs: list[tuple[int, int]] = []
    start = None
    for x in range(lo, hi + 2):
        if x <= hi and x < len(cover) and cover[x] <= allowed:
            start = x if start is None else start
        elif start is not None:
            if x - start >= 4:
                runs.append((start, x - 1))
            start = None
    return runs
