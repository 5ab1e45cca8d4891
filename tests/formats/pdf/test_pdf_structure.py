"""Structure of real papers' first pages, rebuilt with reportlab: titles, headings, front matter.

Each case is a flaw seen on the shared PDF set (an e-mail line chosen as the title, body lines
taken for headings, the title and author lines cut into chunks of a few words).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("reportlab")

from reportlab.pdfgen.canvas import Canvas  # noqa: E402

from kb_search.formats.pdf.layout import Line  # noqa: E402
from kb_search.formats.pdf.parse import parse_pdf  # noqa: E402
from kb_search.formats.pdf.structure import heading_level  # noqa: E402
from kb_search.parsed import ChunkSettings  # noqa: E402
from pdf_samples import HEIGHT, PageSpec, body, lines_of, words, write_pdf  # noqa: E402

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


def test_a_title_that_names_a_university_is_kept(tmp_path: Path) -> None:
    page: PageSpec = [(72, 80, "Stanford University Annual Report", "Helvetica-Bold", 18)]
    page.append((72, 110, "1 Department of Physics, Stanford, CA", "Helvetica", 9))
    page += body(lines_of(words(80, "report")), top=140, size=10)
    doc = parse_pdf(write_pdf(tmp_path / "report.pdf", [page]), SETTINGS)
    assert doc.title == "Stanford University Annual Report"


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


# ----------------------------------------------------------------------------- headings


def headings(doc) -> str:
    return " | ".join(c.heading or "" for c in doc.chunks)


def test_bold_sentences_inside_body_text_are_not_headings(tmp_path: Path) -> None:
    bold = "Helvetica-Bold"
    page: PageSpec = [(72, 70, "Notes on Search Tools", bold, 16)]
    page += body(lines_of(words(60, "pre")), top=100, size=10)
    page.append((72, 190, "Here is to the crazy ones. The misfits. The rebels.", bold, 10))
    page.append((72, 203, "and the troublemakers who see things differently", bold, 10))
    page += body(lines_of(words(60, "post")), top=216, size=10)
    doc = parse_pdf(write_pdf(tmp_path / "bold.pdf", [page]), SETTINGS)
    assert "misfits" not in headings(doc) and "troublemakers" not in headings(doc)


def test_date_line_under_the_title_is_not_a_heading(tmp_path: Path) -> None:
    page: PageSpec = [(72, 70, "The Crazy Ones", "Helvetica-Bold", 16)]
    page.append((72, 95, "October 14, 1998", "Helvetica", 12))
    page += body(lines_of(words(120, "poem")), top=120, size=10)
    doc = parse_pdf(write_pdf(tmp_path / "dated.pdf", [page]), SETTINGS)
    assert doc.title == "The Crazy Ones"
    assert "1998" not in headings(doc)


def test_small_capitals_are_a_label_not_a_heading() -> None:
    """Capitals or bold make a heading at the body's size, not in a 7pt caption."""
    label = Line("SOURCE NATIONAL ARCHIVES", 1, 72, 200, 200, 207, 7.0, False, 0)
    assert heading_level(label, 10.0, []) is None
    label.size = 10.0
    assert heading_level(label, 10.0, []) == 1


def test_a_numbered_reference_in_body_type_is_no_heading() -> None:
    """Title case alone makes a numbered body-type line a heading only when it is short: a
    reference list's entry ('2. Australian Institute ... (AIHW), Australian Cancer Incidence')
    headed the last pages of a booklet, while 'C. Linux Code, 1' is a section."""
    reference = "2. Australian Institute of Health and Welfare (AIHW), Australian Cancer Incidence"
    assert heading_level(Line(reference, 1, 72, 200, 500, 212, 10.0, False, 0), 10.0, []) is None
    section = Line("C. Linux Code, 1", 1, 72, 200, 160, 212, 10.0, False, 0)
    assert heading_level(section, 10.0, []) == 1


def test_real_headings_still_make_the_chain(tmp_path: Path) -> None:
    page: PageSpec = [(72, 70, "Indexing Handbook", "Helvetica-Bold", 18)]
    page.append((72, 100, "Getting Started", "Helvetica-Bold", 10))
    page += body(lines_of(words(70, "start")), top=115, size=10)
    page.append((72, 230, "EXAMPLES", "Helvetica", 10))
    page += body(lines_of(words(70, "ex")), top=245, size=10)
    doc = parse_pdf(write_pdf(tmp_path / "handbook.pdf", [page]), SETTINGS)
    assert {c.heading for c in doc.chunks if "start0" in c.text} == {"Getting Started"}
    assert {c.heading for c in doc.chunks if "ex0" in c.text} == {"EXAMPLES"}


# ----------------------------------------------------------------------------- front matter


def test_page_one_front_matter_is_glued_to_the_abstract(tmp_path: Path) -> None:
    page = paper_front()
    abstract = "Abstract. We study how layout models read old newspapers."
    page.append((72, 200, abstract, "Helvetica", 10))
    page += body(lines_of(words(40, "abs")), top=213, size=10)
    page.append((72, 290, "1 Introduction", "Helvetica-Bold", 12))
    page += body(lines_of(words(150, "intro")), top=310, size=10)
    doc = parse_pdf(write_pdf(tmp_path / "paper.pdf", [page]), SETTINGS)
    assert doc.title == TITLE
    assert all(len(c.text.split()) >= 8 for c in doc.chunks)
    first = doc.chunks[0].text
    assert "Ada Lovelace" in first and "Harvard University" in first and "abs0" in first


def test_box_labels_and_bibliography_lines_are_not_headings(tmp_path: Path) -> None:
    """Fails on the old code: a bold 'Warning' headed the text after it."""
    draws = [(72, 70, "Getting started", "Helvetica-Bold", 16)]
    draws += body(lines_of(words(60)), top=100)
    draws += [(72, 200, "Warning", "Helvetica-Bold", 11)]
    draws += body(lines_of(words(40, "warn")), top=220)
    draws += [(72, 320, "[12] A. Author and B. Writer", "Helvetica-Bold", 11)]
    draws += body(lines_of(words(40, "ref")), top=340)
    doc = parse_pdf(write_pdf(tmp_path / "box.pdf", [draws], title="Setup guide"), SETTINGS)
    assert {c.heading for c in doc.chunks} == {"Getting started"}


def test_listings_do_not_set_the_body_size() -> None:
    """Fails on the old code: a manual with more code (set smaller, fixed-pitch) than prose
    took the code's size for the body's, so short lines of prose were 'larger than the body'
    and one headed the chunks after it (parallel.pdf: 'It is recommended, that you first
    read the complete section Usage to understand')."""
    from kb_search.formats.pdf.layout import Page
    from kb_search.formats.pdf.structure import body_size

    def line(text: str, size: float, mono: bool) -> Line:
        return Line(text, 1, 72, 0, 400, size, size, False, 0, mono=mono)

    prose = [line("Keep the reader informed, then try this small example", 9.0, False)] * 10
    code = [line("\\setlength{\\columnsep}{10pt} % the gap between the columns", 7.5, True)] * 30
    assert body_size([Page(1, 842, prose + code)]) == 9.0
    assert body_size([Page(1, 842, code)]) == 7.5  # all fixed-pitch: a screenplay in Courier


def test_dot_leaders_are_found_in_linear_time() -> None:
    """A paragraph of blanks (a hostile PDF's line) is no cubic search: the old pattern, two
    runs of blanks around an optional bar, took 3 s on 2,000 spaces (cubic: hours on 20,000)."""
    import time

    from kb_search.formats.pdf.structure import LEADER_RE

    assert LEADER_RE.sub(" \u2026 ", "Introduction . . . . . . 5") == "Introduction \u2026 5"
    assert LEADER_RE.sub(" \u2026 ", "Tables | . . . . . | 7") == "Tables \u2026  7"
    started = time.perf_counter()
    for text in (" " * 2_500 + "x", " " * 1_000 + ".||" + " " * 1_000 + "....", "  .  |" * 5_000):
        LEADER_RE.sub(" \u2026 ", text)
    assert time.perf_counter() - started < 1.0


def test_an_identifier_title_is_told_in_linear_time() -> None:
    """'905_Precinct_NoOU' is an identifier, not a title; a hostile metadata title of 40
    'ab_' and a '!' took the old nested pattern hours (exponential)."""
    import time

    from kb_search.formats.pdf.structure import _meaningful_title

    assert not _meaningful_title("905_Precinct_NoOU", Path("x.pdf"))
    assert _meaningful_title("A Study of Precincts", Path("x.pdf"))
    assert _meaningful_title("_private notes", Path("x.pdf"))
    started = time.perf_counter()
    assert _meaningful_title("ab_" * 24 + "!", Path("x.pdf"))
    assert time.perf_counter() - started < 1.0
