"""Glyphs pdfium cannot map: TeX fonts without a ToUnicode map name their ligatures 'f_i',
'f_f_i' in the font's encoding; the text must read 'specifies', not 'speci es' or 'species'."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("reportlab")

from reportlab.pdfbase import pdfmetrics  # noqa: E402
from reportlab.pdfgen.canvas import Canvas  # noqa: E402

from kb_search.formats.pdf.glyphs import glyph_text  # noqa: E402
from kb_search.formats.pdf.parse import parse_pdf  # noqa: E402
from kb_search.parsed import ChunkSettings  # noqa: E402
from pdf_samples import body, lines_of, words  # noqa: E402


def ligature_pdf(path: Path, sentence: bytes) -> Path:
    """A page whose second font encodes 27 as /f_i and 28 as /f_f_i, no ToUnicode map, as
    TeX's LY1 and Libertine encodings do; `sentence` is drawn in it, byte by byte."""
    encoding = pdfmetrics.Encoding("KbTestLigatures", "WinAnsiEncoding")
    encoding[27] = "f_i"
    encoding[28] = "f_f_i"
    encoding[29] = "uni2019"
    encoding[30] = "g123"  # a glyph whose name says nothing
    pdfmetrics.registerEncoding(encoding)
    pdfmetrics.registerFont(pdfmetrics.Font("KbTestLigFont", "Helvetica", "KbTestLigatures"))
    canvas = Canvas(str(path))
    for x, y, text, font, size in body(lines_of(words(60, "w")), top=100, size=11):
        canvas.setFont(font, size)
        canvas.drawString(x, 842 - y, text)
    name = canvas._doc.getInternalFontName("KbTestLigFont")
    escaped = "".join(chr(b) if 32 <= b < 127 else f"\\{b:03o}" for b in sentence)
    canvas.addLiteral(f"BT {name} 11 Tf 72 500 Td ({escaped}) Tj ET")
    canvas.showPage()
    canvas.save()
    return path


def text_of(path: Path) -> str:
    return "\n".join(c.text for c in parse_pdf(path, ChunkSettings()).chunks)


def test_ligatures_named_in_the_font_encoding_are_read(tmp_path: Path) -> None:
    pdf = ligature_pdf(tmp_path / "lig.pdf", b"It speci\x1bes an e\x1ccient parser")
    text = text_of(pdf)
    assert "It specifies an efficient parser" in text
    assert "species" not in text and "ecient" not in text


def test_glyphs_named_by_code_point_or_nothing(tmp_path: Path) -> None:
    pdf = ligature_pdf(tmp_path / "names.pdf", b"the parser\x1ds job \x1eends here")
    text = text_of(pdf)
    assert "the parser\u2019s job ends here" in text
    assert not any(ord(ch) < 0x20 and ch not in "\n\t" for ch in text)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("f_i", "fi"),
        ("f_f_l", "ffl"),
        ("ffi", "ffi"),
        ("uni00660069", "fi"),
        ("u1D400", "\U0001d400"),
        ("T_h", "Th"),
        ("a.sc", "a"),
        ("uniE000", ""),
        ("g123", ""),
        ("f_g123", ""),
        (".notdef", ""),
    ],
)
def test_glyph_names_to_text(name: str, text: str) -> None:
    assert glyph_text(name) == text
