"""The faster forms of PDF parsing steps give what the plain forms gave: each test sets a
shortcut against the code it replaced, on inputs where a wrong shortcut would differ."""

from __future__ import annotations

from kb_search.formats.pdf import reading_order
from kb_search.formats.pdf.layout import Frag
from kb_search.formats.pdf.outline import _key


def test_outline_key_keeps_exactly_the_characters_isalnum_keeps() -> None:
    # every code point, '_' and the digits of other scripts included
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    assert _key(text) == "".join(ch for ch in text.lower() if ch.isalnum())
    assert _key("Mod_Ule 2.1: Überblick ½") == "module21überblick½"


def _row(y: float, *cells: tuple[float, float, str, bool]) -> list[Frag]:
    return [Frag(text, x0, y, x1, y + 10, 10.0, bold=bold) for x0, x1, text, bold in cells]


def test_a_row_measured_for_one_gutter_is_measured_again_for_another() -> None:
    """The memo of a band search knows a row by its identity and the gutter: a row read at
    one gutter is judged afresh at another, as a band without the memo judges it."""
    rows = [
        _row(
            20.0 * k,
            (0, 150, "a line of prose in the left column", False),
            (160, 300, "a line of prose in the middle one", False),
            *([(310, 400, "a note", True)] if k < 2 else []),
        )
        for k in range(8)
    ]
    memo = reading_order._SideMemo()
    for gutter in (155.0, 305.0, 155.0):
        for band in (rows, rows[2:], rows[:4]):
            shared = reading_order._columns_are_prose(band, gutter, memo)
            assert shared == reading_order._columns_are_prose(band, gutter)
            shared = reading_order._index_columns(band, gutter, memo)
            assert shared == reading_order._index_columns(band, gutter)
    # the two gutters judge these rows differently: a memo keyed by the row alone would not
    assert reading_order._columns_are_prose(rows, 155.0)
    assert not reading_order._columns_are_prose(rows, 305.0)
