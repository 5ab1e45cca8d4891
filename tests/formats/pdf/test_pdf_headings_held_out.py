"""Headings as a reader sees them, from defects found on held-out PDFs: bookmarks without the
section number, numbered body lines (a play's speakers, list items), running heads whose page
number is extracted apart, page numbers set high above the foot, and slide frames."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("reportlab")

from reportlab.pdfgen.canvas import Canvas  # noqa: E402

from kb_search.formats.pdf.parse import parse_pdf  # noqa: E402
from kb_search.parsed import ChunkSettings  # noqa: E402
from pdf_samples import HEIGHT, lines_of, words  # noqa: E402

SETTINGS = ChunkSettings()


def _text(canvas: Canvas, x: float, y: float, text: str, font: str, size: float) -> None:
    canvas.setFont(font, size)
    canvas.drawString(x, HEIGHT - y, text)


def _speakers(canvas: Canvas, top: float, marker: str) -> None:
    """An example play: numbered speaker lines in bold at the body's size, each over a line."""
    for i, name in enumerate(["Flore", "Tircis et Dorilas", "Climène"]):
        y = top + i * 40
        _text(canvas, 72, y, f"{i + 3} {name}", "Helvetica-Bold", 10)
        _text(canvas, 72, y + 13, f"verse{marker}{i} of the speech goes on here", "Helvetica", 10)


def test_bookmarks_without_section_numbers_still_name_the_headings(tmp_path: Path) -> None:
    """Fails on the old code: bookmarks read 'Usage' where the page prints '2 Usage', so the
    outline was ignored and a play's bold numbered speaker line became the parent of the next
    section."""
    path = tmp_path / "bookmarks.pdf"
    canvas = Canvas(str(path))
    canvas.setTitle("A package manual")
    sections = [("1", "Installation"), ("2", "Configuration"), ("3", "Usage")]
    for number, name in sections:
        canvas.bookmarkPage(name)
        canvas.addOutlineEntry(name, name, level=0)  # hyperref's default: no number
        _text(canvas, 72, 80, f"{number} {name}", "Helvetica-Bold", 14)
        for i, line in enumerate(lines_of(words(90, f"{name[:3]}x"), per_line=10)):
            _text(canvas, 72, 110 + i * 13, line, "Helvetica", 10)
        _speakers(canvas, 260, name[:3])
        canvas.showPage()
    canvas.save()
    doc = parse_pdf(path, SETTINGS)
    assert {c.heading for c in doc.chunks} == {f"{n} {name}" for n, name in sections}
