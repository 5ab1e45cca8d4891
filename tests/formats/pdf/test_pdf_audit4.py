"""Kinds of wrong headings seen on 50 PDFs no one had used (a landscape book, a bookmark
matched inside a margin command, a margin label): each test rebuilds one in typographic
terms and fails on the code before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("reportlab")

from reportlab.pdfgen.canvas import Canvas  # noqa: E402

from kb_search.formats.pdf.parse import parse_pdf  # noqa: E402
from kb_search.parsed import ChunkSettings  # noqa: E402
from pdf_samples import lines_of, words  # noqa: E402

SETTINGS = ChunkSettings(max_tokens=200, min_tokens=40)


def test_a_landscape_books_running_heads_are_no_frame_titles(tmp_path: Path) -> None:
    """Fails on the old code: a manual printed on landscape pages (jmgerdoc_scr) was taken for a
    slide deck, so its running head '2 JURABASE 12', set in the body's size, was kept as each
    page's frame title and headed every chunk."""
    size = (637.8, 510.2)
    path = tmp_path / "landscape.pdf"
    canvas = Canvas(str(path), pagesize=size)
    text = lines_of(words(22 * 12 * 6, "body"), 12)
    for page in range(6):
        top = size[1] - 50
        canvas.setFont("Times-Roman", 10)
        canvas.drawString(96, top, "2")
        canvas.drawString(130, top, "JURABASE")
        canvas.drawString(560, top, str(page + 1))
        y = top - 36
        if page == 0:
            canvas.setFont("Times-Bold", 12)
            canvas.drawString(96, y, "2.1 Grundlegende Befehle")
            y -= 20
        canvas.setFont("Times-Roman", 10)
        for line in text[page * 22 : page * 22 + 22]:
            canvas.drawString(96, y, line)
            y -= 13.5
        canvas.showPage()
    canvas.save()
    doc = parse_pdf(path, SETTINGS)
    assert all("JURABASE" not in (c.heading or "") for c in doc.chunks)
    assert all("JURABASE" not in c.text for c in doc.chunks)
    assert {c.heading for c in doc.chunks} == {"2.1 Grundlegende Befehle"}
