"""Margin notes (formats/pdf/margin_notes.py) on pages a hostile or odd PDF can make: every
fragment read exactly once, and a page of tens of thousands of fragments in time linear-ish
in their number (the old code compared every note with all the text: quadratic)."""

from __future__ import annotations

import time
from collections import Counter

from kb_search.formats.pdf.layout import Frag
from kb_search.formats.pdf.margin_notes import margin_gutter, notes_beside_text


def test_text_of_uneven_height_beside_a_note_is_read_once():
    """Text taken in top order but cut by middle: a tall fragment (a big initial, an
    inline formula) starting above a short one whose middle is higher. The old code took the
    short one twice and lost the tall one."""
    early = Frag("Opening line of the text.", 200, 10, 500, 22, 12)
    tall = Frag("T", 200, 100, 230, 140, 36)
    short = Frag("small words set beside it", 240, 101, 500, 105, 4)
    late = Frag("A later line of the text.", 200, 200, 500, 212, 12)
    note = Frag("note", 10, 110, 60, 118, 8)
    blocks = notes_beside_text([early, tall, short, late, note], 150.0, True)
    read = Counter(id(f) for block in blocks for f in block)
    assert read == Counter(id(f) for f in (early, tall, short, late, note))


def test_a_page_of_many_notes_and_lines_is_read_in_bounded_time():
    rows = 40_000
    frags = [Frag("some words here", 200, i * 14, 500, i * 14 + 12, 12) for i in range(rows)]
    frags += [Frag("a remark here", 10, i * 14 + 5, 100, i * 14 + 13, 8) for i in range(0, rows, 3)]
    started = time.perf_counter()
    found = margin_gutter(frags)
    assert found is not None
    blocks = notes_beside_text(frags, *found)
    assert time.perf_counter() - started < 5.0  # old code: ~30 s here
    assert sum(len(b) for b in blocks) == len(frags)
