"""Glyphs pdfium cannot map: TeX fonts without a ToUnicode map name their ligatures 'f_i',
'f_f_i' in the font's encoding; the text must read 'specifies', not 'speci es' or 'species'."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

pytest.importorskip("reportlab")

from reportlab.pdfbase import pdfmetrics  # noqa: E402
from reportlab.pdfgen.canvas import Canvas  # noqa: E402

from kb_search.formats.pdf.glyphs import (  # noqa: E402
    GlyphNames,
    _font_codes,
    compose_accents,
    glyph_text,
    tex_logo,
)
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


def test_a_damaged_cross_reference_reads_without_pypdf_chatter(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """pypdf mends a wrong startxref pointer and says so on the terminal ('incorrect startxref
    pointer'): the glyph names are read quietly, and still read."""
    import re

    pdf = ligature_pdf(tmp_path / "lig.pdf", b"It speci\x1bes an e\x1ccient parser")
    shift = lambda m: b"startxref\n" + str(int(m[1]) + 7).encode()  # noqa: E731
    pdf.write_bytes(re.sub(rb"startxref\s+(\d+)", shift, pdf.read_bytes()))
    assert "It specifies an efficient parser" in text_of(pdf)
    assert not [r for r in caplog.records if r.name.startswith("pypdf")]


def test_glyphs_named_by_code_point_or_nothing(tmp_path: Path) -> None:
    pdf = ligature_pdf(tmp_path / "names.pdf", b"the parser\x1ds job \x1eends here")
    text = text_of(pdf)
    assert "the parser\u2019s job ends here" in text
    assert not any(ord(ch) < 0x20 and ch not in "\n\t" for ch in text)


def math_symbol_pdf(path: Path, face: str, symbols: bytes, prose: str) -> Path:
    """A page with `prose` in Helvetica and `symbols` in a font whose encoding sets TeX CMSY's
    glyphs at ASCII codes (104 /angbracketleft, 105 /angbracketright, 48 /prime, 102
    /braceleft, 123 /paragraph), no ToUnicode map; that font's base font is `face`."""
    encoding = pdfmetrics.Encoding(f"KbTestCmsy{face}", "WinAnsiEncoding")
    for code, name in {104: "angbracketleft", 105: "angbracketright", 48: "prime"}.items():
        encoding[code] = name
    encoding[102], encoding[123] = "braceleft", "paragraph"
    encoding[2], encoding[3] = "angbracketleft", "angbracketright"  # a re-encoded CMSY's
    pdfmetrics.registerEncoding(encoding)
    pdfmetrics.registerFont(pdfmetrics.Font(f"KbTestCmsy{face}", face, f"KbTestCmsy{face}"))
    canvas = Canvas(str(path))
    for x, y, text, font, size in body(lines_of(words(60, "w")), top=100, size=11):
        canvas.setFont(font, size)
        canvas.drawString(x, 842 - y, text)
    canvas.setFont("Helvetica", 11)
    canvas.drawString(72, 842 - 480, prose)
    name = canvas._doc.getInternalFontName(f"KbTestCmsy{face}")
    escaped = "".join(
        f"\\{b:03o}" if b < 32 else chr(b) if chr(b) not in "()\\" else "\\" + chr(b)
        for b in symbols
    )
    canvas.addLiteral(f"BT {name} 11 Tf 72 300 Td ({escaped}) Tj ET")
    canvas.showPage()
    canvas.save()
    return path


def test_math_symbols_set_at_letter_codes_read_as_symbols(tmp_path: Path) -> None:
    """TeX's CMSY sets '⟨' and '⟩' at the codes of 'h' and 'i' under names pdfium has no
    Unicode for: '\\meta{name}' must read '⟨name⟩', not 'hnamei'. Glyphs pdfium maps by
    their names ('{' set at 102, '¶' at 123) stay as read, and the body text, in another
    font, keeps its letters."""
    prose = "this line is high in the hills"
    pdf = math_symbol_pdf(tmp_path / "cmsy.pdf", "Courier", b"h0if{", prose)
    text = text_of(pdf)
    assert "\u27e8\u2032\u27e9{\u00b6" in text
    assert prose in text


def test_angle_brackets_re_encoded_at_codes_2_and_3_read_as_brackets(tmp_path: Path) -> None:
    """A subset that re-encodes CMSY sets '⟨' at 2, the code pdfium also gives its own
    line-end hyphen: '⟨csname⟩', not '-csname'."""
    text = text_of(math_symbol_pdf(tmp_path / "re.pdf", "Courier", b"\x02csname\x03", "prose"))
    assert "\u27e8csname\u27e9" in text


def test_a_text_font_sharing_the_symbol_font_name_keeps_its_letters(tmp_path: Path) -> None:
    """Both fonts are called Helvetica, as two subsets of one face are: pdfium names a
    character's font only by that name, so the text font's 'h' and 'i' are never renamed."""
    prose = "this line is high in the hills"
    pdf = math_symbol_pdf(tmp_path / "shared.pdf", "Helvetica", b"h0i", prose)
    text = text_of(pdf)
    assert prose in text
    assert "\u27e8" not in text and "\u27e9" not in text


def _font(differences: list, to_unicode: bool = False) -> object:
    from pypdf.generic import ArrayObject, DictionaryObject, NameObject, NumberObject

    items = [NumberObject(x) if isinstance(x, int) else NameObject("/" + x) for x in differences]
    font = DictionaryObject(
        {
            NameObject("/BaseFont"): NameObject("/CMSY10"),
            NameObject("/Encoding"): DictionaryObject(
                {NameObject("/Differences"): ArrayObject(items)}
            ),
        }
    )
    if to_unicode:
        font[NameObject("/ToUnicode")] = NameObject("/Identity-H")  # no map pypdf can read
    return font


def test_codes_a_partial_tounicode_map_leaves_out_are_read_anew() -> None:
    """Latin Modern's math font maps '∗' at 3 in its ToUnicode map but not '⟨' at 104: pdfium
    reads 104 as 'h'. A range that covers 104 leaves it to pdfium."""
    from pypdf.generic import NameObject, StreamObject

    font = _font([3, "asteriskmath", 104, "angbracketleft", "angbracketright"])
    for cmap, renamed in [
        (b"1 beginbfrange\n<03><03><2217>\nendbfrange", {104: "\u27e8", 105: "\u27e9"}),
        (b"1 beginbfchar\n<68> <27E8>\nendbfchar", {105: "\u27e9"}),
        (b"1 beginbfrange\n<60> <6A> [<0060>]\nendbfrange", {}),
    ]:
        stream = StreamObject()
        stream.set_data(b"begincmap\n" + cmap + b"\nendcmap")
        font[NameObject("/ToUnicode")] = stream
        assert _font_codes(font).renamed == renamed


def test_only_fonts_whose_encoding_renames_letters_are_read_anew() -> None:
    cmsy = [102, "braceleft", "braceright", "angbracketleft", "angbracketright", "bar"]
    assert _font_codes(_font(cmsy)).renamed == {104: "\u27e8", 105: "\u27e9"}
    # a ToUnicode map is what pdfium reads: the font is left to it
    assert _font_codes(_font(cmsy, to_unicode=True)).renamed == {}
    # a text font naming its letters, quotes and dashes as such renames nothing pdfium reads
    assert _font_codes(_font([97, "a", "b", "c", 104, "h", "i", 45, "hyphen"])).renamed == {}
    # OT1's quotes are named, and pdfium reads them by their names: they are not renamed
    assert (
        _font_codes(_font([34, "quotedblright", 39, "quoteright", 96, "quoteleft"])).renamed == {}
    )
    # a font that also sets 'h' as /h: pdfium may have read that glyph as the 'h' at hand
    assert 104 not in _font_codes(_font([*cmsy, 72, "h"])).renamed


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
    assert GlyphNames(lambda: io.BytesIO(data)).fonts(0) == ({}, {})
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


def test_an_accent_drawn_after_its_word_goes_back_onto_its_letter(tmp_path: Path) -> None:
    """TeX draws the accent of 'Küster' or 'Tōkyō' after the word, back over its letter: it is
    read as a run of its own, after the word ('Kuster ¨'), unless it is set on the letter centred
    under it. A mark between two words (an index mark) is over no letter and stays."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    canvas = Canvas(str(tmp_path / "late-accents.pdf"))
    for x, y, text, font, size in body(lines_of(words(60, "w")), top=100, size=11):
        canvas.setFont(font, size)
        canvas.drawString(x, 842 - y, text)
    line = "Thanks to Frank Kuster of Tokyo and to the index mark here. Very well."
    canvas.setFont("Helvetica", 11)
    canvas.drawString(72, 342, line)

    def over(prefix: str, letter: str, accent: str) -> None:
        """`accent` centred over the `letter` after `prefix`, drawn after the whole line."""
        left = 72 + stringWidth(prefix, "Helvetica", 11)
        middle = left + stringWidth(letter, "Helvetica", 11) / 2
        canvas.drawString(middle - stringWidth(accent, "Helvetica", 11) / 2, 342, accent)

    over("Thanks to Frank K", "u", "\u00a8")
    over("Thanks to Frank Kuster of T", "o", "\u00af")
    # a tilde over the 'V' of 'Very': 'Ṽ' is no letter of a European language, it stays
    over("Thanks to Frank Kuster of Tokyo and to the index mark here. ", "V", "\u02dc")
    # between 'mark' and 'here': over the space, no letter under its centre
    canvas.drawString(
        72 + stringWidth("Thanks to Frank Kuster of Tokyo and to the index mark", "Helvetica", 11),
        342,
        "\u00af",
    )
    canvas.showPage()
    canvas.save()
    text = text_of(tmp_path / "late-accents.pdf")
    assert "Thanks to Frank Küster of Tōkyo and to the index mark" in text
    assert "\u00a8" not in text
    assert text.count("\u00af") == 1  # the index mark stays
    assert "\u1e7c" not in text and "\u02dc" in text


def test_the_tex_logo_read_with_a_gap_reads_whole(tmp_path: Path) -> None:
    """The logo's E is set lowered between T and X, and pdfium reads a gap after it: 'TE X',
    'pdfTE X', 'LATE X' read 'TEX', 'pdfTEX', 'LATEX'; 'STATE X' is no logo."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    page = body(lines_of(words(60, "w")), top=100)
    x = 72.0
    for run in (
        "The powerful TE",
        "X variant and pdfTE",
        "X and LATE",
        "X News; the STATE X file.",
    ):
        page.append((x, 400, run, "Helvetica", 11))
        x += stringWidth(run, "Helvetica", 11) + 9  # a gap pdfium reads as a blank, in one run
    from pdf_samples import write_pdf

    text = text_of(write_pdf(tmp_path / "logo.pdf", [page]))
    assert "The powerful TEX variant and pdfTEX and LATEX News; the STATE X file." in text


@pytest.mark.parametrize(
    ("raw", "read"),
    [
        ("TE X", "TEX"),
        ("(LATE X)", "(LATEX)"),
        ("ASCII pTE X", "ASCII pTEX"),
        ("STATE X", "STATE X"),
    ],
)
def test_tex_logo(raw: str, read: str) -> None:
    assert tex_logo(raw) == read


def test_an_accent_goes_on_the_letter_its_neighbours_name() -> None:
    """Fails on the old code: across a long line the letter under an accent is only roughly
    where type of one width puts it, and the nearest letter of its kind took the accent
    ('Devanagāri'); the letters before it on the page ('Dev') pick the right one."""
    from kb_search.formats.pdf.glyphs import accent_on_letter

    assert accent_on_letter("Devanagari", "\u00af", "a", 0.75) == "Devanag\u0101ri"
    assert accent_on_letter("Devanagari", "\u00af", "a", 0.75, "Dev") == "Dev\u0101nagari"
