"""Vertical writing (Japanese tategaki): characters stacked in columns, read top to bottom,
columns right to left, tiers (dan) top to bottom; never a table of one-character cells."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("reportlab")

from reportlab.lib.pagesizes import A4  # noqa: E402
from reportlab.pdfbase import pdfmetrics  # noqa: E402
from reportlab.pdfbase.cidfonts import UnicodeCIDFont  # noqa: E402
from reportlab.pdfgen.canvas import Canvas  # noqa: E402

from kb_search.formats.pdf.parse import parse_pdf  # noqa: E402
from kb_search.parsed import ChunkSettings  # noqa: E402
from pdf_samples import write_objects  # noqa: E402

# Adobe-Japan1 CIDs, as a 2004 dvipdfmx file sets them in Identity-V
COLUMNS = {
    "わたくしといふ現象は": "03980368035803600371034d037e077109c50378",
    "假定された有機交流電燈の": "104a0c06035e039503680f17063b07a60f760c3f0c6f0377",
    "ひとつの青い照明です": "037b0371036d03770a68034d09b00ecc03700362",
    "因果交流電燈の": "04bc054c07a60f760c3f0c6f0377",
}


def text_of(path: Path) -> str:
    return "\n".join(c.text for c in parse_pdf(path, ChunkSettings()).chunks)


def in_order(text: str, parts: list[str]) -> bool:
    at = -1
    for part in parts:
        at = text.find(part, at + 1)
        if at < 0:
            return False
    return True


def test_vertical_columns_read_top_to_bottom_right_to_left_tier_by_tier(tmp_path: Path) -> None:
    pdfmetrics.registerFont(UnicodeCIDFont("HeiseiMin-W3", isVertical=True))
    top = ["わたくしといふ現象は", "假定された有機交流電燈の", "ひとつの青い照明です"]
    top.append("風景やみんなといっしょに")
    bottom = ["これらは二十二箇月の", "過去とかんずる方角から", "紙と鑛質インクをつらね"]
    path = tmp_path / "tategaki.pdf"
    canvas = Canvas(str(path), pagesize=A4)
    canvas.setFont("HeiseiMin-W3", 12)
    _, height = A4
    # drawn left to right, as the file kb misread draws them: the reader goes the other way
    for tier_top, tier in ((72, top), (400, bottom)):
        for i, column in enumerate(reversed(tier)):
            canvas.drawString(300 + i * 30 - 30 * len(tier), height - tier_top, column)
    canvas.showPage()
    canvas.save()
    text = text_of(path)
    assert " | " not in text
    assert in_order(text, top + bottom), text


def _identity_v_pdf(path: Path, columns: list[tuple[float, float, str]]) -> Path:
    """A page in a Japanese font that is not embedded (Ryumin-Light, Identity-V, no
    ToUnicode): pdfium finds no glyph boxes, so each column is a text object of no width."""
    content = " ".join(
        f"BT /F1 10 Tf 1 0 0 1 {x} {y} Tm <{COLUMNS[text]}> Tj ET" for x, y, text in columns
    ).encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type0 /BaseFont /Ryumin-Light-Identity-V"
        b" /Encoding /Identity-V /DescendantFonts [6 0 R] >>",
        b"<< /Type /Font /Subtype /CIDFontType0 /BaseFont /Ryumin-Light /DW 1000"
        b" /CIDSystemInfo << /Registry (Adobe) /Ordering (Japan1) /Supplement 2 >>"
        b" /FontDescriptor 7 0 R >>",
        b"<< /Type /FontDescriptor /FontName /Ryumin-Light /Flags 6 /ItalicAngle 0"
        b" /Ascent 723 /Descent -241 /CapHeight 709 /StemV 69 /FontBBox [-170 -331 1024 903] >>",
    ]
    return write_objects(path, objects, b"1.3")


def test_vertical_columns_in_a_font_pdfium_lacks_are_read(tmp_path: Path) -> None:
    order = list(COLUMNS)
    # columns 17pt apart, right to left; the fourth starts a second tier lower down
    places = [(500, 760), (483, 760), (466, 760), (500, 500)]
    columns = [(x, y, text) for (x, y), text in zip(places, order)]
    path = _identity_v_pdf(tmp_path / "identity-v.pdf", list(reversed(columns)))
    text = text_of(path)
    assert " | " not in text
    assert in_order(text, order), text
