"""Reading order on mixed layouts, scored against the order the page was written in.

The page-order score is the share of the reference's word 6-grams that kb's text of the page
holds (bench/pdf_order.py measures real pages the same way against poppler's text)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("reportlab")

from reportlab.pdfbase.pdfmetrics import stringWidth  # noqa: E402
from reportlab.pdfgen.canvas import Canvas  # noqa: E402

from kb_search.formats.pdf.parse import parse_pdf  # noqa: E402
from kb_search.parsed import ChunkSettings  # noqa: E402
from pdf_samples import HEIGHT, write_objects, write_pdf  # noqa: E402

SETTINGS = ChunkSettings()
PITCH = 11.0


def lines(prefix: str, count: int, per_line: int = 6) -> list[str]:
    """Lines of words unique to their block: 'ab0 ab1 ab2 ...'."""
    return [" ".join(f"{prefix}{i * per_line + k}" for k in range(per_line)) for i in range(count)]


def column(x: float, top: float, texts: list[str], size: float = 9) -> list:
    return [(x, top + i * PITCH, t, "Helvetica", size) for i, t in enumerate(texts)]


def score(reference: list[str], text: str) -> float:
    def grams(words: list[str]) -> set[tuple[str, ...]]:
        return {tuple(words[i : i + 6]) for i in range(len(words) - 5)}

    ref = grams(" ".join(reference).split())
    got = grams(re.findall(r"\w+", text))
    return len(ref & got) / len(ref)


def page_text(path: Path, page: int) -> str:
    doc = parse_pdf(path, SETTINGS)
    return " ".join(c.text for c in doc.chunks if c.page_start <= page <= c.page_end)


# each page: (draw calls, the text in the order a reader follows)
def paper_first_page() -> tuple[list, list[str]]:
    """A title, authors and a full-width abstract over two columns."""
    title, authors = "Dense retrieval of passages", "Ann Author and Bob Writer"
    abstract = lines("ab", 7, per_line=14)
    left, right = lines("le", 40), lines("ri", 40)
    draws = [
        (150, 60, title, "Helvetica-Bold", 18),
        (200, 85, authors, "Helvetica", 11),
        *column(72, 120, abstract, 10),
        *column(72, 220, left),
        *column(310, 220, right),
    ]
    return draws, [title, authors, *abstract, *left, *right]


def prose_beside_a_list() -> tuple[list, list[str]]:
    """A column of prose beside a column of mostly short lines (a list of commands under a
    heading), with a few wrapped lines of prose among them (TUGboat's first pages)."""
    left = lines("le", 40, per_line=8)
    right = [
        " ".join(f"rl{i * 8 + k:03d}" for k in range(8)) if i % 5 == 0 else f"rs{i:02d} go"
        for i in range(40)
    ]
    draws = [*column(72, 80, left), *column(310, 80, right)]
    return draws, [*left, *right]


def figure_between_columns() -> tuple[list, list[str]]:
    """Two columns, a full-width caption, two columns again."""
    tl, tr, bl, br = lines("tl", 20), lines("tr", 20), lines("bl", 20), lines("br", 20)
    caption = lines("fig", 2, per_line=16)
    draws = [
        *column(72, 80, tl),
        *column(310, 80, tr),
        *column(72, 330, caption, 10),
        *column(72, 380, bl),
        *column(310, 380, br),
    ]
    return draws, [*tl, *tr, *caption, *bl, *br]


def reference_card() -> tuple[list, list[str]]:
    """A title over three columns of a quick-reference card."""
    cols = [lines(p, 45, per_line=4) for p in ("ca", "cb", "cc")]
    draws = [(200, 50, "Quick reference card", "Helvetica-Bold", 14)]
    for x, texts in zip((40, 220, 400), cols):
        draws += column(x, 90, texts, 8)
    return draws, ["Quick reference card", *cols[0], *cols[1], *cols[2]]


def margin_notes() -> tuple[list, list[str]]:
    """One column of text with short notes in the left margin beside some of its lines."""
    body = lines("bo", 45, per_line=12)
    notes = [(30, 100 + 5 * PITCH, "note one", "Helvetica", 7)]
    notes.append((30, 100 + 25 * PITCH, "note two", "Helvetica", 7))
    return [*column(120, 100, body), *notes], body


def notes_beside_two_columns() -> tuple[list, list[str]]:
    """A package manual's page: option names in the left margin beside two columns."""
    left, right = lines("ml", 40, per_line=5), lines("mr", 40, per_line=5)
    notes = [(24, 100 + 3 * PITCH, "style=dashed,", "Helvetica", 7)]
    notes.append((24, 100 + 4 * PITCH, "width=2pt", "Helvetica", 7))
    notes.append((24, 100 + 20 * PITCH, "shift=4pt", "Helvetica", 7))
    draws = [*notes, *column(110, 100, left), *column(320, 100, right)]
    return draws, [*left, *right]


def table_over_columns() -> tuple[list, list[str]]:
    """A full-width table of keys and their meaning, then two columns of text."""
    table = []
    reference = []
    for i in range(6):
        key, meaning = f"key{i}", f"what key number {i} sets for the rule drawn"
        y = 80 + i * 12
        table += [(72, y, key, "Helvetica", 9), (160, y, meaning, "Helvetica", 9)]
        reference.append(f"{key} {meaning}")
    left, right = lines("tc", 30, per_line=6), lines("td", 30, per_line=6)
    draws = [*table, *column(72, 180, left), *column(310, 180, right)]
    return draws, [*reference, *left, *right]


def newspaper() -> tuple[list, list[str]]:
    """A headline over the first two of three columns; the third starts at the top."""
    headline = "Flood waters recede across the valley"
    one, two = lines("na", 35, per_line=4), lines("nb", 35, per_line=4)
    three = lines("nc", 40, per_line=4)
    draws = [(40, 60, headline, "Helvetica-Bold", 16)]
    draws += [*column(40, 110, one, 8), *column(210, 110, two, 8), *column(380, 60, three, 8)]
    return draws, [headline, *one, *two, *three]


def multicol_sections() -> tuple[list, list[str]]:
    """Sections set as balanced column pairs (multicol): a heading in the left column, two
    short columns, white across the page, the next section's heading."""
    draws, reference, top = [], [], 80.0
    for n, prefix in enumerate(("sa", "sb", "sc")):
        heading = f"Section {n + 1} heading"
        left, right = lines(prefix + "l", 9), lines(prefix + "r", 9)
        draws += [(72, top, heading, "Helvetica-Bold", 11)]
        draws += [*column(72, top + 24, left), *column(310, top + 24, right)]
        reference += [heading, *left, *right]
        top += 24 + 9 * PITCH + 30
    return draws, reference


def short_column_beside_a_long_one() -> tuple[list, list[str]]:
    """A newsletter's last page: the right column holds a few lines at its top (headings of
    empty sections, a reference), the left one runs down the page; the white strip between
    them stays open to the foot, where the short column's text is a small share of the rows."""
    left, right = lines("le", 45, per_line=7), lines("ri", 6, per_line=6)
    draws = [*column(72, 80, left), *column(310, 80, right), (520, 800, "2", "Helvetica", 7)]
    return draws, [*left, *right]


PAGES = [
    paper_first_page,
    figure_between_columns,
    reference_card,
    margin_notes,
    notes_beside_two_columns,
    table_over_columns,
    newspaper,
    multicol_sections,
    prose_beside_a_list,
    short_column_beside_a_long_one,
]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[list[str]]]:
    built = [make() for make in PAGES]
    path = tmp_path_factory.mktemp("order") / "mixed.pdf"
    write_pdf(path, [draws for draws, _ in built], title="Mixed layouts")
    return path, [ref for _, ref in built]


@pytest.mark.parametrize("page", range(1, len(PAGES) + 1), ids=[p.__name__ for p in PAGES])
def test_page_order_on_mixed_layouts(mixed, page: int) -> None:
    """Fails on the old code for the manual page with margin notes (read across the columns)
    and for multicol sections (every section's left column, then every right one), and for
    prose beside a list (its short lines read as a table's cells, across), and for a short
    column beside a long one (its top read across both); the other
    layouts guard what the old code already read right."""
    path, references = mixed
    assert score(references[page - 1], page_text(path, page)) >= 0.9


def test_margin_note_stays_whole(tmp_path: Path) -> None:
    """Fails on the old code: the strip between a margin note and the text was put in the
    middle of the white around the note, cutting the note in two ('A' | 'marginal This is
    ...')."""
    body = lines("mb", 40, per_line=10)
    draws = [*column(72, 100, body)]
    y = 100 + 12 * PITCH
    draws += [(4, y, "A", "Helvetica", 9), (23, y, "marginal", "Helvetica", 9)]
    draws.append((4, y + PITCH, "note", "Helvetica", 9))
    path = write_pdf(tmp_path / "note.pdf", [draws], title="Margin note")
    text = page_text(path, 1)
    assert "A marginal note" in text
    assert score(body, text) >= 0.95


def test_margin_note_is_read_beside_its_text(tmp_path: Path) -> None:
    """Fails on the old code: every note of a page was read first, as one block above the
    text, so a macro name in the margin came before the page's first line instead of before the
    description it stands beside."""
    body = lines("mb", 40, per_line=10)
    draws = [*column(72, 100, body)]
    draws.append((4, 100 + 20 * PITCH, "drama*", "Helvetica", 9))
    path = write_pdf(tmp_path / "beside.pdf", [draws], title="Margin note beside its text")
    text = page_text(path, 1)
    assert text.index(body[19]) < text.index("drama*") < text.index(body[20])


def test_table_rows_stay_rows(tmp_path: Path) -> None:
    header = [(72, 80, "Name", "Helvetica-Bold", 10), (200, 80, "Size", "Helvetica-Bold", 10)]
    header.append((330, 80, "Colour", "Helvetica-Bold", 10))
    rows = []
    for i, (name, size, colour) in enumerate(
        [("apple", "small", "red"), ("melon", "large", "green"), ("plum", "small", "purple")] * 4
    ):
        y = 100 + i * 14
        rows += [(72, y, f"{name}{i}", "Helvetica", 10), (200, y, size, "Helvetica", 10)]
        rows.append((330, y, colour, "Helvetica", 10))
    path = write_pdf(tmp_path / "table.pdf", [header + rows], title="Fruit")
    text = "\n".join(c.text for c in parse_pdf(path, SETTINGS).chunks)
    assert "apple0 | small | red" in text and "plum11 | small | purple" in text


def test_listing_keeps_its_lines_and_indentation(tmp_path: Path) -> None:
    """Fails on the old code: a listing's lines were joined into one, a comment swallowing
    the command after it."""
    code = ["def greet(name):", "    # say hello", "    print(name)", "", "greet('x')"]
    draws = [(72, 80, "The function below prints a greeting for a name.", "Helvetica", 10)]
    draws += [(72, 100 + i * 12, t, "Courier", 10) for i, t in enumerate(code) if t]
    draws.append((72, 180, "After the listing the text goes on as before.", "Helvetica", 10))
    path = write_pdf(tmp_path / "code.pdf", [draws], title="Listing")
    text = "\n".join(c.text for c in parse_pdf(path, SETTINGS).chunks)
    assert "def greet(name):\n    # say hello\n    print(name)" in text


def test_numbered_listing_keeps_numbers_on_their_lines(tmp_path: Path) -> None:
    """Fails on the old code: a listing whose line numbers (in another font) sit beside
    indented code was read as two columns, every number first, then the code without them
    (a package's documented source, as showexpl.pdf sets it)."""
    code = ["\\newif\\ifodd", "\\newcommand*\\isodd{%", "  \\begingroup"]
    code += ["    \\ifodd\\value{page}%", "      \\aftergroup\\oddtrue", "    \\else"]
    code += ["      \\aftergroup\\oddfalse", "    \\fi", "  \\endgroup", "}", "\\fi"]
    prose = ["The macro below tells odd pages from even ones; it needs two runs", "of LaTeX."]
    draws = [(60, 80 + i * 12, t, "Helvetica", 10) for i, t in enumerate(prose)]
    draws.append((14, 121, "\\isodd", "Courier", 8))  # the macro's name in the margin
    for i, line in enumerate(code):
        y = 110 + i * 11
        draws.append((60, y, str(i + 120), "Helvetica", 7))
        indent = len(line) - len(line.lstrip())
        draws.append((77 + indent * 5.4, y, line.strip(), "Courier", 9))
    after = ["The call also sets the flag, which can be used where no page break", "occurs."]
    draws += [(60, 250 + i * 12, t, "Helvetica", 10) for i, t in enumerate(after)]
    path = write_pdf(tmp_path / "numbered.pdf", [draws], title="Numbered listing")
    text = "\n".join(c.text for c in parse_pdf(path, SETTINGS).chunks)
    got = [re.sub(r"\s+", " ", ln).strip() for ln in text.splitlines()]
    assert "124 \\aftergroup\\oddtrue" in got and "128 \\endgroup" in got
    assert text.index("\\begingroup") < text.index("\\else") < text.index("\\endgroup")


def test_listing_in_a_text_font_numbered_line_by_line_keeps_its_lines(tmp_path: Path) -> None:
    """Fails on the old code: a listing set in the text font with its line numbers glued on
    ('47 \\usepackage[firstpage, ...') was joined into one paragraph of prose, as
    draftwatermark.pdf sets its examples; a contents page counting up stays prose."""
    code = ["\\documentclass{article}", "\\usepackage[T1]{fontenc}", "", "  angle=-45,"]
    code += ["\\usepackage[firstpage, anchor=tr]{draftwatermark}", "", "\\begin{document}"]
    intro = "The mark goes to the top right corner of the first page:"
    draws = [(72, 80, intro, "Times-Roman", 10)]
    for i, line in enumerate(code):
        indent = len(line) - len(line.lstrip())
        number = (74, 96 + i * 11, str(44 + i), "Times-Roman", 7)
        draws += [number, (84 + indent * 4, 96 + i * 11, line.strip(), "Times-Roman", 8)]
    contents = ["Introduction to marks", "Options of the package", "Colours and angles"]
    contents += ["Things that cannot be done", "Known problems"]
    for i, entry in enumerate(contents):
        draws.append((72, 220 + i * 12, f"{i + 1} {entry}", "Times-Roman", 10))
    path = write_pdf(tmp_path / "textlisting.pdf", [draws], title="Text-font listing")
    text = "\n".join(c.text for c in parse_pdf(path, SETTINGS).chunks)
    got = [re.sub(r"\s+", " ", ln).strip() for ln in text.splitlines()]
    assert "45 \\usepackage[T1]{fontenc}" in got and "46" in got, text
    assert "48 \\usepackage[firstpage, anchor=tr]{draftwatermark}" in got
    assert "1 Introduction to marks 2 Options of the package" in text


def test_cheat_sheet_labels_stay_on_the_rows_they_name(tmp_path: Path) -> None:
    """Fails on the old code: a two-column cheat sheet (what to do | the command) was read
    as two columns, every label first and every command after them (poemscolcheatsheet.pdf)."""
    entries = [
        ("to turn off line numbering", ["\\global\\verselinenumbersfalse"]),
        ("marks stanza break at page turn", ["\\stanzaatbottom{*}", "\\nostanzaatbottom{}"]),
        ("titles for running headers", ["\\leftheader{}", "\\rightheader{}"]),
        ("modulo for line numbers", ["\\setverselinemodulo{}"]),
        ("for endnote sections", ["\\maketextnotes", "\\makeemendations", "\\putnotes"]),
        ("indexing", ["\\indexingontrue \\putpoemindex"]),
        ("for footnotes", ["\\textnotesatfoot", "\\emendationsatfoot"]),
        ("contents setup", ["\\makepoemcontents"]),
    ]
    draws, y = [], 100.0
    for label, commands in entries:
        draws.append((78, y, label, "Times-Roman", 10))
        for command in commands:
            draws.append((270, y, command, "Courier", 10))
            y += 14.5
    path = write_pdf(tmp_path / "cheat.pdf", [draws], title="Cheat sheet")
    text = "\n".join(c.text for c in parse_pdf(path, SETTINGS).chunks)
    assert "to turn off line numbering \\global\\verselinenumbersfalse" in text, text
    assert "for footnotes \\textnotesatfoot" in text


def test_three_column_card_is_read_column_by_column_and_row_by_row(tmp_path: Path) -> None:
    """Fails on the old code: a reference card in three columns of boxes (a box title, then
    rows of a command and what it does) was read across its rows, a box title running on into
    the next column's text, and a box's commands were read as one column and their
    definitions as another (the Octave and GDB quick reference cards)."""
    draws, reference = [], []
    for c, x in enumerate((20, 215, 410)):
        y = 60.0
        for b in range(3):
            title = f"Box{c}{b} title words"
            draws.append((x, y, title, "Helvetica-Bold", 9))
            reference.append(title)
            y += 13
            if b == 1:  # a box opening with a line of prose
                prose = f"Prose{c}{b} " + " ".join(f"w{c}{b}{i}" for i in range(4))
                draws.append((x, y, prose, "Helvetica", 8))
                reference.append(prose)
                y += 10
            for r in range(4 + c):  # boxes of other lengths in each column: rows do not line up
                command, meaning = f"k{c}{b}{r}", f"sets x{c}{b}{r}" + (" to one" if r % 2 else "")
                draws += [(x, y, command, "Courier", 8), (x + 70, y, meaning, "Helvetica", 8)]
                reference.append(f"{command} {meaning}")
                y += 10
            y += 8
    path = write_pdf(tmp_path / "card.pdf", [draws], title="Quick reference")
    text = page_text(path, 1)
    for row in reference:
        assert row in text, (row, text)
    assert score(reference, text) >= 0.95
    order = [text.index(row) for row in reference]
    assert order == sorted(order)


def test_cheat_sheet_box_titles_head_their_rows(tmp_path: Path) -> None:
    """Fails on the old code: on a cheat sheet whose box titles stand in bold in the labels'
    column (poemscolcheatsheet.pdf pages 2 and 3), the labels and titles were read as one
    column before every command, or as notes run together ('cross references Notes')."""
    boxes = [
        ("Poetic elements", [("titles", 4), ("epigraphs etc.", 3), ("main text", 6)]),
        ("Notes", [("cross references", 1), ("", 5)]),
    ]
    titled = [("Collections", 4), ("Annotation by Paragraph", 4), ("Parallel Texts", 6)]
    pages, expected = [[], []], [[], []]
    y, n = 80.0, 0
    for title, labels in boxes:
        pages[0].append((78, y, title, "Helvetica-Bold", 10.6))
        expected[0].append(title)
        y += 14.5
        for label, count in labels:
            for k in range(count):
                command = f"\\command{n}{{}}"
                pages[0].append((182, y, command, "Courier", 10))
                if k == 0 and label:
                    pages[0].append((78, y, label, "Times-Roman", 10.6))
                expected[0].append(f"{label} {command}".strip() if k == 0 else command)
                y, n = y + 14.5, n + 1
    y = 80.0
    for title, count in titled:
        pages[1].append((78, y, title, "Helvetica-Bold", 10.6))
        expected[1].append(title)
        y += 14.5
        for _ in range(count):
            command = f"\\begin{{thing{n}}} \\end{{thing{n}}}"
            pages[1].append((241, y, command, "Courier", 10))
            expected[1].append(command)
            y, n = y + 14.5, n + 1
    path = write_pdf(tmp_path / "sheet.pdf", pages, title="Cheat sheet")
    for page, rows in enumerate(expected, start=1):
        text = "\n".join(c.text for c in parse_pdf(path, SETTINGS).chunks if c.page_start == page)
        at = [text.find(row) for row in rows]
        assert -1 not in at and at == sorted(at), (page, rows, text)


def test_page_turned_by_its_rotate_entry_is_read_as_shown(tmp_path: Path) -> None:
    """Fails on the old code: a page with /Rotate 90 whose text is turned the other way in
    page space (upright as shown: newspaper.pdf, landscape tables) was read as rotated text,
    in content-stream order without layout: here the right column first."""
    left, right = lines("le", 30), lines("ri", 30)
    path = tmp_path / "turned.pdf"
    canvas = Canvas(str(path))
    canvas.setPageRotation(90)
    canvas.rotate(90)  # (x, -y) now lands at x, y from the top-left of the page as shown
    canvas.setFont("Helvetica", 10)
    for x, column in ((440, right), (72, left)):
        for i, text in enumerate(column):
            canvas.drawString(x, -(80 + i * 13), text)
    canvas.showPage()
    canvas.save()
    text = page_text(path, 1)
    assert score(left + right, text) == 1.0
    assert text.index("le179") < text.index("ri0")


def test_many_margin_comments_off_the_rows_are_not_glued_to_lines(tmp_path: Path) -> None:
    """Fails on the old code: a review's comments in the right margin, one for every line or
    two and set at their own leading (changes.example.draft.pdf), were read into the text
    lines beside them ('... exactly when [1] No?')."""
    text = lines("tx", 30, per_line=11)
    draws = [(72, 100 + i * 13.5, t, "Helvetica", 9.5) for i, t in enumerate(text)]
    comments = [f"[{k}] note{k} word{k}" for k in range(1, 13)]
    for k, comment in enumerate(comments):  # two lines each, between the text's rows
        first, second = comment.rsplit(" ", 1)
        top = 106 + k * 33
        draws += [(470, top, first, "Helvetica", 8), (470, top + 9, second, "Helvetica", 8)]
    path = write_pdf(tmp_path / "comments.pdf", [draws], title="Reviewed")
    got = page_text(path, 1)
    assert all(comment in got for comment in comments), got
    for comment in comments:  # each read whole, the text's own lines then run on unbroken
        got = got.replace(comment, " ")
    assert score(text, got) == 1.0, got


def test_code_beside_its_output_is_not_interleaved(tmp_path: Path) -> None:
    source = [f"\\command{{argument{i}}} % note{i}" for i in range(8)]
    output = [f"Typeset result number {i} of the example" for i in range(8)]
    draws = [(72, 100 + i * 12, t, "Courier", 9) for i, t in enumerate(source)]
    draws += [(320, 100 + i * 12, t, "Helvetica", 9) for i, t in enumerate(output)]
    path = write_pdf(tmp_path / "side.pdf", [draws], title="Side by side")
    text = "\n".join(c.text for c in parse_pdf(path, SETTINGS).chunks)
    assert "% note0\n\\command{argument1}" in text
    assert "Typeset result number 0 of the example Typeset result number 1" in text


def test_multicol_sections_read_section_by_section(tmp_path: Path) -> None:
    """Fails on the old code: the left columns of all sections came first, then the right."""
    draws, reference = multicol_sections()
    path = write_pdf(tmp_path / "sections.pdf", [draws], title="Sections")
    words = re.findall(r"\w+", page_text(path, 1))
    assert words.index("sar53") < words.index("Section", words.index("sar0"))
    assert words.index("sbl0") < words.index("sbr0") < words.index("scl0")


def test_stacked_examples_read_pair_by_pair(tmp_path: Path) -> None:
    """Fails on the old code: two source | output examples one under the other were read as
    both sources, then both outputs."""
    draws, top = [], 90.0
    for n in range(2):
        source = [f"\\macro{n}{{argument{i}}} % note{n}x{i}" for i in range(5)]
        output = [f"Result {n} of the example typeset as line {i}" for i in range(5)]
        draws += [(72, top + i * 12, t, "Courier", 9) for i, t in enumerate(source)]
        draws += [(320, top + i * 12, t, "Helvetica", 9) for i, t in enumerate(output)]
        top += 5 * 12 + 40
    path = write_pdf(tmp_path / "stacked.pdf", [draws], title="Stacked examples")
    text = "\n".join(c.text for c in parse_pdf(path, SETTINGS).chunks)
    assert text.index("Result 0 of the example typeset as line 4") < text.index("\\macro1")
    assert text.index("% note0x4") < text.index("Result 0 of the example typeset as line 0")


def test_outline_headings_only(tmp_path: Path) -> None:
    """Fails on the old code: a bold sentence in the body became a heading."""
    path = tmp_path / "outlined.pdf"
    canvas = Canvas(str(path))
    canvas.setTitle("Outlined manual")
    sections = [("1 Installation", "inst"), ("2 Configuration", "conf"), ("3 Usage", "use")]
    for number, (heading, key) in enumerate(sections):
        canvas.bookmarkPage(key)
        canvas.addOutlineEntry(heading, key, level=0)
        canvas.setFont("Helvetica-Bold", 14)
        canvas.drawString(72, HEIGHT - 80, heading)
        canvas.setFont("Helvetica", 10)
        for i, line in enumerate(lines(f"s{number}x", 12, per_line=10)):
            canvas.drawString(72, HEIGHT - 110 - i * 13, line)
        canvas.setFont("Helvetica-Bold", 10)
        canvas.drawString(72, HEIGHT - 300, "Warning")
        canvas.setFont("Helvetica", 10)
        canvas.drawString(72, HEIGHT - 313, f"never unplug it while it runs {key}")
        canvas.showPage()
    canvas.save()
    doc = parse_pdf(path, SETTINGS)
    headings = {c.heading for c in doc.chunks}
    assert headings == {"1 Installation", "2 Configuration", "3 Usage"}


def test_slides_get_frame_titles_and_overlays_merge(tmp_path: Path) -> None:
    """Fails on the old code: a frame title repeated over its overlays was dropped as a running
    head, and each overlay was a near-copy of the next."""
    path = tmp_path / "talk.pdf"
    canvas = Canvas(str(path), pagesize=(364, 273))
    canvas.setTitle("A talk")
    slides = [("Motivation", ["Search is hard", *lines("mo", 9, per_line=8)])]
    slides.append(("Results", ["Recall went up", *lines("re", 9, per_line=8)]))
    for title, points in slides:
        for shown in (4, 7, 10):  # overlays: more points on each page
            canvas.setFont("Helvetica-Bold", 16)
            canvas.drawString(20, 273 - 30, title)
            canvas.setFont("Helvetica", 9)
            for i, point in enumerate(points[:shown]):
                canvas.drawString(30, 273 - 60 - i * 16, point)
            canvas.setFont("Helvetica", 6)
            canvas.drawString(300, 10, f"{canvas.getPageNumber()} / 6")
            canvas.showPage()
    canvas.save()
    doc = parse_pdf(path, SETTINGS)
    text = " ".join(c.text for c in doc.chunks)
    assert text.count("Search is hard") == 1 and text.count("Recall went up") == 1
    assert {c.heading for c in doc.chunks} == {"Motivation", "Results"}
    assert "/ 6" not in text


def test_slide_logo_beside_the_frame_title_is_no_part_of_it(tmp_path: Path) -> None:
    """Fails on the old code: a small 'Logo' in the corner, on the row of each frame title
    (ffslides' default header), was glued to the title ('Quick Start Logo') and headed
    every chunk of the frame."""
    path = tmp_path / "logo.pdf"
    canvas = Canvas(str(path), pagesize=(558, 418))
    canvas.setTitle("Slides with a logo")
    titles = ["Quick Start", "Command Summary", "Changing the background and footer", "Tips"]
    for n, title in enumerate(titles):
        canvas.setFont("Helvetica", 20)
        canvas.drawString(28, 418 - 34, title)
        canvas.setFont("Helvetica", 10)
        canvas.drawString(520, 418 - 32, "Logo")
        for i, text in enumerate(lines(f"s{n}x", 8, per_line=9)):
            canvas.drawString(30, 418 - 70 - i * 16, text)
        canvas.showPage()
    canvas.save()
    doc = parse_pdf(path, SETTINGS)
    assert {c.heading for c in doc.chunks} == set(titles)
    assert "Logo" not in " ".join(c.text for c in doc.chunks)


def test_title_field_loses_its_footnote_mark(tmp_path: Path) -> None:
    path = write_pdf(
        tmp_path / "t.pdf", [column(72, 100, lines("tt", 30))], title="Spacing in LaTeX \u2217"
    )
    assert parse_pdf(path, SETTINGS).title == "Spacing in LaTeX"


def test_unmapped_glyphs_become_nothing() -> None:
    from kb_search.formats.pdf.layout import _char

    assert [_char(c) for c in (0x01, 0x1F, 0xFFFD, 0xE000, 0x41, 2)] == ["", "", "", "", "A", "-"]


def test_margin_box_beside_a_lower_paragraph_follows_the_text_above_it(tmp_path: Path) -> None:
    """Fails on the old code: a box of small print in the margin, beside a paragraph lower
    down, shared the white strip left of the text all the way up the page and was read as a
    left column, before the text above it."""
    above, beside = lines("ta", 5, per_line=7), lines("tb", 5, per_line=7)
    box = [f"\\begin{{box{i}}}[options{i}]" for i in range(4)]
    draws = [*column(150, 100, above), *column(150, 100 + 6 * PITCH, beside)]
    draws += [(10, 100 + 6 * PITCH + i * 9, t, "Helvetica", 6) for i, t in enumerate(box)]
    path = write_pdf(tmp_path / "box.pdf", [draws], title="Margin box")
    text = page_text(path, 1)
    assert text.index(above[-1]) < text.index(box[0])
    assert " ".join(box) in " ".join(text.split())


def test_parallel_column_pairs_read_pair_by_pair(tmp_path: Path) -> None:
    """Fails on the old code: numbered sections of parallel texts (a short left column, a
    right one a line longer, the next heading in larger type a little below) were read as one
    band: every section's left column and heading, then every right column."""
    draws, reference, top = [], [], 120.0
    for n in range(3):
        heading = f"{n + 1} Alignment {n}"
        left, right = lines(f"p{n}l", 2, per_line=8), lines(f"p{n}r", 3, per_line=7)
        draws.append((92, top, heading, "Helvetica-Bold", 13.5))
        draws += column(108, top + 25, left) + column(330, top + 25, right)
        reference += [heading, *left, *right]
        top += 25 + 2 * PITCH + 23
    path = write_pdf(tmp_path / "pairs.pdf", [draws], title="Parallel pairs")
    words = re.findall(r"\w+", page_text(path, 1))
    assert words.index("p0r20") < words.index("Alignment", words.index("p0l0"))
    assert words.index("p1r20") < words.index("p2l0")
    assert score(reference, " ".join(words)) >= 0.9


def _paragraph_pairs(breaks_right: list[int] | None = None) -> tuple[list, list[str], list[str]]:
    """Two columns of paragraphs in body type, no headings, white between paragraphs: the
    left ones of 4 to 6 lines, the right ones a line longer or shorter, each right one level
    with its left one (a text beside its translation), unless `breaks_right` gives the right
    column's own paragraph lengths. Returns the draws, the left and the right lines."""
    sizes = [4, 6, 5, 4]
    draws, left_all, right_all = [], [], []
    top = 100.0
    tops = []
    for n, size in enumerate(sizes):
        left = lines(f"q{n}l", size, per_line=7)
        draws += column(72, top, left)
        left_all += left
        tops.append(top)
        top += (size + 1) * PITCH + 10
    right_sizes = breaks_right or [size + (1 if n % 2 else -1) for n, size in enumerate(sizes)]
    top = 100.0
    for n, size in enumerate(right_sizes):
        right = lines(f"q{n}r", size, per_line=7)
        if breaks_right is None:
            top = tops[n]
        draws += column(310, top, right)
        right_all += right
        top += size * PITCH + 10
    return draws, left_all, right_all


def test_paragraphs_side_by_side_read_pair_by_pair(tmp_path: Path) -> None:
    """Fails on the old code: paragraphs set beside their translations, each pair level and
    white between pairs, were read as the whole left column, then the whole right one."""
    draws, _, _ = _paragraph_pairs()
    path = write_pdf(tmp_path / "translation.pdf", [draws], title="Side by side")
    words = re.findall(r"\w+", page_text(path, 1))
    for n in range(3):
        assert words.index(f"q{n}l0") < words.index(f"q{n}r0") < words.index(f"q{n + 1}l0")


def test_columns_whose_paragraphs_break_apart_are_read_column_by_column(tmp_path: Path) -> None:
    """Guards the reading of running columns: white before paragraphs in both, one break of
    the right column level with one of the left's by chance, the others apart: each column
    is read whole."""
    draws, left, right = _paragraph_pairs(breaks_right=[5, 4, 3, 8])
    path = write_pdf(tmp_path / "columns.pdf", [draws], title="Running columns")
    words = re.findall(r"\w+", page_text(path, 1))
    assert words.index("q3l0") < words.index("q0r0")
    assert score([*left, *right], " ".join(words)) >= 0.9


def test_columns_beside_marks_kept_off_the_page_are_read_column_by_column(tmp_path: Path) -> None:
    """Fails on the old code: a few words set three page widths off the page (a parallel
    text's marks, kept there) made the text seem that wide, its gutter a margin: the two
    columns were read across, line by line."""
    left, right = lines("le", 30), lines("ri", 30)
    marks = [(1800 + 200 * (i % 2), 150 + 80 * i, f"mark {i}", "Helvetica", 9) for i in range(4)]
    draws = [*column(72, 100, left), *column(310, 100, right), *marks]
    path = write_pdf(tmp_path / "offpage.pdf", [draws], title="Marks off the page")
    words = re.findall(r"\w+", page_text(path, 1))
    assert words.index("le179") < words.index("ri0")
    assert score([*left, *right], " ".join(w for w in words if w != "mark")) >= 0.9


def test_small_notes_beside_a_short_section_stay_together(tmp_path: Path) -> None:
    """Fails on the old code: beside fewer than ten lines of text, a three-line note of keys
    in smaller type set between the text's lines was glued line by line onto the text
    ('width=2pt ab6 ab7 ...')."""
    body = lines("sh", 7, per_line=9)
    notes = ["style=dashed,", "width=2pt,", "shift=thick"]
    draws = column(150, 300, body)
    draws += [(40, 300 + i * 7.5, t, "Helvetica", 6.4) for i, t in enumerate(notes)]
    path = write_pdf(tmp_path / "short.pdf", [draws], title="Short section")
    text = " ".join(page_text(path, 1).split())
    assert " ".join(notes) in text
    assert score(body, text) >= 0.95


def test_names_in_the_margin_lines_apart_open_their_paragraphs(tmp_path: Path) -> None:
    """Fails on the old code: fixed-pitch names set in the margin beside the paragraphs they
    name were taken for a listing beside its output and read first, all together."""
    body = lines("pa", 20, per_line=12)
    names = {0: "strip", 8: "preCutedStrip", 13: "postCutedStrip", 17: "stripsep"}
    draws = column(154, 100, body)
    draws += [(80, 100 + k * PITCH, name, "Courier", 7.5) for k, name in names.items()]
    path = write_pdf(tmp_path / "names.pdf", [draws], title="Names in the margin")
    text = page_text(path, 1)
    for k, name in names.items():
        assert (text.index(body[k - 1]) if k else -1) < text.index(name) < text.index(body[k])


def test_page_foot_under_one_column_comes_after_the_columns(tmp_path: Path) -> None:
    """Fails on the old code: a page's foot far below columns that end high on the page,
    standing under one of them, was read with that column, before the next one."""
    left, right = lines("fl", 8), lines("fr", 8)
    foot = "Annual report of the example company"
    draws = [*column(72, 100, left), *column(310, 100, right)]
    draws.append((90, 760, foot, "Helvetica", 8))
    path = write_pdf(tmp_path / "foot.pdf", [draws], title="Foot")
    text = page_text(path, 1)
    assert text.index(left[-1]) < text.index(right[0]) < text.index(right[-1]) < text.index(foot)


def test_long_margin_note_line_stays_with_its_note(tmp_path: Path) -> None:
    """Fails on the old code: a note line long enough to run past the strip chosen between
    the notes and the text (but short of the text) was taken for text, split from its note."""
    body = lines("lm", 20, per_line=5)
    notes = ["custom-line=", "[ornament=85] (BOT) to (TOP);},", "extend-top=-24pt,"]
    draws = column(144, 100, body)
    draws += [(40, 100 + 5 * PITCH + i * 9.5, t, "Helvetica", 6.4) for i, t in enumerate(notes)]
    path = write_pdf(tmp_path / "long.pdf", [draws], title="Long note line")
    text = " ".join(page_text(path, 1).split())
    assert " ".join(notes) in text
    assert score(body, text) >= 0.9


def test_short_letter_whose_long_lines_cross_every_strip_is_read(tmp_path: Path) -> None:
    """A few short lines and two long ones, all from one left edge: the strip left of the long
    lines' ends has no text beyond it (an earlier form of the small-notes rule crashed here)."""
    texts = ["May 5, 2023", "To Whom it May Concern:", "There were " + "many bottles " * 8]
    texts += ["2023. A total of 3 trucks were used for 15 hours.", "Best Regards,", "Mallori"]
    draws = [(72, 80 + 12 * i, t, "Helvetica", 12) for i, t in enumerate(texts)]
    path = write_pdf(tmp_path / "memo.pdf", [draws], title="Memo")
    assert " ".join(page_text(path, 1).split()) == " ".join(" ".join(texts).split())


def test_left_column_under_a_figure_is_still_read_first(tmp_path: Path) -> None:
    """Guards the rule that starts a band where its narrow side begins: two columns of one
    width, the left one under a figure (no text) at the top, are read left column first."""
    left, right = lines("fg", 25), lines("rc", 40)
    draws = [*column(72, 100 + 15 * PITCH, left), *column(310, 100, right)]
    path = write_pdf(tmp_path / "figure.pdf", [draws], title="Figure atop")
    text = page_text(path, 1)
    assert text.index(left[-1]) < text.index(right[0])
    assert score([*left, *right], text) >= 0.95


def test_small_line_numbers_stay_on_their_indented_code_lines(tmp_path: Path) -> None:
    """Fails on the old code: a listing's line numbers in small type (a documented package's
    code, numbered in \\scriptsize) stood far from the indented lines' code, so each such
    number was taken for a corner mark and read as a line of its own after its code."""
    reference, draws = [], []
    for i in range(30):
        number, code = str(101 + i + i // 4), f"\\cmd{i}a{{x{i}}} \\cmd{i}b{{y{i}}} %"
        y = 100 + i * 12
        draws += [(60, y, number, "Helvetica", 5), (80 + 24 * (i % 3), y, code, "Courier", 10)]
        reference.append(f"{number} cmd{i}a x{i} cmd{i}b y{i}")
    path = write_pdf(tmp_path / "listing.pdf", [draws], title="Numbered code")
    assert score(reference, page_text(path, 1)) >= 0.95


def test_contents_page_numbers_stay_on_their_entries(tmp_path: Path) -> None:
    """Fails on the old code: the page numbers down a contents page's right edge (one or two
    digits, after leader dots, under a running foot as wide as the page) were taken for notes
    in the margin and read as one block before the entries."""
    reference, draws = [], []
    for i in range(30):
        y = 100 + i * 14
        entry = f"{i + 1} Entry " + " ".join(f"en{i}w{k}" for k in range(2 + i % 5))
        draws.append((90, y, entry, "Helvetica", 10))
        # leader dots on a grid from just past the entry's end
        draws += [(x, y, ".", "Helvetica", 10) for x in range(150 + 30 * (i % 5), 480, 6)]
        draws.append((500, y, str(2 + 3 * i // 4), "Helvetica", 10))
        reference.append(f"{entry} {2 + 3 * i // 4}")
    # the running foot's right end reaches past the numbers
    draws += [
        (90, 560, "The package", "Helvetica", 10),
        (486, 560, "Page 2 of 68", "Helvetica", 10),
    ]
    path = write_pdf(tmp_path / "contents.pdf", [draws], title="Contents")
    assert score(reference, page_text(path, 1)) >= 0.9


def test_table_amounts_above_a_listing_stay_on_their_rows(tmp_path: Path) -> None:
    """Fails on the old code: a table's last rows (a label, its amount far right) ending just
    above a listing in a fixed-pitch font were taken for the listing's output beside it, and
    the amounts were read after the code as one block."""
    reference, draws = [], []
    for i in range(4):
        y = 100 + i * 14
        label, amount = f"From row{i}a to row{i}b total", f"{i + 1}23 456"
        draws += [(90, y, label, "Helvetica", 10), (352, y, amount, "Helvetica", 10)]
        reference.append(f"{label} {amount}")
    for i in range(12):
        code = f"\\amount[id=k{i}]{{Item{i}}}{{{i}000}}"
        draws.append((90, 160 + i * 12, code, "Courier", 10))
        reference.append(f"amount id k{i} Item{i} {i}000")
    path = write_pdf(tmp_path / "amounts.pdf", [draws], title="Amounts")
    assert score(reference, page_text(path, 1)) >= 0.9


def test_option_names_in_a_fixed_pitch_font_stay_on_their_rows(tmp_path: Path) -> None:
    """Fails on the old code: a table of option names in a fixed-pitch font, each on the row
    of what it does, was taken for a listing beside its output, and all the names were read
    before all the descriptions."""
    reference, draws = [], []
    for i in range(10):
        y = 100 + i * 12
        name, meaning = f"option{i}", f"What option number {i} sets for the frame drawn round it"
        draws += [(72, y, name, "Courier", 10), (170, y, meaning, "Helvetica", 10)]
        reference.append(f"{name} {meaning}")
    path = write_pdf(tmp_path / "options.pdf", [draws], title="Options")
    assert score(reference, page_text(path, 1)) >= 0.9


def test_stacked_macro_names_in_the_margin_read_before_their_text(tmp_path: Path) -> None:
    """Fails on the old code: a documented package's page with many macro names stacked in
    the margin (16 names beside 40 lines, more than 0.3 of them) was read across, each name
    glued to the line beside it."""
    body = lines("tx", 40, per_line=8)
    draws = column(160, 100, body)
    reference: list[str] = []
    starts = {0: 4, 10: 3, 20: 4, 30: 5}  # row -> names stacked from there
    for row, text in enumerate(body):
        if row in starts:
            names = [f"\\macro{row}n{k}" for k in range(starts[row])]
            draws += [(72, 100 + (row + k) * PITCH, n, "Helvetica", 9) for k, n in enumerate(names)]
            reference += [n.lstrip("\\") for n in names]
        reference.append(text)
    path = write_pdf(tmp_path / "names.pdf", [draws], title="Macro names")
    assert score(reference, page_text(path, 1)) >= 0.9


def test_listing_with_two_statements_a_line_is_read_line_by_line(tmp_path: Path) -> None:
    """Fails on the old code: a listing whose first lines hold two statements each, aligned
    in two parts, was read as two columns: its left parts and the lines below them, then the
    right parts."""
    reference, draws = [], []
    for i in range(12):
        y = 100 + i * 12
        if i < 4:
            draws.append((72, y, f"\\usepackage{{left{i}}}", "Courier", 10))
            draws.append((300, y, f"\\usepackage{{right{i}}}", "Courier", 10))
            reference.append(f"usepackage left{i} usepackage right{i}")
        else:
            draws.append((72, y, f"\\setcounter{{line{i}}}{{value{i}}}", "Courier", 10))
            reference.append(f"setcounter line{i} value{i}")
    path = write_pdf(tmp_path / "listing2.pdf", [draws], title="Two statements a line")
    assert score(reference, page_text(path, 1)) >= 0.9


def _pdf_with_a_to_unicode_map(path: Path, text: bytes, to_unicode: dict[int, str]) -> Path:
    """One page of Times-Italic text whose codes the font's ToUnicode map names (hex UTF-16)."""
    pairs = b" ".join(b"<%02X> <%s>" % (code, hex16.encode()) for code, hex16 in to_unicode.items())
    cmap = (
        b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /T def\n"
        b"1 begincodespacerange <00> <FF> endcodespacerange\n"
        b"%d beginbfchar %s endbfchar\n"
        % (len(to_unicode), pairs)
        + b"endcmap CMapName currentdict /CMap defineresource pop end end\n"
    )
    content = b"BT /F1 12 Tf 72 700 Td (" + text + b") Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Times-Italic /ToUnicode 6 0 R >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(cmap), cmap),
    ]
    return write_objects(path, objects)


def test_math_italic_letters_beyond_the_first_plane_are_read(tmp_path: Path) -> None:
    """Fails on the old code: a character beyond the first Unicode plane (unicode-math's
    italic 𝑎, U+1D44E) comes from pdfium as two UTF-16 halves, and both were dropped as
    unmapped glyphs: '𝑎𝑏 > 0' became '> 0'. Math letters are read as the letters they style."""
    import pypdfium2 as pdfium

    from kb_search.formats.pdf.layout import page_fragments

    path = _pdf_with_a_to_unicode_map(
        tmp_path / "math.pdf", b"ab + c", {0x61: "D835DC4E", 0x62: "D835DC4F", 0x63: "D835DC50"}
    )
    doc = pdfium.PdfDocument(str(path))
    try:
        text = " ".join(f.text for f in page_fragments(doc[0]))
    finally:
        doc.close()
    assert text == "ab + c"


def test_a_table_first_column_check_is_not_quadratic_in_the_page() -> None:
    """Whether notes stand on nearly every row of the text is found by bisection: a page of
    thousands of rows and notes (a generated listing, a hostile file) takes milliseconds, not
    the seconds of comparing every row with every note."""
    import time

    from kb_search.formats.pdf.layout import Frag
    from kb_search.formats.pdf.margin_notes import _a_cell_a_row

    text = [
        Frag(f"row {i} of the text", 200, i * 2.0, 500, i * 2.0 + 1.5, 1.5) for i in range(6000)
    ]
    notes = [Frag(f"n{i}", 20, i * 4.0 + 5000, 60, i * 4.0 + 5001.5, 1.5) for i in range(3000)]
    started = time.process_time()
    assert not _a_cell_a_row(notes, text)
    assert time.process_time() - started < 1.0


def test_a_figure_is_recognised_in_linear_time() -> None:
    """A piece that is a figure alone ('12', '-4.5 %') is matched without backtracking: a
    figure followed by 100,000 spaces and a letter (a hostile page's one piece) is read at
    once, where two repeats that both take white space took a minute."""
    import time

    from kb_search.formats.pdf.layout import FIGURE_RE

    for text, figure in [("12", True), ("-4.5 %", True), ("(1 234,00) ", True), ("12 a", False)]:
        assert bool(FIGURE_RE.match(text)) is figure
    started = time.process_time()
    assert FIGURE_RE.match("1" + " " * 100_000 + "x") is None
    assert FIGURE_RE.match("1" + "\u2009" * 100_000 + "%x") is None
    assert time.process_time() - started < 0.5


def test_text_far_off_the_page_is_read_last_without_measuring_its_distance(
    tmp_path: Path,
) -> None:
    """A string set 30 million points to the right of the page (a broken or hostile file) is
    read after the page's text; the columns are looked for across the page, not across the
    distance to it point by point (seconds and half a gigabyte per page before)."""
    import time

    path = tmp_path / "far.pdf"
    canvas = Canvas(str(path))
    canvas.setFont("Helvetica", 10)
    for n in range(20):
        canvas.drawString(72, 700 - n * 14, f"An ordinary line of body text number {n} here")
    canvas.drawString(3e7, 400, "far away")
    canvas.showPage()
    canvas.save()
    started = time.process_time()
    text = " ".join(c.text for c in parse_pdf(path, ChunkSettings()).chunks)
    assert time.process_time() - started < 2.0
    assert text.index("number 19 here") < text.index("far away")


def test_a_blank_fragment_many_lines_tall_makes_no_line() -> None:
    """Fails on the unreviewed code (an empty line at the page's foot): blank text many lines
    high passed the dotted-rule test (no characters but dots and white) and was set aside as
    a line of its own, where blank text was always dropped."""
    from kb_search.formats.pdf.layout import Frag
    from kb_search.formats.pdf.reading_order import layout

    body = [
        Frag(f"Body text line {i} here", 50, 20 + i * 12, 300, 29 + i * 12, 9) for i in range(10)
    ]
    for blank in ("   ", ""):
        lines = layout([*body, Frag(blank, 320, 20, 324, 140, 9)], 1, 612.0)
        assert [line.text for line in lines] == [f"Body text line {i} here" for i in range(10)]
    dotted = layout([*body, Frag(". . . . . . .", 320, 20, 324, 140, 9)], 1, 612.0)
    assert dotted[-1].text == ". . . . . . ."  # a rule drawn in dots: read last, as before


def test_dotted_rule_between_columns_is_no_cell_of_their_rows(tmp_path: Path) -> None:
    """Fails on the old code: a rule of dots set in type between two columns (multicolrule's
    'dots' style) is one fragment many lines high; every row it spans took it for a cell and
    the lines of a column beside it were joined into one row of cells."""
    left, right = lines("dl", 30, per_line=8), lines("dr", 30, per_line=8)
    draws = [*column(72, 100, left), *column(300, 100, right)]
    draws += [(290, 100 + 20 * PITCH + 3.4 * k, ".", "Helvetica", 9) for k in range(24)]
    path = write_pdf(tmp_path / "dots.pdf", [draws], title="Dotted rule")
    text = page_text(path, 1)
    assert "|" not in text
    assert score([*left, *right], text) >= 0.95


def test_column_pair_level_with_a_heading_starts_a_new_band(tmp_path: Path) -> None:
    """Fails on the old code: a section of balanced columns, white across both, then a heading
    in the left column with the next section's right column going on level with it (multicol
    sections under 'New for Version 1.3'): the left columns of both sections were read before
    the right ones."""
    first_left, first_right = lines("fa", 8), lines("fb", 8)
    heading = "New for version three"
    second_left, second_right = lines("sa", 10), lines("sb", 11)
    top = 100 + 8 * PITCH + 14
    draws = [*column(72, 100, first_left), *column(310, 100, first_right)]
    draws += [(72, top, heading, "Helvetica-Bold", 11)]
    draws += [*column(72, top + 16, second_left), *column(310, top + 1, second_right)]
    path = write_pdf(tmp_path / "level.pdf", [draws], title="Level heading")
    words = re.findall(r"\w+", page_text(path, 1))
    assert words.index("fa47") < words.index("fb0") < words.index("fb47") < words.index("sa0")
    assert words.index("sa59") < words.index("sb0")


def test_page_numbers_above_a_band_stay_on_their_rows(tmp_path: Path) -> None:
    """Fails on the old code: a running head's page number and the contents page's last
    entries above two columns, their page numbers right of the columns' gutter, were read as
    the right column's first lines, far from their rows."""
    entries = [("INTRODUCTION", "2"), ("Change History", "24"), ("Index", "24")]
    draws = [(150, 60 + 20 * k, name, "Helvetica", 10) for k, (name, _) in enumerate(entries)]
    draws += [(520, 60 + 20 * k, number, "Helvetica", 10) for k, (_, number) in enumerate(entries)]
    left, right = lines("pl", 30), lines("pr", 30)
    draws += [*column(72, 140, left), *column(310, 140, right)]
    path = write_pdf(tmp_path / "numbers.pdf", [draws], title="Numbers")
    text = " ".join(page_text(path, 1).split())
    for name, number in entries:
        assert f"{name} {number}" in text
    assert score([*left, *right], text) >= 0.95


def _two_paragraphs(prefix: str, x: float, count: int = 8) -> tuple[list, list[str], list[str]]:
    """Two paragraphs of `count` lines of one width in one column: the first ends on a short
    line, the second is indented."""
    first, second = (
        [" ".join(f"{prefix}{part}{i * 10 + k:03d}" for k in range(10)) for i in range(count)]
        for part in "ab"
    )
    first[-1] = " ".join(first[-1].split()[:3])
    draws = column(x, 100, first, 10)
    draws += [(x + 12, 100 + count * PITCH, second[0], "Helvetica", 10)]
    draws += column(x, 100 + (count + 1) * PITCH, second[1:], 10)
    return draws, first, second


def test_remark_beside_a_paragraph_is_read_before_it_not_inside_it(tmp_path: Path) -> None:
    """Fails on the old code: a reviewer's one-line remark in the margin, level with the third
    line of a paragraph, opened that line and cut the sentence in two."""
    draws, first, second = _two_paragraphs("rv", 130)
    remarks = ["It looks like Latin.", "Is this really Latin?"]
    draws += [(40, 100 + 2 * PITCH, remarks[0], "Helvetica", 7)]
    draws += [(40, 100 + 12 * PITCH, remarks[1], "Helvetica", 7)]
    # a macro's name in a text font, its closing bracket a little apart in a symbol font, is a
    # name, not a remark: it still opens its line
    name_width = stringWidth("\\abb<Kennung", "Helvetica", 7)
    draws += [(40, 100 + 15 * PITCH, "\\abb<Kennung", "Helvetica", 7)]
    draws += [(43 + name_width, 100 + 15 * PITCH, ">", "Times-Roman", 7)]
    path = write_pdf(tmp_path / "remarks.pdf", [draws], title="Remarks")
    text = " ".join(page_text(path, 1).split())
    assert " ".join(first) in text and " ".join(second[:7]) in text
    assert text.index(remarks[0]) < text.index(first[0])
    assert text.index(first[-1]) < text.index(remarks[1]) < text.index(second[0])
    assert re.search(r"\\abb<Kennung ?> " + second[7], text)


def test_ruler_figures_among_margin_remarks_do_not_cut_the_text(tmp_path: Path) -> None:
    """Fails on the old code: a page image's ruler (bare figures down the margin at a pitch of
    its own) beside a remark of several lines was read as notes, each figure opening a line
    of the text and cutting its sentences."""
    draws, first, second = _two_paragraphs("ru", 72, count=16)
    draws += [(440, 96 + 16.4 * k, str(96 - 4 * k), "Helvetica", 7) for k in range(12)]
    remark = ["Important note: you", "really should be", "writing proper latin"]
    draws += [(470, 100 + (12 + k) * PITCH, t, "Helvetica", 7) for k, t in enumerate(remark)]
    path = write_pdf(tmp_path / "ruler.pdf", [draws], title="Ruler")
    text = " ".join(page_text(path, 1).split())
    assert " ".join(first) in text and " ".join(second) in text
    assert " ".join(remark) in text


def test_remarks_are_placed_by_bisection_not_against_every_line() -> None:
    """Thousands of remarks beside thousands of lines (a hostile file) are placed in well under
    a second: each remark finds the line level with it, and its paragraph, by bisection."""
    import time

    from kb_search.formats.pdf.layout import Frag
    from kb_search.formats.pdf.margin_notes import _notes_before_their_text

    text = [Frag(f"line {i} of the text", 200, i * 12.0, 500, i * 12.0 + 9, 9) for i in range(6000)]
    notes = [
        Frag(f"remark number {i}", 20, i * 36.0 + 1, 150, i * 36.0 + 8, 7) for i in range(2000)
    ]
    started = time.process_time()
    blocks = _notes_before_their_text(notes, text)
    assert time.process_time() - started < 1.0
    assert sum(len(block) for block in blocks) == len(text) + len(notes)


def _tall_page(path: Path, rows: int, draw) -> Path:
    """One page tall enough for `rows` rows of 4-point type (a generated report)."""
    height = rows * 4.6 + 100
    canvas = Canvas(str(path), pagesize=(612, height))
    canvas.setFont("Helvetica", 4)
    y = height - 50
    for i in range(rows):
        y -= 4.6 * draw(canvas, y, i)
    canvas.showPage()
    canvas.save()
    return path


def test_a_page_of_thousands_of_table_rows_is_read_in_linear_time(tmp_path: Path) -> None:
    """Fails on the old code (minutes): a generated table of 3,000 rows whose white strips run
    from top to bottom was followed and judged as a band of columns from every one of its
    rows again, each time over all the rows below. It parses in seconds and keeps its rows."""
    import time

    def table_row(canvas: Canvas, y: float, i: int) -> float:
        canvas.drawString(72, y, f"name{i}")
        canvas.drawString(200, y, f"{i * 7}")
        canvas.drawString(330, y, f"colour{i % 5} more")
        return 2 if i % 3 == 0 else 1  # a white line every third row: paragraph-like breaks

    path = _tall_page(tmp_path / "rows.pdf", 3000, table_row)
    started = time.process_time()
    text = page_text(path, 1)
    assert time.process_time() - started < 6.0
    assert "name2999 | 20993 | colour4 more" in text
    assert text.index("name10 |") < text.index("name2000 |")


def test_a_paragraph_of_thousands_of_lines_is_joined_in_linear_time(tmp_path: Path) -> None:
    """Fails on the old code (15 s): each line of a paragraph looked for a hyphen at the end
    of all the lines joined before it. A one-column page of 3,000 lines parses in seconds."""
    import time

    def prose_line(canvas: Canvas, y: float, i: int) -> float:
        canvas.drawString(72, y, f"line {i} of plain prose that runs across the page and on")
        return 1

    path = _tall_page(tmp_path / "prose.pdf", 3000, prose_line)
    started = time.process_time()
    text = page_text(path, 1)
    assert time.process_time() - started < 4.0
    assert "page and on line 2999 of plain prose" in text


def test_poster_box_title_beside_a_column_is_read_after_that_column(tmp_path: Path) -> None:
    """Fails on the old code: on a poster, the next box's title (bold, larger) sits right of
    a column's first line, white lines wide between them; it was read as that line's end
    ('... vitae Central Picture'), cutting the column's first two lines apart."""
    left, middle = lines("le", 24, per_line=5), lines("mi", 24, per_line=5)
    title = "Central Picture"
    draws = [*column(40, 100, left, 10), *column(240, 100, middle, 10)]
    draws.append((440, 99, title, "Helvetica-Bold", 15))
    path = write_pdf(tmp_path / "poster.pdf", [draws], title="Poster")
    text = page_text(path, 1)
    assert score([*left, *middle, title], text) >= 0.95, text
    assert text.index(middle[-1]) < text.index(title)


def test_a_glyph_at_a_non_finite_position_is_dropped(tmp_path: Path, monkeypatch) -> None:
    """Fails on the old code: a glyph whose box pdfium reports as NaN or infinity (a hostile
    page's matrix) became a fragment at NaN, and reading order crashed on `round(nan)`. Such a
    glyph stands nowhere on the page: it is dropped, and the page's other text is read."""
    import pypdfium2.raw as pdfium_c

    from kb_search.formats.pdf import layout

    real = pdfium_c.FPDFText_GetLooseCharBox
    bad = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}

    for name, value in bad.items():

        def box(textpage, index, rect, value=value):
            found = real(textpage, index, rect)
            if index % 5 == 2:  # some glyphs of every line
                rect.left = value
                rect.top = value
            return found

        monkeypatch.setattr(layout.pdfium_c, "FPDFText_GetLooseCharBox", box)
        body = [
            (72, 100 + i * 14, f"line {i} of plain words to read", "Helvetica", 11)
            for i in range(30)
        ]
        path = write_pdf(tmp_path / f"{name}.pdf", [body])
        parsed = parse_pdf(path, SETTINGS)
        text = " ".join(c.text for c in parsed.chunks)
        assert "line 3 of plai" in text and len(text.split()) > 150  # the rest of each line
        monkeypatch.setattr(layout.pdfium_c, "FPDFText_GetLooseCharBox", real)


def test_a_word_goes_on_after_an_accent_drawn_back_over_it(tmp_path: Path) -> None:
    """Fails on the old code: TeX draws a spacing accent after the letters of a word, back over
    one of them ('Devanagar', then a macron over its 'a'), and then the rest ('i ...'). The
    accent broke the run, so the letter after it started a run of its own, set apart by a
    blank ('Devanāgar i are', or a table row 'Devanagar | ¯ | i are' in the page's layout)."""
    import pypdfium2 as pdfium

    from kb_search.formats.pdf.layout import page_fragments

    path = tmp_path / "accent.pdf"
    canvas = Canvas(str(path))
    canvas.setFont("Times-Roman", 11)
    for k in range(12):
        y = HEIGHT - 100 - 14 * k
        first = (
            "Scripts such as Devanagar" if k == 5 else f"Line {k} of the plain text that runs on"
        )
        canvas.drawString(72, y, first)
        if k == 5:
            over = 72 + stringWidth("Scripts such as Dev", "Times-Roman", 11)
            canvas.drawString(over + 0.2, y + 1, "\u00af")
            rest = "i are written with their own letters"
            canvas.drawString(72 + stringWidth(first, "Times-Roman", 11), y, rest)
    canvas.save()
    doc = pdfium.PdfDocument(str(path))
    try:
        texts = [f.text for f in page_fragments(doc[0])]
    finally:
        doc.close()
    assert "Scripts such as Devanagari are written with their own letters" in texts
    text = " ".join(chunk.text for chunk in parse_pdf(path, SETTINGS).chunks)
    assert "Scripts such as Dev\u0101nagari are written" in text


def _justified_page(path: Path, line: list[tuple[str, float]]) -> Path:
    """A paragraph of plain lines around one line set word by word, each word followed by a
    blank of the given width, as a justifying typesetter places them."""
    canvas = Canvas(str(path))
    canvas.setFont("Times-Roman", 9)
    for k in range(12):
        y = HEIGHT - 100 - 11 * k
        if k != 5:
            canvas.drawString(72, y, f"Line {k} of the plain text that runs on to the end")
            continue
        x = 72.0
        for word, blank in line:
            canvas.drawString(x, y, word)
            x += stringWidth(word, "Times-Roman", 9) + blank
    canvas.save()
    return path


def test_a_justified_line_is_not_split_at_its_sentence_ends(tmp_path: Path) -> None:
    """Fails on the old code: TeX sets a wider blank after a sentence, and a stretched line
    stretches it further, past a line's height: the line became three runs, read as a table's
    row ('are supported. | Say this to select a language. | For other'). A blank up to 2.5
    times the line's word blank after a sentence's end keeps the run whole."""
    words = [
        "are",
        "supported.",
        "Say",
        "this",
        "to",
        "select",
        "a",
        "language.",
        "For",
        "other",
        "lan-",
    ]
    line = [(w, 11.5 if w.endswith(".") else 5.0) for w in words]
    text = page_text(_justified_page(tmp_path / "justified.pdf", line), 1)
    assert "are supported. Say this to select a language. For other lan-" in text


def test_leader_dots_and_figures_after_a_period_stay_apart(tmp_path: Path) -> None:
    """Passes on the old code and after (the rule's bounds): a wide gap after leader dots, or
    before a figure, stays a break between an index's or a table's cells."""
    line = [("Sections", 2.5), (".", 2.5), (".", 2.5), (".", 11.5), ("12", 30.0)]
    line += [("Another", 2.5), ("item.", 11.5), ("14", 0.0)]
    text = page_text(_justified_page(tmp_path / "cells.pdf", line), 1)
    assert "Sections . . . | 12 | Another item. | 14" in text


def _two_up(path: Path, left: list[str], right: list[str]) -> Path:
    """Two columns of short lines, row by row on the same baselines."""
    draws = [(72, 100 + 12 * k, text, "Helvetica", 9) for k, text in enumerate(left)]
    draws += [(320, 100 + 12 * k, text, "Helvetica", 9) for k, text in enumerate(right)]
    return write_pdf(path, [draws])


INDEX_LEFT = [
    "abacus 3",
    "absolute value 4, 7",
    "accent 2",
    "B",
    "baseline 5",
    "bibliography 1, 8",
    "box 6",
    "C",
    "caption 2, 3",
    "chapter 1",
    "column 4",
    "cross-reference 7",
]
INDEX_RIGHT = [
    "margin 2",
    "math mode 5, 6",
    "minipage 3",
    "N",
    "newline 4",
    "numbering 1, 2",
    "O",
    "options 8",
    "P",
    "page style 6",
    "paragraph 3",
    "preamble 1",
]


def test_an_index_in_two_columns_is_read_column_by_column(tmp_path: Path) -> None:
    """Fails on the old code: an index's or a glossary's entries are short lines, no prose,
    and two columns of them were read across as a table's rows ('abacus 3 margin 2'). Lines
    of words and their pages, in alphabetical order on both sides, are an index's columns."""
    text = page_text(_two_up(tmp_path / "index.pdf", INDEX_LEFT, INDEX_RIGHT), 1)
    assert " ".join(INDEX_LEFT) in " ".join(text.split())
    assert " ".join(INDEX_RIGHT) in " ".join(text.split())


def test_two_columns_of_labelled_figures_out_of_order_are_read_across(tmp_path: Path) -> None:
    """Passes on the old code and after (the rule's bound): labels and their values in no
    alphabetical order (a form, a table of settings set two up) are rows, read across."""
    left = ["width 1", "depth 2", "zone 3", "alpha 4", "height 5", "mass 6"]
    right = ["speed 7", "angle 8", "weight 9", "count 10", "rate 11", "load 12"]
    text = " ".join(page_text(_two_up(tmp_path / "form.pdf", left, right), 1).split())
    assert "width 1 speed 7 depth 2 angle 8" in text


def test_a_foot_under_the_first_of_four_columns_is_read_after_them(tmp_path: Path) -> None:
    """Fails on the old code: a newspaper page's foot in small type, under the first columns
    of four that run on below the fourth, stood on one side of the widest gutter and was read
    with those columns, between the third and the fourth. A band's last row in smaller type
    under more white than the columns' leading is read after the band."""
    draws = []
    for c, prefix in enumerate(("qa", "qb", "qc", "qd")):
        column = lines(prefix, 40 if c < 3 else 37, per_line=4)
        draws += [(40 + 132 * c, 100 + 12 * k, t, "Helvetica", 10) for k, t in enumerate(column)]
    foot = "Printed by the newspaper press of the town"
    draws.append((44, 100 + 12 * 39 + 33, foot, "Helvetica", 7))
    text = " ".join(page_text(write_pdf(tmp_path / "news.pdf", [draws]), 1).split())
    assert text.index("qd0 ") < text.index(foot)
    assert text.index("qc0 ") < text.index("qd0 ")
