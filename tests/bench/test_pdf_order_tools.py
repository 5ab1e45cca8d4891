"""`python -m bench pdf_order --tools kb-get`: a page scored on what `kb get FILE#page=N` prints,
the chunks over it joined with each heading line once (`kb-chunks` repeats the heading line a
chunk that starts inside a section carries)."""

from __future__ import annotations

import pytest

pytest.importorskip("reportlab")

from bench.pdf_order import kb_chunks_text, kb_get_text  # noqa: E402

from pdf_samples import write_pdf  # noqa: E402


def test_kb_get_text_shows_a_sections_heading_once_where_its_chunks_repeat_it(tmp_path):
    words = [f"word{i}" for i in range(900)]
    rows = [" ".join(words[i : i + 10]) + "." for i in range(0, 900, 10)]
    page = [(72, 50, "Viewer Guide", "Helvetica-Bold", 20)]
    page += [(72, 80, "1 Installing the viewer", "Helvetica-Bold", 12)]
    page += [(72, 100 + 7.5 * i, row, "Helvetica", 6) for i, row in enumerate(rows)]
    pdf = write_pdf(tmp_path / "guide.pdf", [page])
    served, chunks = kb_get_text(pdf, 1), kb_chunks_text(pdf, 1)
    assert chunks.count("Installing the viewer") >= 2  # each chunk stands alone in search
    assert served.count("Installing the viewer") == 1
    assert "word0" in served and "word899" in served
