"""Titles as a reader sees them, for PDFs whose Title field is missing or unusable: each case
is a title seen wrong on the PDF corpus (a title cut at its line break, a subtitle alone, a
section heading or a file-name-like field taken for the title)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("reportlab")

from reportlab.pdfgen.canvas import Canvas  # noqa: E402

from kb_search.formats.pdf.parse import parse_pdf  # noqa: E402
from kb_search.parsed import ChunkSettings  # noqa: E402
from pdf_samples import HEIGHT, PageSpec, body, lines_of, words, write_pdf  # noqa: E402

SETTINGS = ChunkSettings(max_tokens=200, min_tokens=40)


def title_of(
    tmp_path: Path, page: PageSpec, title: str | None = None, body_top: float = 330
) -> str:
    """The title kb gives a one-page PDF of `page` over a body of text from `body_top` down."""
    page = page + body(lines_of(words(150, "w")), top=body_top, size=10)
    return parse_pdf(write_pdf(tmp_path / "doc.pdf", [page], title=title), SETTINGS).title


def test_a_title_wrapped_after_and_keeps_its_second_line(tmp_path: Path) -> None:
    """gb4e-doc: the second line is set a size smaller, the first ends on 'and' and a mark."""
    page: PageSpec = [
        (72, 160, "Preliminary documentation for gb4e.sty\u2217 and", "Times-Roman", 17),
        (72, 185, "cgloss4e.sty", "Times-Roman", 16),
        (72, 225, "Hans-Peter Kolb", "Times-Roman", 12),
    ]
    assert title_of(tmp_path, page) == "Preliminary documentation for gb4e.sty and cgloss4e.sty"


def test_a_footnote_mark_inside_the_title_is_dropped(tmp_path: Path) -> None:
    page: PageSpec = [
        (72, 160, "The dramatist package\u2217", "Times-Roman", 17),
        (72, 180, "User Guide", "Times-Roman", 17),
    ]
    assert title_of(tmp_path, page) == "The dramatist package User Guide"


def test_of_two_lines_in_the_largest_size_the_upper_starts_the_title(tmp_path: Path) -> None:
    """ffslides: the subtitle's glyphs measure a little taller than the title's."""
    page: PageSpec = [
        (72, 60, "ffslides: freeform slides and more", "Helvetica", 30),
        (72, 200, "based on the article class", "Helvetica", 31.5),
    ]
    assert title_of(tmp_path, page) == "ffslides: freeform slides and more"


@pytest.mark.parametrize(
    "version", ["Version 1.2", "v1.10, 29.06.2003", "Release 2.0a (2021/04/01)"]
)
def test_a_version_line_set_larger_than_the_title_is_not_the_title(
    tmp_path: Path, version: str
) -> None:
    """getfiledate-guide: the version under the package's name is set a size larger."""
    page: PageSpec = [
        (72, 140, "The getfiledate Package", "Times-Roman", 15),
        (72, 170, version, "Times-Roman", 17),
        (72, 210, "Ahmed Musa", "Times-Roman", 12),
    ]
    assert title_of(tmp_path, page) == "The getfiledate Package"


def test_a_numbered_section_heading_is_not_the_title(tmp_path: Path) -> None:
    """A page cut out of a report starts with '4 Conclusions'."""
    page: PageSpec = [(72, 60, "4 Conclusions", "Helvetica-Bold", 16)]
    assert title_of(tmp_path, page) == "doc"


def test_a_chapter_label_and_its_name_make_the_title(tmp_path: Path) -> None:
    page: PageSpec = [
        (72, 150, "Chapter 1", "Helvetica-Bold", 24),
        (72, 210, "What is Earth Science?", "Helvetica-Bold", 24),
    ]
    assert title_of(tmp_path, page) == "Chapter 1 What is Earth Science?"


def test_a_statistic_in_large_figures_is_not_the_title(tmp_path: Path) -> None:
    page: PageSpec = [
        (72, 60, "eastern mediterranean", "Helvetica-Bold", 26),
        (72, 170, "1st", "Helvetica-Bold", 58),
    ]
    assert title_of(tmp_path, page) == "eastern mediterranean"


@pytest.mark.parametrize(
    "field", ["odf_presentation.odp", "905_Precinct_NoOU", "PowerPoint Presentation"]
)
def test_file_names_and_defaults_in_the_title_field_are_ignored(tmp_path: Path, field: str) -> None:
    page: PageSpec = [(72, 60, "Precinct Bulletin for the General Election", "Helvetica", 18)]
    assert title_of(tmp_path, page, title=field) == "Precinct Bulletin for the General Election"


def test_the_outline_names_a_document_whose_first_page_has_no_title(tmp_path: Path) -> None:
    path = tmp_path / "lorem.pdf"
    canvas = Canvas(str(path))
    for heading in ("Ipsum labore ut consectetur", "Quiquia adipisci numquam"):
        for x, y, text, font, size in body(lines_of(words(200, heading[:3])), top=80, size=10):
            canvas.setFont(font, size)
            canvas.drawString(x, HEIGHT - y, text)
        canvas.bookmarkPage(heading)
        canvas.addOutlineEntry(heading, heading, level=0)
        canvas.showPage()
    canvas.save()
    assert parse_pdf(path, SETTINGS).title == "Ipsum labore ut consectetur"


def chunks_of(tmp_path: Path, page: PageSpec, title: str | None = None) -> list:
    return parse_pdf(write_pdf(tmp_path / "doc.pdf", [page], title=title), SETTINGS).chunks


def test_the_title_and_the_authors_under_it_head_no_chain(tmp_path: Path) -> None:
    """The Title field lacks the printed footnote mark; the authors' line is set large."""
    page: PageSpec = [
        (72, 80, "Adjusting Margins for Multicolumn Output\u2217", "Times-Roman", 17),
        (72, 110, "Boris Veytsman", "Times-Roman", 12),
        (72, 140, "Motivation", "Times-Bold", 13),
    ]
    page += body(lines_of(words(120, "intro")), top=160, size=10)
    chunks = chunks_of(tmp_path, page, title="Adjusting Margins for Multicolumn Output")
    assert {c.heading for c in chunks if "intro0" in c.text} == {"Motivation"}
    assert not any("Veytsman" in (c.heading or "") for c in chunks)
    assert not any("Adjusting" in (c.heading or "") for c in chunks)


def test_a_bold_heading_under_the_title_stays_a_heading(tmp_path: Path) -> None:
    page: PageSpec = [
        (72, 80, "Search Engine Design Notes", "Helvetica", 20),
        (72, 120, "Overview", "Helvetica-Bold", 14),
    ]
    page += body(lines_of(words(120, "over")), top=140, size=10)
    assert {c.heading for c in chunks_of(tmp_path, page) if "over0" in c.text} == {"Overview"}


def test_contents_entries_are_no_headings_and_lose_their_leaders(tmp_path: Path) -> None:
    leaders = " ." * 30
    page: PageSpec = [(72, 80, "Routing Tables in Practice", "Helvetica-Bold", 20)]
    page.append((72, 120, "Contents", "Helvetica-Bold", 14))
    for i, name in enumerate(["Package Options", "Sectioning Commands", "Stage directions"]):
        page.append((72, 140 + 14 * i, f"2.{i + 1} {name}{leaders} {i + 2}", "Helvetica-Bold", 11))
    page.append((72, 200, "1 Introduction", "Helvetica-Bold", 14))
    page += body(lines_of(words(120, "intro")), top=220, size=10)
    chunks = chunks_of(tmp_path, page)
    toc = next(c for c in chunks if "Package Options" in c.text)
    assert toc.heading == "Contents"
    assert "2.1 Package Options \u2026 2" in toc.text and ". . ." not in toc.text
    assert {c.heading for c in chunks if "intro0" in c.text} == {"1 Introduction"}


def test_a_footnote_mark_before_a_dash_inside_the_title_is_dropped(tmp_path: Path) -> None:
    """substr: the package name carries the mark, a dash goes on to the title's rest."""
    page: PageSpec = [(72, 160, "substr.sty\u2217\u2014Substring Functions", "Times-Roman", 17)]
    assert title_of(tmp_path, page) == "substr.sty\u2014Substring Functions"


def test_a_tex_length_at_the_head_of_the_title_field_is_dropped(tmp_path: Path) -> None:
    """familytree-ja: '\\\\[1ex]' in the title left '=1ex' before the package's name."""
    page: PageSpec = [(72, 160, "familytree package v3.1", "Times-Roman", 17)]
    field = "=1exfamilytree package v3.1"
    assert title_of(tmp_path, page, title=field) == "familytree package v3.1"


def test_a_heading_below_the_abstract_is_not_the_title(tmp_path: Path) -> None:
    """leftidx: 'Copyright', a section under the contents box, measures taller than the title
    (its glyphs reach lower); the title is set above 'Abstract'."""
    page: PageSpec = [
        (72, 100, "The leftidx package\u2217", "Times-Roman", 17),
        (72, 130, "Harald Harders", "Times-Roman", 12),
        (72, 160, "Abstract", "Times-Bold", 10),
        (72, 180, "This package enables left subscripts and superscripts.", "Times-Roman", 10),
        (72, 300, "Copyright", "Times-Bold", 19),
    ]
    assert title_of(tmp_path, page, title="/home/rf10/leftidx.dvi") == "The leftidx package"


def test_a_contents_entry_with_its_page_is_not_the_title(tmp_path: Path) -> None:
    """mtc-add: page 1 is the contents, whose first entry is 'Contents 1'."""
    page: PageSpec = [
        (72, 80, "Contents", "Times-Bold", 20),
        (72, 120, "Contents 1", "Times-Bold", 14),
        (72, 140, "List of Figures 2", "Times-Bold", 14),
    ]
    title = title_of(tmp_path, page)
    assert "Contents" not in title and "List of" not in title


def test_under_a_chapter_label_the_chapter_name_heads_its_text(tmp_path: Path) -> None:
    """sample-idx-letter: 'Chapter 1' over 'Sample', set larger; 'Sample' is also the title.
    Its text is under 'Sample', not under a bare 'Chapter 1'."""
    page: PageSpec = [
        (72, 80, "Chapter 1", "Helvetica-Bold", 18),
        (72, 120, "Sample", "Helvetica-Bold", 22),
    ]
    page += body(lines_of(words(120, "sam")), top=150, size=10)
    chunks = chunks_of(tmp_path, page)
    assert {c.heading for c in chunks if "sam0" in c.text} == {"Sample"}


def test_a_name_with_a_capital_v_and_a_number_is_no_version_line(tmp_path: Path) -> None:
    """'V8' names an engine: 'V8 Engine Internals 2019' was read as a release line ('v8' and a
    year) and never taken for the title; 'v1.10, 29.06.2003' still is a release line."""
    page: PageSpec = [(72, 160, "V8 Engine Internals 2019", "Times-Roman", 17)]
    assert title_of(tmp_path, page) == "V8 Engine Internals 2019"
    page = [
        (72, 140, "The getfiledate Package", "Times-Roman", 15),
        (72, 170, "v1.10, 29.06.2003", "Times-Roman", 17),
    ]
    assert title_of(tmp_path, page) == "The getfiledate Package"


@pytest.mark.parametrize("date", ["Décembre 2009", "Gennaio 2022", "Août 2015"])
def test_a_date_in_french_or_italian_set_larger_than_the_title_is_not_the_title(
    tmp_path: Path, date: str
) -> None:
    """Page 1 and the heading checks share one list of month names: 'décembre', 'gennaio' were
    in the heading checks' list or in neither, so page 1 took such a date for the title."""
    page: PageSpec = [
        (72, 140, "Le paquetage exemple", "Times-Roman", 15),
        (72, 180, date, "Times-Roman", 24),
    ]
    assert title_of(tmp_path, page) == "Le paquetage exemple"
