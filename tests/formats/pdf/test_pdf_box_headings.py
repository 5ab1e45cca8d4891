"""Headings a reader sees on boxed and crowded pages: a reference card's box titles head their
boxes, while a label inside a figure or a form, or a table of contents' title, heads nothing
beyond itself.

Each case is a flaw seen on real PDFs, rebuilt with reportlab: an exercise chart's tiny bold
'4 times a day' became the top heading of a booklet's last 35 pages, and the booklet's
'Contents' (set larger than its chapters) the parent of every chapter.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("reportlab")

from kb_search.formats.pdf.layout import Line  # noqa: E402
from kb_search.formats.pdf.parse import parse_pdf  # noqa: E402
from kb_search.formats.pdf.structure import heading_level  # noqa: E402
from kb_search.parsed import ChunkSettings  # noqa: E402
from pdf_samples import PageSpec, body, lines_of, words, write_pdf  # noqa: E402

SETTINGS = ChunkSettings(max_tokens=200, min_tokens=40)
BOLD = "Helvetica-Bold"


def test_a_tiny_numbered_label_in_a_figure_is_no_heading() -> None:
    """Fails on the old code: a bold line that starts with a number made a level-1 heading
    at any size, so a 3pt label in an exercise chart outranked every chapter."""
    label = Line("4 times a day", 37, 327, 303, 343, 309, 2.9, True, 3)
    assert heading_level(label, 15.0, [37.7, 27.1, 18.8]) is None
    section = Line("4 Results", 37, 72, 303, 160, 318, 15.0, True, 0)
    assert heading_level(section, 15.0, [37.7, 27.1, 18.8]) == 1
    # small capitals measure near the x-height: 'I. Introduction' at 5.5 over a 9.5 body
    small_caps = Line("I. Introduction", 1, 131, 547, 209, 554, 5.5, True, 1)
    assert heading_level(small_caps, 9.5, [22.9]) == 1


def booklet() -> list[PageSpec]:
    """A booklet: 'Contents' set larger than the chapters, a chapter whose page holds an
    exercise chart with tiny bold labels, and a later chapter."""
    contents: PageSpec = [(72, 80, "Contents", BOLD, 30)]
    contents += [(72, 120 + 20 * i, f"Chapter entry {i}", "Helvetica", 11) for i in range(5)]
    treatment: PageSpec = [(72, 80, "Treatment", BOLD, 22)]
    treatment += body(lines_of(words(90, "surg")), top=110, size=11)
    treatment += [(300, 300, "Repeat each exercise", BOLD, 3), (300, 304, "4 times a day", BOLD, 3)]
    treatment += [(300, 310, "Lift your shoulder slowly", "Helvetica", 2)]
    treatment += body(lines_of(words(90, "arm")), top=330, size=11)
    living: PageSpec = [(72, 80, "Living with the illness", BOLD, 22)]
    living += body(lines_of(words(120, "live")), top=110, size=11)
    return [contents, treatment, living]


def test_a_label_or_the_contents_heads_no_chapter(tmp_path: Path) -> None:
    """Fails on the old code: chunks of the last chapter were headed '4 times a day > ...',
    and every chapter sat under 'Contents'."""
    doc = parse_pdf(write_pdf(tmp_path / "booklet.pdf", booklet(), title="A booklet"), SETTINGS)
    chains = {c.heading for c in doc.chunks}
    assert not any("4 times a day" in (h or "") for h in chains)
    assert {c.heading for c in doc.chunks if "live0" in c.text} == {"Living with the illness"}
    assert {c.heading for c in doc.chunks if "surg0" in c.text} == {"Treatment"}


def card_page() -> PageSpec:
    """A reference card's narrow box: its bold title wraps onto a second line that starts
    with 'and', then the box's entries."""
    page: PageSpec = [(72, 70, "Poetry Typesetting Card", BOLD, 16)]
    page += [(72, 110, "Setup", BOLD, 11)]
    page += body(lines_of(words(60, "setup")), top=126, size=10)
    page += [
        (72, 250, "Annotation by Paragraph", BOLD, 11),
        (72, 263, "and Sentence Number", BOLD, 11),
    ]
    page += body(lines_of(words(60, "annot")), top=280, size=10)
    return page


def test_a_box_title_wrapped_over_two_lines_is_one_heading(tmp_path: Path) -> None:
    """Fails on the old code: 'and Sentence Number' starts like running text, so it fell
    out of the heading into the box's text, and the chunk carried half its title."""
    doc = parse_pdf(write_pdf(tmp_path / "card.pdf", [card_page()], title="Card"), SETTINGS)
    assert {c.heading for c in doc.chunks if "annot0" in c.text} == {
        "Annotation by Paragraph and Sentence Number"
    }
    assert {c.heading for c in doc.chunks if "setup0" in c.text} == {"Setup"}


def test_a_field_beside_a_title_is_no_heading() -> None:
    """Fails on the old code: a recipe card's 'Serves: 2', set as large as the recipe's name
    beside it, headed the next recipe's ingredients."""
    field = Line("Serves: 2", 1, 510, 412, 556, 427, 15.1, False, 2)
    assert heading_level(field, 10.5, [15.1]) is None
    assert (
        heading_level(Line("Cook Time: 10 min.", 1, 72, 0, 200, 15, 15.1, True, 0), 10.5, [15.1])
        is None
    )
    titled = Line("Chapter 2: Methods", 1, 72, 412, 300, 427, 15.1, False, 0)
    assert heading_level(titled, 10.5, [15.1]) == 1


def test_a_name_and_its_release_number_stays_a_heading() -> None:
    """Fails on the old code: 'Python: 3.12', set large over a release's notes, was taken for
    a form's field ('Serves: 2') and headed nothing; 'Version: 2.3' is still a field."""
    release = Line("Python: 3.12", 1, 72, 412, 200, 427, 15.1, True, 0)
    assert heading_level(release, 10.5, [15.1]) == 1
    field = Line("Version: 2.3", 1, 72, 412, 200, 427, 15.1, True, 0)
    assert heading_level(field, 10.5, [15.1]) is None
