"""Text defects seen on a blind PDF set (LaTeX News, an emulateapj paper, arrayjobx, a groff
man page, rotpages), each as a general rule on a small PDF built here."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("reportlab")

from reportlab.pdfgen.canvas import Canvas  # noqa: E402

from kb_search.formats.pdf.parse import parse_pdf  # noqa: E402
from kb_search.parsed import ChunkSettings  # noqa: E402
from pdf_samples import HEIGHT, body, write_pdf  # noqa: E402

SETTINGS = ChunkSettings()


def lines(prefix: str, count: int, per_line: int = 10) -> list[str]:
    return [" ".join(f"{prefix}{i * per_line + k}" for k in range(per_line)) for i in range(count)]


def _text(canvas: Canvas, x: float, y: float, text: str, font: str = "Helvetica", size: float = 10):
    canvas.setFont(font, size)
    canvas.drawString(x, HEIGHT - y, text)


def test_wrapped_contents_entry_does_not_take_its_bookmark(tmp_path: Path) -> None:
    """Fails on the old code: a contents entry wrapped over two lines ('Providing copy and show
    functions for' over 'environments . . . 1') took the bookmark of the section it names, and
    the section's own heading further down headed nothing."""
    path = tmp_path / "news.pdf"
    canvas = Canvas(str(path))
    canvas.setTitle("Project News")
    sections = ["Introduction", "Providing copy and show functions for environments", "Usage notes"]
    _text(canvas, 72, 60, "Contents", "Helvetica-Bold", 12)
    _text(canvas, 72, 80, "Introduction . . . . . . . . . . 1")
    _text(canvas, 84, 92, "Providing copy and show functions for")
    _text(canvas, 100, 104, "environments . . . . . . . . . 1")
    _text(canvas, 72, 116, "Usage notes . . . . . . . . . . 2")
    top = 160.0
    for n, heading in enumerate(sections):
        if n == 2:
            canvas.showPage()
            top = 80.0
        key = f"s{n}"
        canvas.bookmarkHorizontal(key, 0, HEIGHT - top + 14)
        canvas.addOutlineEntry(heading, key, level=0)
        _text(canvas, 72, top, heading, "Helvetica-Bold", 12)
        for i, line in enumerate(lines(f"b{n}x", 8)):
            _text(canvas, 72, top + 20 + i * 13, line)
        top += 150
    canvas.showPage()
    canvas.save()
    doc = parse_pdf(path, SETTINGS)
    under = {c.heading for c in doc.chunks if "b1x3" in c.text.split()}
    assert under == {sections[1]}
    assert not any(c.heading == "Providing copy and show functions for" for c in doc.chunks)


def test_author_after_initials_heads_nothing(tmp_path: Path) -> None:
    """Fails on the old code: an author under the title ('C. D. Biemesderfer4,5', marks
    for the affiliations) passed for a lettered section ('C.') and headed the abstract."""
    draws = [
        (120, 60, "Collapsed Cores in Globular Clusters", "Helvetica-Bold", 16),
        (200, 84, "S. Djorgovski and Ivan King", "Helvetica", 10),
        (200, 110, "C. D. Biemesderfer4,5", "Helvetica", 10),
        (200, 124, "National Optical Astronomy Observatories, Tucson", "Helvetica", 10),
        (72, 150, "ABSTRACT", "Helvetica-Bold", 10),
        *body(lines("ab", 6), top=165, size=10),
        (72, 260, "1. INTRODUCTION", "Helvetica-Bold", 10),
        *body(lines("in", 12), top=275, size=10),
    ]
    path = write_pdf(tmp_path / "paper.pdf", [draws], title="Collapsed Cores in Globular Clusters")
    doc = parse_pdf(path, SETTINGS)
    assert not any("Biemesderfer" in (c.heading or "") for c in doc.chunks)
    assert {c.heading for c in doc.chunks if "in30" in c.text.split()} == {"1. INTRODUCTION"}


def test_plot_label_in_a_figure_heads_nothing(tmp_path: Path) -> None:
    """Fails on the old code: a plot's axis figure beside a glyph ('4 bc'), set in the
    figure's large type, became the heading of the text after the figure."""
    text = body(lines("tx", 8), top=100, size=10)
    figure = [(172, 210, "5", "Helvetica", 10), (172, 232, "4", "Helvetica", 22)]
    figure += [(200, 232, "bc", "Helvetica", 22), (172, 262, "3", "Helvetica", 10)]
    for row, (y, count) in enumerate(((292, 3), (322, 4))):
        figure.append((172, y, str(2 - row), "Helvetica", 22))
        figure += [(220 + 50 * k, y, "bc", "Helvetica", 22) for k in range(count)]
    after = body(lines("af", 20), top=360, size=10)
    draws = [(72, 70, "1 Examples", "Helvetica-Bold", 14), *text, *figure, *after]
    path = write_pdf(tmp_path / "plot.pdf", [draws], title="Plots")
    doc = parse_pdf(path, SETTINGS)
    assert not any("bc" in (c.heading or "").split() for c in doc.chunks)
    assert {c.heading for c in doc.chunks if "af150" in c.text.split()} == {"1 Examples"}


def test_manual_page_is_titled_by_its_name_line(tmp_path: Path) -> None:
    """Fails on the old code: a man page set by groff (no Title field) was titled 'NAME', its
    first section's heading, not the name line under it."""
    draws = [
        (72, 50, "BASH(1)", "Helvetica", 10),
        (250, 50, "General Commands Manual", "Helvetica", 10),
        (480, 50, "BASH(1)", "Helvetica", 10),
        (72, 80, "NAME", "Helvetica-Bold", 10),
        (100, 94, "bash \u2212 GNU Bourne-Again SHell", "Helvetica", 10),
        (72, 120, "SYNOPSIS", "Helvetica-Bold", 10),
        *body(lines("sy", 4), top=134, size=10),
        (72, 200, "DESCRIPTION", "Helvetica-Bold", 10),
        *body(lines("de", 20), top=214, size=10),
    ]
    path = write_pdf(tmp_path / "bash.pdf", [draws])
    assert parse_pdf(path, SETTINGS).title == "bash \u2212 GNU Bourne-Again SHell"


def test_title_wrapped_after_a_comma_is_whole(tmp_path: Path) -> None:
    """Fails on the old code: a title in capitals at the body's size, wrapped after a comma,
    lost its first line (no heading ends in a comma)."""
    draws = [
        (150, 80, "COLLAPSED CORES IN GLOBULAR CLUSTERS,", "Helvetica", 10),
        (140, 92, "GAUGE-BOSON COUPLINGS, AND AASTEX EXAMPLES", "Helvetica", 10),
        (220, 110, "S. Djorgovski and Ivan King", "Helvetica", 8),
        (260, 140, "ABSTRACT", "Helvetica", 10),
        *body(lines("ab", 20), top=156, size=10),
    ]
    path = write_pdf(tmp_path / "apj.pdf", [draws])
    assert parse_pdf(path, SETTINGS).title == (
        "COLLAPSED CORES IN GLOBULAR CLUSTERS, GAUGE-BOSON COUPLINGS, AND AASTEX EXAMPLES"
    )


def test_justified_line_with_wide_spaces_is_no_table_row(tmp_path: Path) -> None:
    """Fails on the old code: a short line of a justified paragraph, its word spaces stretched
    wide, was read as a table row ('The | package | works | by | redefining | the')."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    canvas = Canvas(str(path := tmp_path / "justified.pdf"))
    canvas.setTitle("Rotated pages")
    text = lines("ju", 12, per_line=16)
    right = 72 + max(stringWidth(t, "Helvetica", 10) for t in text)
    for i, t in enumerate(text):
        # every line set to the same right edge, as justified text is
        words = t.split()
        spare = right - 72 - sum(stringWidth(w, "Helvetica", 10) for w in words)
        _spread(canvas, words, 100 + i * 13, spare / (len(words) - 1))
    short = ["The", "package", "works", "by", "redefining", "the"]
    spare = right - 72 - sum(stringWidth(w, "Helvetica", 10) for w in short)
    _spread(canvas, short, 100 + 12 * 13, spare / (len(short) - 1))
    for i, t in enumerate(lines("af", 6, per_line=16)):
        words = t.split()
        spare = right - 72 - sum(stringWidth(w, "Helvetica", 10) for w in words)
        _spread(canvas, words, 100 + (13 + i) * 13, spare / (len(words) - 1))
    canvas.showPage()
    canvas.save()
    doc = parse_pdf(path, SETTINGS)
    text_all = "\n".join(c.text for c in doc.chunks)
    assert "The package works by redefining the" in text_all
    assert " | " not in text_all


def _spread(canvas: Canvas, words: list[str], y: float, gap: float) -> None:
    from reportlab.pdfbase.pdfmetrics import stringWidth

    x = 72.0
    for word in words:
        _text(canvas, x, y, word)
        x += stringWidth(word, "Helvetica", 10) + gap
