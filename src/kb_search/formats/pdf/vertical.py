"""Vertical writing (Japanese or Chinese tategaki): a page whose text stands in columns of
wide characters is read tier by tier (dan) from the top, each tier's columns right to left,
each column top to bottom. ``layout`` stacks a column's characters into one fragment; this
module orders the columns and makes them lines."""

from __future__ import annotations

from kb_search.formats.pdf.layout import Frag, Line


def written_vertically(frags: list[Frag]) -> bool:
    """Most of the page's text stands in vertical columns (Japanese or Chinese tategaki)."""
    total = sum(len(f.text) for f in frags)
    return total > 0 and sum(len(f.text) for f in frags if f.vertical) > 0.5 * total


def tiers(frags: list[Frag]) -> list[list[Frag]]:
    """Vertical writing set in tiers (dan), top to bottom: fragments whose heights overlap
    share a tier."""
    found: list[list[Frag]] = []
    bottom = 0.0
    for frag in sorted(frags, key=lambda f: f.y0):
        if found and frag.y0 < bottom:
            found[-1].append(frag)
            bottom = max(bottom, frag.y1)
        else:
            found.append([frag])
            bottom = frag.y1
    return found


def column_lines(tier: list[Frag], page: int, block_no: int, width: float) -> list[Line]:
    """A tier's columns right to left, each top to bottom, one line per fragment; a line's box
    is turned a quarter (x along the column, y from the right edge) so that what comes later
    in reading stands lower, as on a horizontal page."""
    columns: list[list[Frag]] = []
    for frag in sorted(tier, key=lambda f: -(f.x0 + f.x1)):
        last = columns[-1] if columns else None
        if last and min(frag.x1, last[0].x1) - max(frag.x0, last[0].x0) > 0.5 * min(
            frag.x1 - frag.x0, last[0].x1 - last[0].x0
        ):
            last.append(frag)
        else:
            columns.append([frag])
    lines: list[Line] = []
    for col in columns:
        for frag in sorted(col, key=lambda f: f.y0):
            lines.append(
                Line(
                    text=frag.text.strip(),
                    page=page,
                    x0=frag.y0,
                    y0=width - frag.x1,
                    x1=frag.y1,
                    y1=width - frag.x0,
                    size=frag.size,
                    bold=frag.bold,
                    block=block_no,
                )
            )
    return lines
