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
    _text(canvas, 72, 80, "Index", "Helvetica-Bold", 14)  # not bookmarked, as is common
    _page_of_text(canvas, "ix", count=60)
    canvas.showPage()
    canvas.save()
    doc = parse_pdf(path, SETTINGS)
    expected = {f"{n} {name}" for n, name in sections} | {"Index"}
    assert {c.heading for c in doc.chunks} == expected


def _page_of_text(canvas: Canvas, marker: str, top: float = 110, count: int = 120) -> None:
    for i, line in enumerate(lines_of(words(count, marker), per_line=10)):
        _text(canvas, 72, top + i * 13, line, "Helvetica", 10)


def test_a_running_head_is_dropped_where_its_page_number_stands_apart(tmp_path: Path) -> None:
    """Fails on the old code: on the page where the section starts, the head's page number was
    extracted as a line of its own, the rest of the head no longer matched the heads of the
    other pages, and it became the section's heading (the real one, lower down, was lost)."""
    path = tmp_path / "heads.pdf"
    canvas = Canvas(str(path))
    canvas.setTitle("Geometry notes")
    head = "4.3. HYPERBOLIC GEOMETRY"
    for i in range(9):
        if i == 4:  # the section starts here; its head's number is read as a line apart
            _text(canvas, 72, 40, str(i + 70), "Helvetica", 8)
            _text(canvas, 380, 52, head, "Helvetica", 8)
            _page_of_text(canvas, "ex", count=60)
            _text(canvas, 72, 300, "4.3 Hyperbolic Geometry", "Helvetica-Bold", 13)
            _page_of_text(canvas, "ey", top=330, count=60)
        else:
            number = str(i + 70)
            text = f"{number} {head}" if i % 2 else f"{head} {number}"
            _text(canvas, 72, 40, text, "Helvetica", 8)
            _page_of_text(canvas, f"{'abcdefghi'[i]}x")
        canvas.showPage()
    canvas.save()
    doc = parse_pdf(path, SETTINGS)
    assert not any(head in c.text or head in (c.heading or "") for c in doc.chunks)
    assert any("4.3 Hyperbolic Geometry" in (c.heading or "") for c in doc.chunks)


def test_page_numbers_set_above_a_deep_bottom_margin_are_dropped(tmp_path: Path) -> None:
    """Fails on the old code: a page number a fifth of the page above its foot lay outside the
    margin that furniture was looked for in, and stayed in the text."""
    path = tmp_path / "folios.pdf"
    canvas = Canvas(str(path))
    canvas.setTitle("Deep margins")
    for i in range(6):
        _page_of_text(canvas, f"{'abcdef'[i]}x", top=90, count=300)
        _text(canvas, 290, HEIGHT * 0.8, str(i + 1), "Helvetica", 10)
        canvas.showPage()
    canvas.save()
    doc = parse_pdf(path, SETTINGS)
    lines = [line.strip() for c in doc.chunks for line in c.text.split("\n")]
    assert not any(line.isdigit() for line in lines)
    assert "ax0" in " ".join(lines) and "fx294" in " ".join(lines)


SLIDE = (364, 273)


def _slide(canvas: Canvas, title: str | None, points: list[str], title_size: float = 14) -> None:
    if title:
        canvas.setFont("Helvetica-Bold", title_size)
        canvas.drawString(12, SLIDE[1] - 24, title)
    canvas.setFont("Helvetica", 10)
    for i, point in enumerate(points):
        canvas.drawString(30, SLIDE[1] - 90 - i * 16, point)
    canvas.showPage()


def test_each_slide_frame_is_a_chunk_under_its_own_title(tmp_path: Path) -> None:
    """Fails on the old code: small frames were merged into chunks that spanned several
    frames under one frame's title (or their section's), and a frame with an empty title got
    its body line as heading."""
    path = tmp_path / "deck.pdf"
    canvas = Canvas(str(path), pagesize=SLIDE)
    canvas.setTitle("A modern theme")
    _slide(canvas, None, [])  # the title slide, drawn below
    canvas.setFont("Helvetica-Bold", 18)
    frames = ["Sections", "Typography", "Lists", "Tables", "Quotes"]
    for title in frames:
        if title == "Lists":  # a section slide: its heading alone, set larger and lower
            canvas.setFont("Helvetica-Bold", 18)
            canvas.drawString(60, SLIDE[1] - 130, "Elements")
            canvas.showPage()
        _slide(canvas, title, [f"{title.lower()}{i} point of the frame" for i in range(2)])
    _slide(canvas, None, ["This frame has an empty title and is aligned to top."])
    canvas.save()
    doc = parse_pdf(path, SETTINGS)
    for title in frames:
        (chunk,) = [c for c in doc.chunks if f"{title.lower()}0 point" in c.text]
        assert (chunk.heading or "").endswith(title), (title, chunk.heading)
        assert not any(
            f"{other.lower()}0 point" in chunk.text for other in frames if other != title
        )
    (lists,) = [c for c in doc.chunks if "lists0 point" in c.text]
    assert lists.heading == "Elements > Lists" and lists.page_end - lists.page_start == 1
    (empty,) = [c for c in doc.chunks if "empty title" in c.text]
    assert empty.heading == "Elements"  # not the title of the frame before


def test_text_a_slide_keeps_off_the_page_is_not_read(tmp_path: Path) -> None:
    """Fails on the old code: text beamer moves off the page for another overlay was read
    before the slide's title."""
    path = tmp_path / "hidden.pdf"
    canvas = Canvas(str(path), pagesize=SLIDE)
    canvas.setTitle("Overlays")
    for i, word in enumerate(["Alert block", "Example text", "Hidden remark"]):
        canvas.setFont("Helvetica", 10)
        canvas.drawString(2000, SLIDE[1] + 1800, f"{word} of another overlay")
        _slide(canvas, f"Frame {i}", [f"shown{i} words of this slide"] * 3)
    canvas.save()
    text = " ".join(c.text for c in parse_pdf(path, SETTINGS).chunks)
    assert "shown0" in text and "another overlay" not in text


def test_speaker_lines_and_list_items_are_not_headings(tmp_path: Path) -> None:
    """Fails on the old code: without bookmarks, a play's numbered speaker line in bold body
    type ('3 Tircis et Dorilas') became a top-level heading and the parent of the next section,
    and a bulleted item in bold became the heading of the text after it."""
    path = tmp_path / "play.pdf"
    canvas = Canvas(str(path))
    canvas.setTitle("Theatre package help")
    _text(canvas, 72, 60, "1 Presentation", "Helvetica-Bold", 17)
    sections = [("1.1 Purpose", "pu"), ("1.2 Commands", "co"), ("1.3 Variables", "va")]
    for page, (heading, marker) in enumerate(sections):
        top = 100 if page == 0 else 60
        _text(canvas, 72, top, heading, "Helvetica-Bold", 14)
        _page_of_text(canvas, f"{marker}x", top=top + 30, count=80)
        _speakers(canvas, top + 150, marker)
        _text(canvas, 90, top + 300, "\u2022 kpathsea version 3.5.4", "Helvetica-Bold", 10)
        _page_of_text(canvas, f"{marker}y", top=top + 320, count=60)
        _text(
            canvas,
            72,
            top + 420,
            "So to work with this you likely need to know:",
            "Helvetica-Bold",
            10,
        )
        _page_of_text(canvas, f"{marker}z", top=top + 440, count=40)
        canvas.showPage()
    canvas.save()
    doc = parse_pdf(path, SETTINGS)
    chains = {c.heading for c in doc.chunks}
    assert chains <= {"1 Presentation"} | {f"1 Presentation > {h}" for h, _ in sections}, chains
    assert any((c.heading or "").endswith("1.3 Variables") for c in doc.chunks)
