"""Slide decks (beamer, exported presentations): frame titles and overlay pages.

A deck is a PDF of landscape pages with little text each. Each slide's frame title (the
largest line near its top, in the size the deck sets its frame titles in) heads the slide,
though it repeats on the slide's overlay pages like a running head. An overlay page whose every
line the next page shows again is merged into that page, so a slide built up in five steps is
one passage, not five near-copies. A chunk never holds two frames with different titles: each
frame starts one, and a section slide before a frame is that frame's parent. What the deck
repeats at one place on most slides (a sidebar or headline listing the sections, the talk's
title in the footline) is navigation, not any slide's text.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict

from kb_search.formats.pdf.layout import Line, Page

NUMBERED_RE = re.compile(r"^\(?\d{1,2}(\.\d{1,2})*[.)]?\s+\S")  # '1. Statement', '2 Results'
LANDSCAPE = 1.2  # width / height of a slide (4:3 is 1.33, 16:9 is 1.78)
# points: wider pages are drawings or posters (a deck exported at screen size, 1024 x 768
# pixels as points, is not)
MAX_WIDTH = 1100.0
MAX_LINES = 30  # a slide's median number of lines
# ... or this many in type set for the screen: a dense talk's slides with a sidebar of sections
SCREEN_MAX_LINES = 45
TITLE_ZONE = 0.3  # share of the page height, from its top, where a frame title sits
TITLE_MAX_WORDS = 12
OFF_PAGE = 2.0  # points beyond the page's edge a line must lie to be off the page
SLOT_SIZE = 0.08  # a frame title is set within this share of the deck's frame-title size
# A slide's text is set to be read from across a room: its body at least this share of the
# page height (beamer's 11pt on a 273pt page is 0.04); a landscape book's is about half that.
SCREEN_TYPE = 0.035
TITLE_OVER_BODY = 1.05  # a frame title is set larger than the body by at least this much
NAVIGATION_SHARE = 0.2  # of the slides with text: a sidebar line on this many is navigation
NAVIGATION_MIN_SLIDES = 3
SIDEBAR_SHARE = 0.3  # of the slide's width: a sidebar lies in this band at its left or right
BAR_SHARE = 0.12  # of the slide's height: the headline and footline lie in this band


def is_slide_deck(pages: list[Page], body_size: float = 0.0) -> bool:
    """Landscape pages with little text each. Not a landscape book or screen document set in
    reading type whose top line is in the body's size: there that line is a running head or
    the page's first sentence, not a frame title, and each page is no slide."""
    with_text = [p for p in pages if p.lines and p.height > 0]
    if len(with_text) < 2:
        return False
    wide = [p for p in with_text if p.width / p.height >= LANDSCAPE and p.width <= MAX_WIDTH]
    if len(wide) < 0.6 * len(with_text):
        return False
    height = statistics.median(p.height for p in with_text)
    screen = body_size > 0 and body_size >= SCREEN_TYPE * height
    most = SCREEN_MAX_LINES if screen else MAX_LINES
    if statistics.median(len(p.lines) for p in with_text) > most:
        return False
    if body_size <= 0 or screen:
        return True
    slot = title_size(pages)
    return slot is not None and slot >= TITLE_OVER_BODY * body_size


def frame_title(page: Page, slot: float | None = None) -> Line | None:
    """The largest line near the top of the slide that reads as a title; with `slot` (the
    deck's frame-title size), only a line set in that size: a frame with an empty title has
    body text at its top, not a title."""
    candidates = [
        ln
        for ln in page.lines
        if ln.y0 < TITLE_ZONE * page.height
        and 1 <= len(ln.text.split()) <= TITLE_MAX_WORDS
        and sum(c.isalpha() for c in ln.text) >= 3
    ]
    if not candidates:
        return None
    line = max(candidates, key=lambda ln: (round(ln.size, 1), -ln.y0))
    if slot is not None and abs(line.size - slot) > SLOT_SIZE * slot:
        return None
    return line


def title_size(pages: list[Page]) -> float | None:
    """The size most slides set their frame title in (the deck's template)."""
    sizes = Counter(round(t.size * 2) / 2 for p in pages if (t := frame_title(p)) is not None)
    return sizes.most_common(1)[0][0] if sizes else None


def frame_titles(pages: list[Page]) -> set[int]:
    """The ids of the frame-title lines, to keep when running heads are dropped."""
    slot = title_size(pages)
    return {id(t) for p in pages if (t := frame_title(p, slot)) is not None}


def drop_off_page(pages: list[Page]) -> None:
    """Drop lines that lie wholly outside the page: text a deck keeps for other overlays
    (beamer moves what an overlay hides off the page), which no reader sees. A page whose
    every line is outside has no usable geometry (zero-size boxes) and is kept as it is."""
    for page in pages:
        if page.width <= 0 or page.height <= 0:
            continue
        shown = [
            ln
            for ln in page.lines
            if ln.x1 >= -OFF_PAGE
            and ln.y1 >= -OFF_PAGE
            and ln.x0 <= page.width + OFF_PAGE
            and ln.y0 <= page.height + OFF_PAGE
        ]
        if shown:
            page.lines = shown


def merge_overlays(pages: list[Page]) -> None:
    """Empty each overlay page whose lines all appear again on the next page."""
    for page, following in zip(pages, pages[1:]):
        if not page.lines or not following.lines:
            continue
        later = {ln.text for ln in following.lines}
        if all(ln.text in later for ln in page.lines):
            page.lines = []


def drop_navigation(pages: list[Page], keep: set[int]) -> None:
    """Drop the lines a deck shows in a sidebar at the same place, with the same text, on a
    fifth of its slides or more (three at least; a section's sidebar lists its own
    subsections), after overlays are merged: the sidebar's list of sections and subsections,
    each of which would otherwise head the text beside it. Frame
    titles (`keep`, by id) stay. The headline and footline are left to the running heads' rules
    (a headline's section names are what a deck's bookmarks are matched to)."""
    shown = [p for p in pages if p.lines]
    slides: dict[tuple[str, int, int], set[int]] = defaultdict(set)
    for page in shown:
        for line in page.lines:
            if _in_sidebar(line, page):
                slides[_place(line)].add(page.number)
    needed = max(NAVIGATION_MIN_SLIDES, NAVIGATION_SHARE * len(shown))
    for page in shown:
        drop = {
            id(ln)
            for ln in page.lines
            if len(slides.get(_place(ln), ())) >= needed and id(ln) not in keep
        }
        if drop and len(drop) < len(page.lines):
            page.lines = [ln for ln in page.lines if id(ln) not in drop]


def _place(line: Line) -> tuple[str, int, int]:
    return line.text, round(line.x0), round(line.y0)


def _in_sidebar(line: Line, page: Page) -> bool:
    """In a band down the left or right of the slide, below the headline and above the
    footline."""
    side = line.x1 <= SIDEBAR_SHARE * page.width or line.x0 >= (1 - SIDEBAR_SHARE) * page.width
    edge = BAR_SHARE * page.height
    return side and line.y0 >= edge and line.y1 <= page.height - edge


def mark_frame_titles(pages: list[Page], title: str) -> int:
    """Make each slide's frame title a heading, one level below the deepest heading found,
    and return the level frame titles have (fonts may have made them headings already). The
    title slide's largest line is the deck's title, not a frame's. A numbered line inside a
    frame that fonts ranked above its frame title (a numbered list, an overview of the
    sections) is under the frame title: it never heads the slides after it."""
    deepest = max((ln.heading_level or 0 for p in pages for ln in p.lines), default=0)
    slot = title_size(pages)
    first = next((p for p in pages if p.lines), None)
    levels: Counter[int] = Counter()
    framed: list[tuple[Page, Line]] = []
    for page in pages:
        line = frame_title(page, slot)
        if line is None or line.text == title or page is first:
            continue
        if line.heading_level is None:
            line.heading_level = deepest + 1
        levels[line.heading_level] += 1
        framed.append((page, line))
    frame_level = levels.most_common(1)[0][0] if levels else deepest + 1
    for page, head in framed:
        for line in page.lines:
            inside = line is not head and line.y0 > head.y0
            outranks = line.heading_level is not None and line.heading_level < frame_level
            if inside and outranks and NUMBERED_RE.match(line.text):
                line.heading_level = frame_level + 1
    return frame_level


def frame_starts(pages: list[Page]) -> set[int]:
    """The pages a chunk must start on: every slide, but for one that goes on with the frame
    title of the slide before (a frame broken over slides) and one after a section slide (a
    slide with a heading but no frame title: the parent of the frames after it)."""
    slot = title_size(pages)
    starts: set[int] = set()
    previous: Page | None = None
    for page in pages:
        if not page.lines:
            continue
        if previous is not None:
            title, before = frame_title(page, slot), frame_title(previous, slot)
            same = title is not None and before is not None and title.text == before.text
            section = before is None and any(ln.heading_level for ln in previous.lines)
            if not same and not section:
                starts.add(page.number)
        previous = page
    return starts
