"""Structure of real papers' first pages, rebuilt with reportlab: titles, headings, front matter.

Each case is a flaw seen on the shared PDF set (an e-mail line chosen as the title, body lines
taken for headings, the title and author lines cut into chunks of a few words).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("reportlab")

from pdf_samples import HEIGHT, PageSpec, body, lines_of, words, write_pdf  # noqa: E402
from reportlab.pdfgen.canvas import Canvas  # noqa: E402

from kb_search.ingest.formats.pdf import parse_pdf  # noqa: E402
from kb_search.models import ChunkSettings  # noqa: E402

SETTINGS = ChunkSettings(max_tokens=200, min_tokens=40)
TITLE = "Layout Analysis for Historical Newspapers"


def paper_front(title_size: float = 15, contact_size: float = 9) -> PageSpec:
    """Title, authors, affiliations and e-mails as LaTeX's llncs class sets them."""
    page: PageSpec = [(72, 80, TITLE, "Helvetica-Bold", title_size)]
    page.append((72, 110, "Ada Lovelace 1, Alan Turing 2, and Grace Hopper 1", "Helvetica", 11))
    page.append((72, 130, "1 Harvard University", "Helvetica", contact_size))
    page.append((72, 142, "{ada,grace}@fas.harvard.edu", "Helvetica", contact_size))
    page.append((72, 154, "2 University of Washington", "Helvetica", contact_size))
    page.append((72, 166, "March 3, 2021", "Helvetica", contact_size))
    return page


def test_title_skips_larger_email_and_affiliation_lines(tmp_path: Path) -> None:
    page = paper_front(title_size=15, contact_size=17)
    page += body(lines_of(words(120, "abs")), top=200, size=10)
    doc = parse_pdf(write_pdf(tmp_path / "paper.pdf", [page]), SETTINGS)
    assert doc.title == TITLE


def test_one_tall_glyph_does_not_make_a_line_large(tmp_path: Path) -> None:
    """A brace from a math font, taller than the text around it, on an e-mail line."""
    path = tmp_path / "brace.pdf"
    canvas = Canvas(str(path))
    canvas.setTitle("")
    for x, y, text, font, size in body(lines_of(words(150, "w")), top=200, size=10):
        canvas.setFont(font, size)
        canvas.drawString(x, HEIGHT - y, text)
    canvas.setFont("Helvetica-Bold", 14)
    canvas.drawString(72, HEIGHT - 80, TITLE)
    text = canvas.beginText(72, HEIGHT - 120)
    text.setFont("Times-Roman", 30)
    text.textOut("(")
    text.setFont("Helvetica", 9)
    text.textOut("see the appendix and the tables that follow it")
    canvas.drawText(text)
    canvas.showPage()
    canvas.save()
    doc = parse_pdf(path, SETTINGS)
    assert doc.title == TITLE
    assert not any(c.heading and "appendix" in c.heading for c in doc.chunks)


def test_generic_first_heading_is_not_the_title(tmp_path: Path) -> None:
    page: PageSpec = [(72, 80, "Contents", "Helvetica-Bold", 18)]
    page += body(lines_of(words(60, "toc")), top=110)
    page.append((72, 300, "Routing Tables in Practice", "Helvetica-Bold", 16))
    page += body(lines_of(words(60, "route")), top=330)
    doc = parse_pdf(write_pdf(tmp_path / "book.pdf", [page]), SETTINGS)
    assert doc.title == "Routing Tables in Practice"


def test_spreadsheet_default_title_field_is_ignored(tmp_path: Path) -> None:
    page: PageSpec = [(72, 80, "Quarterly Sales by Region", "Helvetica-Bold", 16)]
    page += body(lines_of(words(60, "sales")), top=110)
    doc = parse_pdf(write_pdf(tmp_path / "export.pdf", [page], title="Book1"), SETTINGS)
    assert doc.title == "Quarterly Sales by Region"
