"""Titles and slide decks seen wrong on 50 PDFs no one had used (producers other than pdfTeX:
LuaTeX, XeTeX, dvipdfm, Ghostscript, Acrobat Distiller, a Keynote-era Quartz export): each test
rebuilds one case in typographic terms and fails on the code before its fix."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

import pytest

pytest.importorskip("reportlab")

import test_pdf_titles  # noqa: E402
from reportlab.pdfgen.canvas import Canvas  # noqa: E402
from test_pdf_titles import SETTINGS  # noqa: E402

from kb_search.formats.pdf.parse import parse_pdf  # noqa: E402
from pdf_samples import PageSpec, body, lines_of, words, write_pdf  # noqa: E402

# the title pages here run down to y 340: the body starts below them
title_of = partial(test_pdf_titles.title_of, body_top=400)


def test_a_title_beside_a_contents_box_keeps_its_second_line(tmp_path: Path) -> None:
    """2up-doc: the title's two lines sit left of a contents box whose entries fall between
    them, top to bottom; the second line was cut off (the entry beside it came next)."""
    page: PageSpec = [
        (400, 60, "Contents", "Helvetica-Bold", 16),
        (400, 84, "1 Usage 2", "Helvetica-Bold", 11),
        (60, 100, "Documentation for 2up.tex:", "Times-Roman", 19.6),
        (400, 106, "2 Comparison with other methods", "Helvetica-Bold", 11),
        (60, 121, "Two-up printing for Generic TeX", "Times-Roman", 19.6),
        (400, 128, "3 A warning about fonts", "Helvetica-Bold", 11),
        (110, 160, "Timothy Van Zandt", "Times-Roman", 11),
    ]
    assert title_of(tmp_path, page) == "Documentation for 2up.tex: Two-up printing for Generic TeX"


def test_a_title_ending_on_a_colon_keeps_its_smaller_subtitle(tmp_path: Path) -> None:
    """envlab: 'Printing Envelopes and Labels in LaTeX:' over 'EnvLab Package', a size
    smaller: the title was cut at the colon."""
    page: PageSpec = [
        (100, 180, "Printing Envelopes and Labels in LaTeX:", "Times-Roman", 15.5),
        (180, 199, "EnvLab Package", "Times-Roman", 12),
        (200, 240, "Boris Veytsman", "Times-Roman", 12),
    ]
    assert title_of(tmp_path, page) == "Printing Envelopes and Labels in LaTeX: EnvLab Package"


def test_a_title_stacked_in_two_sizes_is_read_whole(tmp_path: Path) -> None:
    """tug2005: a talk's title page sets 'PRACTICAL USE OF' and 'IN' small between larger
    'SPECIAL', 'COMMANDS' and 'DVIPDFMx'; the title was 'SPECIAL COMMANDS'."""
    page: PageSpec = [
        (150, 60, "PRACTICAL USE OF", "Helvetica-Bold", 30),
        (150, 125, "SPECIAL", "Helvetica-Bold", 54),
        (150, 185, "COMMANDS", "Helvetica-Bold", 54),
        (220, 225, "IN", "Helvetica-Bold", 30),
        (150, 285, "DVIPDFMx", "Helvetica-Bold", 54),
        (150, 340, "Jin-Hwan Cho", "Helvetica", 20),
    ]
    assert title_of(tmp_path, page) == "PRACTICAL USE OF SPECIAL COMMANDS IN DVIPDFMx"


def test_a_one_word_title_line_is_the_end_of_the_line_above(tmp_path: Path) -> None:
    """expdlist: 'EXPDLIST - an Expanded description' over 'Environment', set larger and
    bold; the title was 'Environment'."""
    page: PageSpec = [
        (100, 180, "EXPDLIST - an Expanded description", "Times-Roman", 11),
        (200, 200, "Environment", "Times-Bold", 15.5),
        (180, 235, "Rainer Hulse and Wolfgang Kaspar", "Times-Roman", 11),
    ]
    assert title_of(tmp_path, page) == "EXPDLIST - an Expanded description Environment"
    page += body(lines_of(words(150, "w")), top=400, size=10)
    doc = parse_pdf(write_pdf(tmp_path / "again.pdf", [page]), SETTINGS)
    assert all(c.heading is None for c in doc.chunks)  # the title's lines and authors head none


def test_a_german_title_wrapped_after_von_goes_on(tmp_path: Path) -> None:
    """robustcommand: 'Das robustcommand-Package - Erweiterungen von' over the command it
    extends, a size smaller; the title ended on 'von'."""
    page: PageSpec = [
        (100, 180, "Das robustcommand-Package - Erweiterungen von", "Times-Roman", 15.4),
        (190, 198, "DeclareRobustCommand", "Times-Roman", 13.4),
        (250, 235, "Paul Ebermann", "Times-Roman", 11),
    ]
    expected = "Das robustcommand-Package - Erweiterungen von DeclareRobustCommand"
    assert title_of(tmp_path, page) == expected


def test_a_utf8_title_field_read_as_single_bytes_is_repaired(tmp_path: Path) -> None:
    """beamerdarkthemes: the Title field holds UTF-8 bytes without a byte order mark, read as
    PDFDocEncoding: 'Le dahut - PrÃ©cis de zoologie' for 'Précis'."""
    page: PageSpec = [(72, 100, "Le dahut", "Helvetica-Bold", 20)]
    field = "Le dahut - Pr\u00c3\u00a9cis de zoologie avec trait\u00c3\u00a9 de chasse"
    assert title_of(tmp_path, page, title=field) == (
        "Le dahut - Pr\u00e9cis de zoologie avec trait\u00e9 de chasse"
    )


def test_a_title_field_with_tex_source_in_it_gives_way_to_page_one(tmp_path: Path) -> None:
    """easyformat: '\\\\[.5em]' in the title left 'easyformat [.5em] _the_ manual ...' in the
    Title field."""
    page: PageSpec = [
        (200, 100, "easyformat", "Times-Roman", 20),
        (150, 130, "the manual for the 2017/06/03 version", "Times-Roman", 12),
    ]
    field = "easyformat [.5em] _the_ manual for the 2017/06/03 version (v1.4.0)"
    assert title_of(tmp_path, page, title=field) == "easyformat"


def test_an_arrow_to_a_bar_after_the_title_is_its_footnote_mark(tmp_path: Path) -> None:
    """texshade: a symbol font maps its asterisk to U+21E4: 'The TEXshade package⇤'."""
    page: PageSpec = [(72, 100, "Abstract", "Helvetica-Bold", 12)]
    field = "The TeXshade package\u21e4"
    assert title_of(tmp_path, page, title=field) == "The TeXshade package"


SLIDE = (364, 273)
SECTIONS = ["Overview", "Methods", "Results", "Outlook"]


def test_a_decks_sidebar_of_sections_is_no_slides_text(tmp_path: Path) -> None:
    """beamerdarkthemes' sidebar variants: the sections listed down the left of every slide
    were read into each slide's text, before its frame title."""
    path = tmp_path / "sidebar.pdf"
    canvas = Canvas(str(path), pagesize=SLIDE)
    canvas.setTitle("A talk with a sidebar")
    for i in range(6):
        canvas.setFont("Helvetica", 6)
        for k, section in enumerate(SECTIONS):
            canvas.drawString(6, SLIDE[1] - 80 - 12 * k, section)
        canvas.setFont("Helvetica-Bold", 14)
        canvas.drawString(90, SLIDE[1] - 24, f"Frame number {i}")
        canvas.setFont("Helvetica", 10)
        for k in range(3):
            canvas.drawString(90, SLIDE[1] - 80 - 16 * k, f"point{i}x{k} of this slide here")
        canvas.showPage()
    canvas.save()
    doc = parse_pdf(path, SETTINGS)
    text = " ".join(c.text for c in doc.chunks)
    assert "point3x1" in text
    assert not any(section in text for section in SECTIONS)
    for i in range(1, 6):
        (chunk,) = [c for c in doc.chunks if f"point{i}x0" in c.text]
        assert chunk.heading == f"Frame number {i}"


def test_a_dense_deck_exported_at_screen_size_is_a_deck(tmp_path: Path) -> None:
    """tug2005: slides exported at 1024 x 768 points, two columns of text each, were read as
    pages of a book (wider than a deck was thought to be, more lines than a slide was thought
    to hold): frames ran together under one frame's title."""
    size = (1024, 768)
    path = tmp_path / "talk.pdf"
    canvas = Canvas(str(path), pagesize=size)
    canvas.setTitle("Special commands")
    for i in range(5):
        canvas.setFont("Helvetica-Bold", 44)
        canvas.drawString(200, size[1] - 70, f"Common Specials {i}")
        canvas.setFont("Helvetica", 27)
        for k in range(16):
            y = size[1] - 150 - 36 * k
            canvas.drawString(40, y, f"left{i}x{k} words")
            canvas.drawString(560, y, f"right{i}x{k} words")
        canvas.showPage()
    canvas.save()
    doc = parse_pdf(path, SETTINGS)
    for i in range(1, 5):
        chunks = [c for c in doc.chunks if f"left{i}x" in c.text or f"right{i}x" in c.text]
        assert chunks and all(c.heading == f"Common Specials {i}" for c in chunks), i
        assert all(c.page_start == c.page_end == i + 1 for c in chunks)


def test_a_letters_e_mail_line_heads_nothing(tmp_path: Path) -> None:
    """cv's ApplicationLetter: the addressee's 'E-Mail: application@employer.com', set larger
    than the letter's text, headed every chunk of the letter."""
    page: PageSpec = [
        (72, 60, "Philipp Maier", "Helvetica", 16),
        (72, 140, "Employer Research", "Helvetica", 10),
        (72, 153, "London", "Helvetica", 10),
        (72, 170, "E-Mail: application@employer.com", "Helvetica", 13.5),
        (72, 290, "Application for a position", "Helvetica-Bold", 11),
    ]
    page += body(lines_of(words(200, "letter")), top=320, size=10)
    doc = parse_pdf(write_pdf(tmp_path / "letter.pdf", [page]), SETTINGS)
    assert all("@" not in (c.heading or "") for c in doc.chunks)
    assert any("letter0" in c.text for c in doc.chunks)


def test_a_two_ideograph_heading_names_the_document(tmp_path: Path) -> None:
    """hitreport's scan-statement: '声 明' (a statement), set larger atop the page, is its
    title; three letters in a row were needed, and the file name was taken."""
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    page: PageSpec = [(270, 150, "声 明", "STSong-Light", 15)]
    line = "本人郑重声明所呈交的学位论文是本人在导师指导下独立进行研究"
    page += [(90, 200 + 20 * i, line, "STSong-Light", 12) for i in range(4)]
    assert parse_pdf(write_pdf(tmp_path / "statement.pdf", [page]), SETTINGS).title == "声 明"


def test_glyphs_of_latexs_picture_fonts_are_no_text(tmp_path: Path) -> None:
    """elzcards-examples: the corners a picture draws with LaTeX's circle font (its arcs are
    the font's 's' and 'r') were read as 's s' and 'r r', and headed the cards' chunks."""
    from pdf_samples import write_objects

    lines = lines_of(words(120, "card"))
    text = b"".join(b"(%s) Tj 0 -14 Td " % line.encode() for line in lines)
    content = (
        b"BT /F2 10 Tf 100 760 Td (s) Tj 200 0 Td (s) Tj ET "
        b"BT /F1 10 Tf 72 700 Td " + text + b"ET "
        b"BT /F2 10 Tf 100 400 Td (r) Tj 200 0 Td (r) Tj ET"
    )
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R /F2 6 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /ABCDEF+LCIRCLE10 >>",
    ]
    doc = parse_pdf(write_objects(tmp_path / "cards.pdf", objects), SETTINGS)
    text_read = " ".join(c.text for c in doc.chunks)
    assert "card0" in text_read and "card112" in text_read
    assert re.search(r"(?<!\w)(s s|r r)(?!\w)", text_read) is None
    assert all(c.heading in (None, "") for c in doc.chunks)
