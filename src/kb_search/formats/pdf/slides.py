"""Slide decks (beamer, exported presentations): frame titles and overlay pages.

A deck is a PDF of landscape pages with little text each. Each slide's frame title (the
largest line near its top) heads the slide, though it repeats on the slide's overlay pages
like a running head. An overlay page whose every line the next page shows again is merged
into that page, so a slide built up in five steps is one passage, not five near-copies.
"""

from __future__ import annotations

import statistics

from kb_search.formats.pdf.layout import Line, Page

LANDSCAPE = 1.2  # width / height of a slide (4:3 is 1.33, 16:9 is 1.78)
MAX_WIDTH = 1000.0  # points: wider pages are drawings or posters
MAX_LINES = 30  # a slide's median number of lines
TITLE_ZONE = 0.3  # share of the page height, from its top, where a frame title sits
TITLE_MAX_WORDS = 12


def is_slide_deck(pages: list[Page]) -> bool:
    with_text = [p for p in pages if p.lines and p.height > 0]
    if len(with_text) < 2:
        return False
    wide = [p for p in with_text if p.width / p.height >= LANDSCAPE and p.width <= MAX_WIDTH]
    if len(wide) < 0.6 * len(with_text):
        return False
    return statistics.median(len(p.lines) for p in with_text) <= MAX_LINES


def frame_title(page: Page) -> Line | None:
    """The largest line near the top of the slide that reads as a title."""
    candidates = [
        ln
        for ln in page.lines
        if ln.y0 < TITLE_ZONE * page.height
        and 1 <= len(ln.text.split()) <= TITLE_MAX_WORDS
        and sum(c.isalpha() for c in ln.text) >= 3
    ]
    if not candidates:
        return None
    return max(candidates, key=lambda ln: (round(ln.size, 1), -ln.y0))


def frame_titles(pages: list[Page]) -> set[int]:
    """The ids of the frame-title lines, to keep when running heads are dropped."""
    return {id(t) for p in pages if (t := frame_title(p)) is not None}


def merge_overlays(pages: list[Page]) -> None:
    """Empty each overlay page whose lines all appear again on the next page."""
    for page, following in zip(pages, pages[1:]):
        if not page.lines or not following.lines:
            continue
        later = {ln.text for ln in following.lines}
        if all(ln.text in later for ln in page.lines):
            page.lines = []


def mark_frame_titles(pages: list[Page], title: str) -> None:
    """Make each slide's frame title a heading, one level below the deepest heading found."""
    deepest = max((ln.heading_level or 0 for p in pages for ln in p.lines), default=0)
    for page in pages:
        line = frame_title(page)
        if line is not None and line.heading_level is None and line.text not in title:
            line.heading_level = deepest + 1
