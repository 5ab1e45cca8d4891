"""Headings never from a body sentence: each test rebuilds, in typographic terms, a kind of
false or broken heading seen on PDFs never used before (a manual whose every font reports
bold, a paragraph of a scaled font measured large, a date, authors set side by side, a
heading broken inside a word, appendices after numbered chapters, a numbered list inside a
slide)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("reportlab")

from reportlab.pdfgen.canvas import Canvas  # noqa: E402

from kb_search.formats.pdf.layout import Line, Page  # noqa: E402
from kb_search.formats.pdf.outline import Entry, apply_outline  # noqa: E402
from kb_search.formats.pdf.parse import parse_pdf  # noqa: E402
from kb_search.formats.pdf.structure import heading_level, paragraphs  # noqa: E402
from kb_search.parsed import ChunkSettings  # noqa: E402
from pdf_samples import lines_of, words, write_pdf  # noqa: E402

SETTINGS = ChunkSettings(max_tokens=200, min_tokens=40)
BOLD = "Helvetica-Bold"


def _line(text: str, y: float, size: float, bold: bool = False, **kw: object) -> Line:
    x0 = float(kw.pop("x0", 72))  # type: ignore[arg-type]
    return Line(text, 1, x0, y, x0 + 6 * len(text), y + size, size, bold, 0, **kw)  # type: ignore[arg-type]


def _headings(lines: list[Line], body: float, title: str = "A Manual") -> list[tuple[str, str]]:
    paras = paragraphs([Page(1, 842, lines, 595)], body, title)
    return [(p.text, p.chain or "") for p in paras if p.heading_level is not None]


def test_short_lines_of_a_body_set_all_in_bold_are_not_headings(tmp_path: Path) -> None:
    """Fails on the old code: a manual whose every font reports bold made each short body line
    ('To use Dvips at its simplest, simply type', 'For example:') a heading."""
    prose = lines_of(words(240, "w"), 12)  # 20 full lines: three make a page of prose
    page = [(72, 60, "3 Invoking the Driver", BOLD, 17)]
    page += [(72, 90 + i * 14, line, BOLD, 11) for i, line in enumerate(prose)]
    page += [(72, 90 + len(prose) * 14, "To use the driver at its simplest, simply type", BOLD, 11)]
    page += [(72, 104 + len(prose) * 14 + i * 14, ln, BOLD, 11) for i, ln in enumerate(prose)]
    second = [(72, 60, "3.1 Basic usage", BOLD, 14)]
    second += [(72, 90 + i * 14, line, BOLD, 11) for i, line in enumerate(prose)]
    doc = parse_pdf(write_pdf(tmp_path / "bold.pdf", [page, second], "Driver"), SETTINGS)
    chains = {c.heading for c in doc.chunks}
    assert "3 Invoking the Driver > 3.1 Basic usage" in chains
    assert not any("simply type" in (h or "") for h in chains), chains


def test_a_date_is_no_heading() -> None:
    """Fails on the old code: '4. Februar 2006' read as section 4 and 'Imprimé le 13 avril
    2009' in bold under a title as a heading."""
    sizes = [17.2, 15.3, 12.7]
    assert heading_level(_line("4. Februar 2006", 276, 12.74), 10.5, sizes) is None
    assert heading_level(_line("Imprimé le 13 avril 2009", 262, 11.9, True), 10.0, sizes) is None
    assert heading_level(_line("Updated 1997/12/29", 262, 11.9, True), 10.0, sizes) is None
    assert heading_level(_line("4. Results", 276, 12.74), 10.5, sizes) == 1
    assert heading_level(_line("Version 2.1, 13 April 2009", 262, 11, True), 10.0, sizes) == 4


def test_a_heading_broken_inside_a_word_goes_on_below() -> None:
    """Fails on the old code: '6.1 ... de mémorisa-' over 'tion' made two headings, the
    second a child of the first."""
    lines = [
        _line("Le paquet ESIEEcv", 60, 15.4),
        *[_line(t, 80 + i * 12, 10.0) for i, t in enumerate(lines_of(words(20), 10))],
        _line("6 Le code le moins utile", 100, 12.9, True),
        _line("6.1 Définitions des longueurs et des variables de mémorisa-", 140, 10.8, True),
        _line("tion", 154, 10.8, True, x0=102),
        *[_line(t, 180 + i * 12, 10.0) for i, t in enumerate(lines_of(words(40), 10))],
    ]
    heads = _headings(lines, 10.0)
    assert heads[-1] == (
        "6.1 Définitions des longueurs et des variables de mémorisation",
        "6 Le code le moins utile > 6.1 Définitions des longueurs et des variables de mémorisation",
    )


def test_an_appendix_heading_matches_its_bookmark_and_ends_the_chapter_before() -> None:
    """Fails on the old code: 'Appendix A Reporting Bugs' did not match the bookmark 'Reporting
    Bugs', so 'B.1 ...' was chained under the last numbered chapter, '10 Installing Bash'."""
    lines = [
        _line("10 Installing Bash", 100, 15.3, True),
        _line("10.8 Optional Features", 140, 12.7, True),
        _line("Appendix A Reporting Bugs", 300, 15.3, True),
        _line("B.1 Implementation Differences", 400, 12.7, True),
    ]
    entries = [
        Entry(1, 1, "10installingbash", "installingbash", "10 Installing Bash"),
        Entry(1, 2, "108optionalfeatures", "optionalfeatures", "10.8 Optional Features"),
        Entry(1, 1, "reportingbugs", "reportingbugs", "Reporting Bugs"),
        Entry(1, 2, "b1implementationdifferences", "implementationdifferences", "B.1 ..."),
    ]
    page = Page(1, 842, lines, 595)
    assert apply_outline([page], entries)
    assert [ln.heading_level for ln in lines] == [1, 2, 1, 2]


def test_a_subsection_of_another_series_leaves_the_numbered_chapter() -> None:
    """Fails on the old code: without its appendix heading recognised, 'B.1 ...' stayed
    under '10 Installing Bash'; '10.8 ...' stays under it."""
    lines = [
        _line("10 Installing Bash", 100, 15.3, True),
        _line("10.8 Optional Features", 140, 12.7, True),
        *[_line(t, 170 + i * 12, 9.5) for i, t in enumerate(lines_of(words(40), 10))],
        _line("B.1 Implementation Differences", 300, 12.7, True),
    ]
    heads = dict(_headings(lines, 9.5))
    assert heads["10.8 Optional Features"] == "10 Installing Bash > 10.8 Optional Features"
    assert heads["B.1 Implementation Differences"] == "B.1 Implementation Differences"


def test_a_paragraph_measured_large_but_set_at_the_body_pitch_is_no_heading() -> None:
    """Fails on the old code: lines of a scaled font measured at 13.3pt, stacked 12pt apart
    like the body around them, became headings (a 13pt line needs 13pt to the next)."""
    texts = [
        "et consœurs : elle admet une forme étoilée selon que le caractère",
        "ou non des arguments longs (c.-à-d. un argument pourra comporter une",
        "un argument optionnel qui est la valeur optionnelle du premier argument",
        "Suite à quoi le caractère actif pourra être utilisé dans les arguments",
    ]
    lines = [_line("2 Utilisation", 80, 12.6, True)]
    lines += [_line(t, 120 + i * 12, 13.27) for i, t in enumerate(texts[:2])]
    lines += [_line("paragraphe) ; ensuite vient le caractère actif,", 144, 7.3)]
    lines += [_line(t, 170 + i * 12, 13.27) for i, t in enumerate(texts[2:])]
    lines += [_line(t, 200 + i * 10, 7.3) for i, t in enumerate(lines_of(words(60), 10))]
    assert [h for h, _ in _headings(lines, 7.5)] == ["2 Utilisation"]


def test_a_block_set_larger_than_the_body_is_no_run_of_headings() -> None:
    """Fails on the old code: a syntax block in a larger type, cut by a fixed-pitch line,
    gave runs of three headings each."""
    lines = [_line("2 Syntax", 60, 12.6, True)]
    for i in range(7):
        text = f"[default value of argument {i}]{{definition}}"
        lines.append(_line(text, 100 + i * 14, 8.8, mono=(i == 3)))
    lines += [_line(t, 210 + i * 10, 7.3) for i, t in enumerate(lines_of(words(60), 10))]
    assert [h for h, _ in _headings(lines, 7.5)] == ["2 Syntax"]


def test_authors_and_affiliations_side_by_side_under_the_title_are_no_headings() -> None:
    """Fails on the old code: two authors' affiliations set in bold side by side under the
    title became the heading of the first pages."""
    lines = [
        _line("The Curriculum Package", 100, 15.4),
        _line("Institut Gaspard Monge Valeo Borg", 140, 11.9, True, cells=2),
        _line("Université de Marne-la-Vallée Karlsruhe", 154, 11.9, True, cells=2),
        *[_line(t, 200 + i * 12, 10.0) for i, t in enumerate(lines_of(words(40), 10))],
        _line("1 Introduction", 300, 12.9, True),
        *[_line(t, 320 + i * 12, 10.0) for i, t in enumerate(lines_of(words(40), 10))],
    ]
    assert [h for h, _ in _headings(lines, 10.0, "The Curriculum Package")] == ["1 Introduction"]


def test_a_numbered_list_inside_a_slide_heads_no_later_slide(tmp_path: Path) -> None:
    """Fails on the old code: a numbered list set in the body of one frame ('1. Statement')
    outranked the frame titles and headed every later slide."""
    slide = (364, 273)
    path = tmp_path / "deck.pdf"
    canvas = Canvas(str(path), pagesize=slide)
    canvas.setTitle("A dark theme")
    canvas.setFont("Helvetica", 10)
    canvas.drawString(60, 130, "a talk")
    canvas.showPage()
    for n, title in enumerate(["Columns", "Table", "Theorem", "Figure"]):
        canvas.setFont(BOLD, 17)
        canvas.drawString(12, slide[1] - 24, title)
        canvas.setFont("Helvetica", 11)
        points = ["1. Statement", "2. Explanation"] if n == 0 else []
        points += [f"{title.lower()}{i} point of the frame" for i in range(2)]
        for i, point in enumerate(points):
            canvas.drawString(30, slide[1] - 90 - i * 16, point)
        canvas.showPage()
    canvas.setFont("Helvetica", 25)  # a closing slide set larger than every frame title
    canvas.drawString(120, 130, "The End")
    canvas.showPage()
    canvas.save()
    doc = parse_pdf(path, SETTINGS)
    for title in ["Table", "Theorem", "Figure"]:
        (chunk,) = [c for c in doc.chunks if f"{title.lower()}0 point" in c.text]
        assert chunk.heading == title, chunk.heading


def test_a_heading_repeated_deeper_is_not_its_own_child() -> None:
    """Fails on the old code: a frame title repeated on the slide's next page, ranked deeper
    there, nested under itself ('How to use CJK? > How to use CJK? > 2. ASCII pTeX')."""
    title, item = "How to use CJK?", "2. ASCII pTeX"
    first = [_line(title, 60, 29.5, True), _line("1. NTT jTeX", 120, 24.6, True)]
    again = [_line(title, 60, 29.5, True), _line(item, 120, 24.6, True)]
    for ln in again:
        ln.page = 2
    pages = [Page(1, 842, first, 595), Page(2, 842, again, 595)]
    entries = [
        Entry(1, 1, "howtousecjk", "howtousecjk", title),
        Entry(1, 2, "1nttjtex", "nttjtex", "1. NTT jTeX"),
        Entry(2, 3, "howtousecjk", "howtousecjk", title),
        Entry(2, 4, "2asciiptex", "asciiptex", item),
    ]
    paras = paragraphs(pages, 21.5, "DVIPDFMx", entries)
    (para,) = [p for p in paras if p.text == item]
    assert para.chain == f"{title} > {item}"


def test_a_postcode_line_in_the_authors_address_is_no_heading() -> None:
    """srbook-mem: '11070 New Belgrade, Serbia' under the author, set large, was read as
    section 11070 and headed every chunk of the document."""
    lines = [
        _line("The srbook-mem package", 100, 18.5),
        _line("Zoran T. Filipovic", 130, 12.7),
        _line("Jurija Gagarina 263/6", 146, 12.7),
        _line("11070 New Belgrade, Serbia", 162, 12.7),
        _line("June 6, 2011", 190, 12.7),
        *[_line(t, 220 + i * 12, 10.5) for i, t in enumerate(lines_of(words(40), 10))],
        _line("Introduction", 300, 15.1, True),
        *[_line(t, 320 + i * 12, 10.5) for i, t in enumerate(lines_of(words(40), 10))],
    ]
    heads = _headings(lines, 10.5, "The srbook-mem package")
    assert [h for h, _ in heads] == ["Introduction"]
    assert [chain for _, chain in heads] == ["Introduction"]


def test_entries_of_a_contents_page_set_in_bold_are_no_headings() -> None:
    """mtc-add: page 1 is the contents, whose entries for chapters are set in bold a size up
    ('Second chapter, starred 6', 'A App. 1 12'); each headed the entries after it."""
    lines = [
        _line("Contents", 80, 20.0, True),
        _line("Contents 1", 120, 12.0, True),
        _line("List of Tables 3", 136, 12.0, True),
        _line("1.1 First section 4", 152, 10.0),
        _line("Second chapter, starred 6", 168, 12.0, True),
        _line("2.1 Third section 7", 184, 10.0),
        _line("A App. 1 12", 200, 12.0, True),
        _line("A.1 Fifth section 12", 216, 10.0),
        _line("1 Introduction", 260, 14.0, True),
        *[_line(t, 280 + i * 12, 10.0) for i, t in enumerate(lines_of(words(40), 10))],
    ]
    assert [h for h, _ in _headings(lines, 10.0, "mtc-add")] == ["Contents", "1 Introduction"]


def test_a_heading_ending_in_a_version_number_after_the_contents_stays_a_heading() -> None:
    """todo: '1 Preface to version 2.4142', the first chapter after the contents on its page,
    ends in a number that is no page: it heads its text."""
    lines = [
        _line("Contents", 80, 20.0, True),
        _line("1 Preface to version 2.4142", 120, 14.0, True),
        *[_line(t, 140 + i * 12, 10.0) for i, t in enumerate(lines_of(words(40), 10))],
    ]
    heads = [h for h, _ in _headings(lines, 10.0, "todo")]
    assert heads == ["Contents", "1 Preface to version 2.4142"]
