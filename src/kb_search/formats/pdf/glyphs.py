"""Text for glyphs pdfium cannot map: a font's own glyph names ('f_i', 'uni2019', 'ffi').

TeX Type1 fonts without a ToUnicode map name their glyphs in the font's /Encoding
(/Differences) or in the font program's built-in encoding. pdfium maps the standard names but
not the ligature names of the Adobe Glyph List's underscore form ('f_i', 'f_f_i'): it reports
the bare character code (0x1B), and 'specifies' reads 'speci es'. pdfium does not expose a
font's encoding, so pypdf reads it, lazily, only for a page where such a glyph occurs.

TeX's 7-bit fonts (OT1) have no accented letters: 'ü' is a spacing accent glyph set over a
'u', and the text layer reads 'M¨unch'. ``compose_accents`` puts them back together.
"""

from __future__ import annotations

import ctypes
import re
import unicodedata
from collections.abc import Callable
from typing import IO, Any

import pypdfium2.raw as pdfium_c

# Glyph names whose text is not their spelling as letters.
NAMED = {
    "ff": "ff",
    "fi": "fi",
    "fl": "fl",
    "ffi": "ffi",
    "ffl": "ffl",
    "dotlessi": "ı",
    "dotlessj": "ȷ",
    "germandbls": "ß",
    "ae": "æ",
    "oe": "œ",
    "AE": "Æ",
    "OE": "Œ",
    "oslash": "ø",
    "Oslash": "Ø",
    "hyphen": "-",
    "endash": "\u2013",
    "emdash": "\u2014",
    "quoteleft": "\u2018",
    "quoteright": "\u2019",
    "quotedblleft": "\u201c",
    "quotedblright": "\u201d",
}
# A spacing accent glyph and the combining mark it stands for. TeX's \accent sets an accent
# before the letter it sits over ('\"u' is '¨' then 'u'); some other producers after it
# ('Ageˆncia'). A cedilla or an ogonek, hung under the letter, comes after it ('S¸en', 'Pas¸ca').
ACCENTS = {
    "\u00a8": "\u0308",  # diaeresis
    "\u00b4": "\u0301",  # acute
    "\u02c6": "\u0302",  # circumflex
    "\u02dc": "\u0303",  # tilde
    "\u02c7": "\u030c",  # caron
    "\u02d8": "\u0306",  # breve
    "\u00af": "\u0304",  # macron
    "\u02d9": "\u0307",  # dot above
    "\u02da": "\u030a",  # ring
    "\u02dd": "\u030b",  # double acute
}
BELOW = {"\u00b8": "\u0327", "\u02db": "\u0328"}  # cedilla, ogonek
_MARKS = "[" + "".join(ACCENTS) + "]"
_LETTER = r"[^\W\d_]"
# Not after a path, URL or code character: '/˜user' is a tilde, not 'ũser', 'x}ˆy' a caret.
# The grave is ASCII '`' in OT1, composed only inside a word ('tr`es'), not before one ('`ls`').
ACCENT_BEFORE_RE = re.compile(
    rf"(?<![/\\:.=_%#?&@~}})\]])({_MARKS})({_LETTER})|(?<={_LETTER})(`)({_LETTER})"
)
ACCENT_AFTER_RE = re.compile(rf"({_LETTER})({_MARKS})")
BELOW_RE = re.compile(rf"({_LETTER})([{''.join(BELOW)}])")
# An acute standing for an apostrophe, as typed on keyboards that offer '´' ('don´t',
# 'l´homme', 'Peter´s'): between letters where no accented letter can be made, or before an 's'
# that ends a word. A page with the first keeps all its acutes; the second stays in any case.
ACUTE = "\u00b4"
APOSTROPHE_RE = re.compile(rf"(?<={_LETTER}){ACUTE}(?={_LETTER})")
POSSESSIVE_RE = re.compile(rf"(?<={_LETTER}){ACUTE}s(?![^\W\d_])")
ANY_ACCENT_RE = re.compile("[`" + "".join(ACCENTS) + "".join(BELOW) + "]")
DOTLESS = {"\u0131": "i", "\u0237": "j"}
UNI_RE = re.compile(r"^(uni([0-9A-F]{4})+|u[0-9A-F]{4,6})$")
CODE_RE = re.compile(rb"dup\s+(\d{1,3})\s*/([\w.\-]{1,40})\s+put")
MAX_FONTS_PER_PAGE = 200
MAX_FONT_HEADER = 65536  # bytes of a Type1 program's clear-text part read for its encoding
# declared bytes: a larger program is not decompressed; a smaller one that inflates past 75 MB
# (a zip bomb) stops at pypdf's own output limit (pyproject pins a pypdf that has it)
MAX_FONT_PROGRAM = 4_000_000
MAX_DIFFERENCES = 2048


def glyph_text(name: str) -> str:
    """'f_i' -> 'fi', 'uni00660069' -> 'fi', 'a.sc' -> 'a'; '' for a name with no text."""
    base = name.split(".", 1)[0]
    if base in NAMED:
        return NAMED[base]
    if UNI_RE.match(base):
        hexes = base[3:] if base.startswith("uni") else base[1:]
        step = 4 if base.startswith("uni") else len(hexes)
        codes = [int(hexes[i : i + step], 16) for i in range(0, len(hexes), step)]
        # private-use code points carry no text either
        if all(0x20 <= c < 0xD800 or 0xF8FF < c < 0x110000 for c in codes):
            return "".join(chr(c) for c in codes)
        return ""
    if "_" in base:
        parts = [glyph_text(part) for part in base.split("_")]
        return "".join(parts) if all(parts) else ""
    if len(base) == 1 and base.isascii() and base.isalpha():
        return base
    return ""


def compose_accents(texts: list[str]) -> list[str]:
    """The texts of one page with 'M¨unch' read 'Münch', 'tr`es' 'très', 'Pas¸ca' 'Paşca': a
    spacing accent and the letter it is set over become one accented letter, where Unicode has
    one (a caret in 'x}ˆn' stays). Accents go on the letter after them, as TeX sets them, unless
    most of the page's read better on the letter before ('Ageˆncia', 'Aviac¸a˜o').
    'ı' (dotless i, under an accent) becomes 'i'."""
    if not any(ANY_ACCENT_RE.search(text) for text in texts):
        return texts
    texts = [BELOW_RE.sub(lambda m: _composed(m) or m.group(0), text) for text in texts]
    keep = _apostrophes(texts)
    texts = [_hide_acutes(text, keep) for text in texts]
    before = sum(_composed(m) is not None for t in texts for m in ACCENT_BEFORE_RE.finditer(t))
    after = sum(_composed(m) is not None for t in texts for m in ACCENT_AFTER_RE.finditer(t))
    pattern = ACCENT_AFTER_RE if after > before else ACCENT_BEFORE_RE
    composed = [pattern.sub(lambda m: _composed(m) or m.group(0), text) for text in texts]
    return [text.replace(HIDDEN_ACUTE, ACUTE) for text in composed]


# An acute kept as typed stands in for this private-use character while the others compose.
HIDDEN_ACUTE = "\uf8ff"


def _apostrophes(texts: list[str]) -> bool:
    """Whether the page types '´' for an apostrophe: one between two letters that make no
    accented letter ('don´t', 'l´homme'; TeX sets its acute before a vowel or n, s, z, c...)."""
    for text in texts:
        for m in APOSTROPHE_RE.finditer(text):
            letter = text[m.end()]
            if len(unicodedata.normalize("NFC", DOTLESS.get(letter, letter) + "\u0301")) > 1:
                return True
    return False


def _hide_acutes(text: str, every: bool) -> str:
    """The text with its apostrophe acutes (all of them when `every`) out of the accents' way."""
    if ACUTE not in text:
        return text
    if every:
        return text.replace(ACUTE, HIDDEN_ACUTE)
    return POSSESSIVE_RE.sub(HIDDEN_ACUTE + "s", text)


def _composed(m: re.Match[str]) -> str | None:
    """The accented letter of a match (accent, letter), (`, letter) or (letter, accent)."""
    first, second = (g for g in m.groups() if g is not None)
    accent, letter = (first, second) if first in ACCENTS or first == "`" else (second, first)
    mark = "\u0300" if accent == "`" else ACCENTS.get(accent) or BELOW[accent]
    composed = unicodedata.normalize("NFC", DOTLESS.get(letter, letter) + mark)
    return composed if len(composed) == 1 else None


class GlyphNames:
    """Per page, the glyph names of its simple fonts, read on first need from the PDF file."""

    def __init__(self, opener: Callable[[], IO[bytes]]) -> None:
        self._opener = opener
        self._reader: Any = None
        self._handle: IO[bytes] | None = None
        self._failed = False
        # each font object's codes, read once for the whole document
        self._by_font: dict[tuple[int, int], dict[int, str]] = {}

    def page(self, index: int) -> PageGlyphs:
        return PageGlyphs(self, index)

    def fonts(self, index: int) -> dict[str, dict[int, str]]:
        """Base font name (subset prefix removed) -> {character code: text}."""
        reader = self._open()
        if reader is None:
            return {}
        try:
            return _page_fonts(reader.pages[index], self._by_font)
        except Exception:  # a damaged font or resource dictionary leaves the glyphs unread
            return {}

    def _open(self) -> Any:
        if self._reader is None and not self._failed:
            try:
                from pypdf import PdfReader

                self._handle = self._opener()
                self._reader = PdfReader(self._handle, strict=False)
            except Exception:
                self._failed = True
        return self._reader

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()


class PageGlyphs:
    """Looks up the text of one unmapped character of a page's text layer."""

    def __init__(self, names: GlyphNames, index: int) -> None:
        self._names = names
        self._index = index
        self._fonts: dict[str, dict[int, str]] | None = None

    def text(self, textpage: Any, index: int, code: int) -> str:
        """The text of character `index`, whose font maps character `code` to nothing."""
        if pdfium_c.FPDFText_IsGenerated(textpage, index):
            return ""
        name = _font_name(textpage, index)
        if not name:
            return ""
        if self._fonts is None:
            self._fonts = self._names.fonts(self._index)
        return self._fonts.get(name, {}).get(code, "")


def font_info(textpage: Any, index: int) -> tuple[str, int]:
    """The base font name (as the PDF spells it, subset prefix kept) and the font descriptor
    flags of character `index` of a raw pdfium text page."""
    buf = ctypes.create_string_buffer(128)
    flags = ctypes.c_int()
    n = pdfium_c.FPDFText_GetFontInfo(textpage, index, buf, 128, ctypes.byref(flags))
    return buf.raw[: max(n - 1, 0)].decode("latin-1", "replace"), flags.value


def _font_name(textpage: Any, index: int) -> str:
    return _strip_subset(font_info(textpage, index)[0])


def _strip_subset(name: str) -> str:
    return name.split("+", 1)[1] if re.match(r"^[A-Z]{6}\+", name) else name


def _page_fonts(
    page: Any, cache: dict[tuple[int, int], dict[int, str]]
) -> dict[str, dict[int, str]]:
    out: dict[str, dict[int, str]] = {}
    for font in _fonts_of(page.get("/Resources")):
        ref = getattr(font, "indirect_reference", None)
        key = (ref.idnum, ref.generation) if ref is not None else None
        codes = cache.get(key) if key is not None else None
        if codes is None:
            codes = {c: t for c, name in _encoding(font).items() if (t := glyph_text(name))}
            if key is not None:
                cache[key] = codes
        # pdfium names a font without its subset prefix, so two subsets of one face ('CMR10'
        # re-encoded twice) share a name: their glyph names are merged, the first one kept
        base = _strip_subset(str(font.get("/BaseFont", "")).lstrip("/"))
        if not base:
            continue
        texts = out.setdefault(base, {})
        for code, text in codes.items():
            texts.setdefault(code, text)
    return {base: texts for base, texts in out.items() if texts}


def _fonts_of(resources: Any, depth: int = 0) -> list[Any]:
    """The font dictionaries of a resource dictionary and of its forms, two levels deep."""
    if resources is None or depth > 2:
        return []
    resources = resources.get_object()
    fonts = [f.get_object() for f in (resources.get("/Font") or {}).values()]
    for xobject in (resources.get("/XObject") or {}).values():
        xobject = xobject.get_object()
        if xobject.get("/Subtype") == "/Form":
            fonts += _fonts_of(xobject.get("/Resources"), depth + 1)
        if len(fonts) > MAX_FONTS_PER_PAGE:
            break
    return fonts[:MAX_FONTS_PER_PAGE]


def _encoding(font: Any) -> dict[int, str]:
    """Character code -> glyph name: the font program's built-in encoding, then /Differences."""
    codes = _builtin_encoding(font)
    encoding = font.get("/Encoding")
    encoding = encoding.get_object() if encoding is not None else None
    if hasattr(encoding, "get"):
        code = 0
        for item in list(encoding.get("/Differences") or [])[:MAX_DIFFERENCES]:
            item = item.get_object() if hasattr(item, "get_object") else item
            if isinstance(item, int):
                code = item
            else:
                codes[code] = str(item).lstrip("/")
                code += 1
    return codes


def _builtin_encoding(font: Any) -> dict[int, str]:
    descriptor = font.get("/FontDescriptor")
    program = descriptor.get_object().get("/FontFile") if descriptor is not None else None
    if program is None:
        return {}
    program = program.get_object()
    declared = sum(int(program.get(k, 0) or 0) for k in ("/Length", "/Length1", "/Length2"))
    if declared > MAX_FONT_PROGRAM:
        return {}
    data = program.get_data()[:MAX_FONT_HEADER]
    head = data.split(b"eexec", 1)[0]
    return {int(c): n.decode("ascii") for c, n in CODE_RE.findall(head) if int(c) < 256}
