"""Glyphs pdfium cannot map: TeX fonts without a ToUnicode map name their ligatures 'f_i',
'f_f_i' in the font's encoding; the text must read 'specifies', not 'speci es' or 'species'."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

pytest.importorskip("reportlab")

from reportlab.pdfbase import pdfmetrics  # noqa: E402
from reportlab.pdfgen.canvas import Canvas  # noqa: E402

from kb_search.formats.pdf.glyphs import GlyphNames, compose_accents, glyph_text  # noqa: E402
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


def _font_bomb_pdf(inflated: int) -> bytes:
    """A page whose Type1 font program inflates to `inflated` bytes (a zip bomb)."""
    import zlib

    from pypdf import PdfWriter
    from pypdf.generic import DictionaryObject, EncodedStreamObject, NameObject, NumberObject

    packer, chunk, parts = zlib.compressobj(9), b"\0" * 1_000_000, []
    parts.append(packer.compress(b"%!PS-AdobeFont-1.0: CMR10\n"))
    for _ in range(inflated // len(chunk)):
        parts.append(packer.compress(chunk))
    parts.append(packer.flush())
    writer = PdfWriter()
    page = writer.add_blank_page(612, 792)
    program = EncodedStreamObject()
    program._data = b"".join(parts)
    program[NameObject("/Filter")] = NameObject("/FlateDecode")
    program[NameObject("/Length1")] = NumberObject(1000)
    descriptor = DictionaryObject({NameObject("/FontFile"): writer._add_object(program)})
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/ABCDEF+CMR10"),
            NameObject("/FontDescriptor"): writer._add_object(descriptor),
        }
    )
    fonts = DictionaryObject({NameObject("/F1"): writer._add_object(font)})
    page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): fonts})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_a_font_program_that_inflates_without_end_is_not_read_whole() -> None:
    """A font program of a few hundred KB that inflates to 400 MB: its glyph names are not
    read, in bounded memory and time (pypdf stops inflating at its 75 MB limit)."""
    import resource
    import time

    data = _font_bomb_pdf(400_000_000)
    assert len(data) < 1_000_000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    started = time.monotonic()
    assert GlyphNames(lambda: io.BytesIO(data)).fonts(0) == {}
    assert time.monotonic() - started < 20
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 250_000


def test_spacing_accents_set_over_letters_make_accented_letters(tmp_path: Path) -> None:
    """TeX's 7-bit fonts set 'ü' as a spacing '¨' before a 'u': the text reads 'Münch', not
    'M¨unch'; a listing's backquotes and accents stay as typed."""
    from pdf_samples import write_pdf

    prose = "Thanks go to Martin M\u00a8unch, Ays\u00b8e S\u00b8en and ´Eric: tr`es bien."
    code = "\\catcode`a=11 \\def\\x{M\u00a8unch}"
    page = body(lines_of(words(60, "w")), top=100)
    page += [(72, 400, prose, "Helvetica", 11), (72, 430, code, "Courier", 11)]
    text = text_of(write_pdf(tmp_path / "accents.pdf", [page]))
    assert "Thanks go to Martin Münch, Ayşe Şen and Éric: très bien." in text
    assert code in text


@pytest.mark.parametrize(
    ("raw", "composed"),
    [
        ("K\u00a8uster", "Küster"),
        ("na\u00b4\u0131ve", "naíve"),  # an accent over a dotless i
        ("`quoted'", "`quoted'"),  # an opening quote, not a grave
        ("x\u00b4 alone", "x\u00b4 alone"),
        ("see https://example.org/\u02dcuser/", "see https://example.org/\u02dcuser/"),
        ("s + x}\u02c6n", "s + x}\u02c6n"),  # a caret: no letter n with a circumflex
        ("e}\u02c6y", "e}\u02c6y"),  # a caret after code, though 'ŷ' is a letter
        # an acute typed for an apostrophe: a page with 'don´t' keeps its acutes, and a
        # possessive 's' never takes one, while TeX's acutes before vowels still compose
        ("it\u00b4s here, don\u00b4t go", "it\u00b4s here, don\u00b4t go"),
        ("l\u00b4homme", "l\u00b4homme"),
        ("Peter\u00b4s book on r\u00b4esum\u00b4es", "Peter\u00b4s book on résumés"),
        # a producer that sets the accent after its letter: most accents read better so
        ("Age\u02c6ncia Nacional de Aviac\u00b8a\u02dco", "Agência Nacional de Aviação"),
    ],
)
def test_compose_accents(raw: str, composed: str) -> None:
    assert compose_accents([raw]) == [composed]
