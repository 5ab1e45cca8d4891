"""Kinds of wrong headings seen on 50 PDFs no one had used (a landscape book, a bookmark
matched inside a margin command, a margin label): each test rebuilds one in typographic
terms and fails on the code before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("reportlab")

from reportlab.pdfgen.canvas import Canvas  # noqa: E402

from kb_search.formats.pdf.furniture import remove_headers_footers  # noqa: E402
from kb_search.formats.pdf.layout import Line, Page  # noqa: E402
from kb_search.formats.pdf.outline import NUMBER_PREFIX_RE, Entry, _key, apply_outline  # noqa: E402
from kb_search.formats.pdf.parse import parse_pdf  # noqa: E402
from kb_search.formats.pdf.structure import paragraphs  # noqa: E402
from kb_search.parsed import ChunkSettings  # noqa: E402
from pdf_samples import lines_of, words, write_pdf  # noqa: E402

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


def _line(text: str, y: float, size: float, bold: bool = False, **kw: object) -> Line:
    x0 = float(kw.pop("x0", 170))  # type: ignore[arg-type]
    return Line(text, 1, x0, y, x0 + 6 * len(text), y + size, size, bold, 0, **kw)  # type: ignore[arg-type]


def _entry(page: int, level: int, text: str) -> Entry:
    bare = NUMBER_PREFIX_RE.sub("", text, count=1)
    return Entry(page, level, _key(text), _key(bare), text)


def test_a_margin_command_is_not_the_start_of_a_bookmarked_heading() -> None:
    """Fails on the old code: '\\firstlinenum' in the margin (reledpar p18), read before the
    text beside it, matched the bookmark '7.3 First line number and line number increment' as
    that heading's first line: the margin's command list headed the section's chunks and the
    real heading lost its bookmark."""
    heading = "7.3 First line number and line number increment"
    margin = ["\\firstlinenum", "\\linenumincrement", "\\firstsublinenum"]
    lines = [_line("7 Left and right texts", 80, 14.0, True)]
    lines += [_line(t, 400 + 12 * i, 7.6, x0=70, mono=True) for i, t in enumerate(margin)]
    lines += [_line(heading, 387, 11.3, True)]
    lines += [_line(t, 420 + 12 * i, 10.0) for i, t in enumerate(lines_of(words(60), 12))]
    lines += [_line("7.4 Lineation system", 553, 11.3, True)]
    entries = [
        _entry(1, 1, "7 Left and right texts"),
        _entry(1, 2, heading),
        _entry(1, 2, "7.4 Lineation system"),
    ]
    paras = paragraphs([Page(1, 842, lines, 595)], 10.0, "reledpar", entries)
    headings = [p.text for p in paras if p.heading_level is not None]
    assert headings == ["7 Left and right texts", heading, "7.4 Lineation system"]


def test_a_bookmarked_heading_wrapped_over_two_lines_still_matches() -> None:
    """The first line of a heading wrapped over two lines holds the bookmark's first words, or
    ends in a hyphen inside one: both match, and the second line goes with it."""
    for first, second in [
        ("2.2 Commands and", "Environments"),
        ("2.2 Commands and Envi-", "ronments"),
    ]:
        lines = [_line(first, 100, 12.0, True), _line(second, 114, 12.0, True)]
        lines += [_line(t, 140 + 12 * i, 10.0) for i, t in enumerate(lines_of(words(40), 12))]
        lines += [_line("3 Other Things", 300, 12.0, True), _line("4 More Things", 400, 12.0, True)]
        entries = [
            _entry(1, 2, "2.2 Commands and Environments"),
            _entry(1, 1, "3 Other Things"),
            _entry(1, 1, "4 More Things"),
        ]
        assert apply_outline([Page(1, 842, lines, 595)], entries)
        assert [ln.heading_level for ln in lines[:3]] == [2, 2, None], first


def test_a_reviewers_bracketed_margin_label_is_no_heading(tmp_path: Path) -> None:
    """Fails on the old code: the bold margin labels of the changes package's comments ('[Green
    1]', '[OA 2]') headed the chunks of the text beside and after them."""
    text = lines_of(words(200, "prose"), 8)
    page: list = [(118, 120, "Changes by green author", "Helvetica-Bold", 10.6)]
    page += [(118, 140 + 13.5 * i, line, "Helvetica", 9.7) for i, line in enumerate(text)]
    for n, (label, y) in enumerate([("[Green 1]", 150), ("[Green 2]", 220), ("[OA 1]", 300)]):
        page.append((490, y, label, "Helvetica-Bold", 9.7))
        page.append((490, y + 14, f"note{n}", "Helvetica", 9.7))
    path = write_pdf(tmp_path / "changes.pdf", [page], title="Changes example")
    doc = parse_pdf(path, SETTINGS)
    assert {c.heading for c in doc.chunks} == {"Changes by green author"}
    assert any("[Green 2]" in c.text for c in doc.chunks)


def test_lines_measured_at_different_sizes_by_their_glyphs_stay_one_paragraph() -> None:
    """Fails on the old code: in a font whose glyph boxes hug each letter (reledmac's), the
    lines of one 10pt paragraph measured 4.6, 6.5 and 8.3 points, so each line was a
    paragraph of its own and a word broken over two lines stayed broken ('the num-' /
    'ber in font')."""
    texts = [
        "When a marginal line number is to be printed, there are many ways to show it.",
        "You can redefine the macros that print it; the initial versions print the num-",
        "ber in font numlabfont at a distance linenumsep (initially set to one pica)",
        "from the text, and so on for the other settings of this package.",
    ]
    sizes = [4.62, 6.96, 6.47, 8.30]
    lines = [_line("5.3.5 Other settings", 94.0, 9.4, True)]
    for i, (text, size) in enumerate(zip(texts, sizes, strict=True)):
        line = _line(text, 112.0 + 12.0 * i, size, x0=120)
        line.y1 = line.y0 + 9.3  # the line's box: one height, whatever its median glyph says
        lines.append(line)
    paras = paragraphs([Page(1, 842, lines, 595)], 8.3, "reledmac")
    body = [p.text for p in paras if p.heading_level is None]
    assert len(body) == 1, body
    assert "the number in font" in body[0]


def test_smaller_type_at_another_pitch_starts_a_paragraph() -> None:
    """A footnote set smaller under the text, in lower boxes, is its own paragraph still."""
    lines = [_line(t, 100.0 + 12.0 * i, 10.0, x0=120) for i, t in enumerate(["a b c"] * 3)]
    for i in range(2):
        note = _line("a footnote in smaller type", 140.0 + 9.5 * i, 7.5, x0=120)
        lines.append(note)
    paras = paragraphs([Page(1, 842, lines, 595)], 10.0, "doc")
    assert [p.text for p in paras] == [
        "a b c a b c a b c",
        "a footnote in smaller type a footnote in smaller type",
    ]


def test_an_editions_text_set_larger_than_its_apparatus_is_no_title(tmp_path: Path) -> None:
    """Fails on the old code: a critical edition's sample (edfnotes' PdUsample) sets its text
    larger than the notes under it, which hold most of the characters, so the first three
    lines of the text's first paragraph were taken for the title."""
    text = lines_of(words(120, "text"), 9)
    notes = lines_of(words(700, "note"), 16)
    page: list = [(170, 250 + 12 * i, line, "Times-Roman", 9.35) for i, line in enumerate(text)]
    top = 250 + 12 * len(text) + 20
    page += [(170, top + 9 * i, line, "Times-Roman", 7.5) for i, line in enumerate(notes)]
    path = write_pdf(tmp_path / "PdUsample.pdf", [page])
    doc = parse_pdf(path, SETTINGS)
    assert doc.title == "PdUsample"


def test_a_title_wrapped_over_three_lines_is_still_the_title(tmp_path: Path) -> None:
    """A title of three lines set large over its text is the title (the paragraph rule needs
    five lines of one size at one pitch)."""
    title = ["Typesetting critical editions", "with line numbers and notes", "in several series"]
    page: list = [(120, 100 + 24 * i, line, "Times-Bold", 20) for i, line in enumerate(title)]
    text = lines_of(words(300))
    page += [(120, 200 + 13 * i, line, "Times-Roman", 10) for i, line in enumerate(text)]
    path = write_pdf(tmp_path / "sample.pdf", [page])
    assert parse_pdf(path, SETTINGS).title == " ".join(title)


def test_a_command_in_the_margin_is_not_its_numbered_bookmark() -> None:
    """Fails on the old code: '\\antilabe' in fixed pitch in reledmac's margin, read before the
    text beside it, matched the bookmark '9.11 Antilabe' without its number: it became the
    heading and the real '9.11 Antilabe' below it lost its bookmark."""
    lines = [_line("9 Verse", 80, 14.0, True)]
    lines += [_line("\\antilabe", 120, 7.6, x0=70, mono=True)]
    lines += [_line("9.11 Antilabe", 118, 11.3, True)]
    lines += [_line(t, 140 + 12 * i, 10.0) for i, t in enumerate(lines_of(words(60), 12))]
    lines += [_line("9.12 Various tools", 300, 11.3, True)]
    entries = [
        _entry(1, 1, "9 Verse"),
        _entry(1, 2, "9.11 Antilabe"),
        _entry(1, 2, "9.12 Various tools"),
    ]
    paras = paragraphs([Page(1, 842, lines, 595)], 10.0, "reledmac", entries)
    headings = [p.text for p in paras if p.heading_level is not None]
    assert headings == ["9 Verse", "9.11 Antilabe", "9.12 Various tools"]


def test_a_bold_title_in_the_texts_size_above_it_is_still_the_title(tmp_path: Path) -> None:
    """A title set in bold capitals in the body's size, in the text's block above its first
    paragraph (adtreesdoc), is the title: only lines below a paragraph's start, in its weight,
    belong to it."""
    page: list = [(214, 150, "ADPOSITIONAL TREES IN LATEX", "Times-Bold", 8.85)]
    page += [(220, 182, "MARCO BENINI AND FEDERICO GOBBO", "Times-Roman", 7.1)]
    text = lines_of(words(200), 12)
    page += [(127, 243 + 12 * i, line, "Times-Roman", 8.85) for i, line in enumerate(text)]
    path = write_pdf(tmp_path / "adtreesdoc.pdf", [page])
    assert parse_pdf(path, SETTINGS).title == "ADPOSITIONAL TREES IN LATEX"


def test_running_heads_are_dropped_where_glyph_boxes_hug_the_letters() -> None:
    """Fails on the old code: reledmac's font reports glyph boxes that hug each letter, so its
    10pt text measured 4.6 while its running heads ('5.4 Changing the line numbers 21')
    measured 9.3: taken for chapter headings set larger than the text, 79 heads stayed in
    the text. Their line boxes are the text's height: they are heads."""
    titles = ["Aim", "History", "Options", "Lineation", "Paragraphs", "Notes", "Verse", "Index"]
    pages = []
    for number in range(1, 9):
        head = f"5.{number} | {titles[number - 1]} | {number}"
        lines = [Line(head, number, 120, 94, 470, 103.4, 9.28, False, 0, cells=3)]
        for i in range(30):
            y = 130 + 12 * i
            lines.append(
                Line(
                    f"body line {i} of page {number}", number, 120, y, 470, y + 9.3, 4.62, False, 0
                )
            )
        pages.append(Page(number, 842, lines, 595))
    remove_headers_footers(pages)
    assert all(not ln.text.startswith("5.") for page in pages for ln in page.lines)
    assert all(len(page.lines) == 30 for page in pages)


def test_a_chapter_heading_set_larger_atop_its_page_stays() -> None:
    """A chapter's heading set larger than the text, atop its page with a number, is kept."""
    names = {2: "Introduction", 5: "Usage", 7: "Reference"}
    pages = []
    for number in range(1, 9):
        lines = []
        if number in names:
            lines.append(Line(f"{number} {names[number]}", number, 120, 60, 300, 76, 14.0, True, 0))
        for i in range(30):
            y = 130 + 12 * i
            lines.append(Line(f"body line {i}", number, 120, y, 470, y + 10.5, 10.0, False, 0))
        pages.append(Page(number, 842, lines, 595))
    remove_headers_footers(pages)
    kept = [ln.text for page in pages for ln in page.lines if not ln.text.startswith("body")]
    assert kept == ["2 Introduction", "5 Usage", "7 Reference"]


def test_a_german_contents_heading_the_outline_leaves_out_is_a_heading() -> None:
    """Fails on the old code: 'Inhaltsverzeichnis', set large before the chapters and left out
    of the outline as 'Contents' is, headed nothing, so the contents pages' chunks had no
    heading (jmgerdoc: 8 chunks)."""
    contents = [_line("Inhaltsverzeichnis", 80, 17.0, True)]
    contents += [_line(f"{n} Kapitel {n} … {n * 4}", 120 + 14 * n, 10.0) for n in range(1, 9)]
    chapters = [_line(f"{n} Kapitel {n}", 80, 14.0, True) for n in range(1, 4)]
    pages = [Page(1, 842, contents, 595)]
    for n, line in enumerate(chapters, start=2):
        line.page = n
        body = [_line(t, 120 + 12 * i, 10.0) for i, t in enumerate(lines_of(words(40), 12))]
        pages.append(Page(n, 842, [line, *body], 595))
    entries = [_entry(n + 1, 1, f"{n} Kapitel {n}") for n in range(1, 4)]
    assert apply_outline(pages, entries)
    assert contents[0].heading_level == 1
    assert [ln.heading_level for ln in chapters] == [1, 1, 1]
