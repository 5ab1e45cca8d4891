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
import logging
import re
import unicodedata
from collections.abc import Callable
from typing import IO, Any, NamedTuple

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
    "section": "\u00a7",
    "paragraph": "\u00b6",
    "dagger": "\u2020",
    "daggerdbl": "\u2021",
}
# TeX's math fonts (CMSY, CMMI) set these at ASCII codes under names pdfium knows no Unicode
# for: it reports the bare code, and '\\meta{name}' reads 'hnamei', not '⟨name⟩'
MATH_NAMES = {
    "angbracketleft": "\u27e8",
    "angbracketright": "\u27e9",
    "prime": "\u2032",
    "bardbl": "\u2016",
    "floorleft": "\u230a",
    "floorright": "\u230b",
    "ceilingleft": "\u2308",
    "ceilingright": "\u2309",
    "mapsto": "\u21a6",
    "turnstileleft": "\u22a2",
    "turnstileright": "\u22a3",
    "latticetop": "\u22a4",
    "owner": "\u220b",
    "similarequal": "\u2243",
    "triangle": "\u25b3",
    "triangleinv": "\u25bd",
    "coproduct": "\u2210",
    "wreathproduct": "\u2240",
    "unionmulti": "\u228e",
    "unionsq": "\u2294",
    "intersectionsq": "\u2293",
    "subsetsqequal": "\u2291",
    "supersetsqequal": "\u2292",
    "arrownortheast": "\u2197",
    "arrowsoutheast": "\u2198",
    "arrownorthwest": "\u2196",
    "arrowsouthwest": "\u2199",
    "arrowbothv": "\u2195",
    "arrowdblbothv": "\u21d5",
    "Rfractur": "\u211c",
    "Ifractur": "\u2111",
    "star": "\u22c6",
    "triangleright": "\u25b7",
    "triangleleft": "\u25c1",
}
NAMED |= MATH_NAMES
MATH_TEXTS = frozenset(MATH_NAMES.values())
# The standard names of the ASCII characters other than letters: a font that sets '{' as
# /braceleft at another code makes pdfium report '{' for that code (see ``_renamed``).
_ASCII_GLYPHS = (
    "exclam quotedbl numbersign dollar percent ampersand quotesingle parenleft parenright "
    "asterisk plus comma hyphen period slash zero one two three four five six seven eight nine "
    "colon semicolon less equal greater question at bracketleft backslash bracketright "
    "asciicircum underscore grave braceleft bar braceright asciitilde"
)
ASCII_NAMES = dict(
    zip(_ASCII_GLYPHS.split(), "!\"#$%&'()*+,-./0123456789:;<=>?@[\\]^_`{|}~", strict=True)
)
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
BFCHAR_RE = re.compile(rb"beginbfchar(.*?)endbfchar", re.S)
BFRANGE_RE = re.compile(rb"beginbfrange(.*?)endbfrange", re.S)
CMAP_PAIR_RE = re.compile(rb"<([0-9A-Fa-f]{1,8})>\s*<[0-9A-Fa-f]*>")
CMAP_RANGE_RE = re.compile(rb"<([0-9A-Fa-f]{1,8})>\s*<([0-9A-Fa-f]{1,8})>\s*[<\[]")
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


# The TeX logo sets its E lowered between T and X; pdfium reads a gap there ('TE X', 'pdfTE X',
# 'LATE X'). Not inside a word of capitals ('STATE X'): fixed-length look-arounds (linear).
TEX_LOGO_RE = re.compile(r"(?<![A-Z])((?:LA)?T)E X(?![A-Za-z])")


def tex_logo(text: str) -> str:
    """'TE X' and 'LATE X' read 'TEX' and 'LATEX', as the logo is printed."""
    return TEX_LOGO_RE.sub(r"\1EX", text) if "E X" in text else text


def accent_on_letter(
    text: str, accent: str, letter: str, share: float, before: str = ""
) -> str | None:
    """`text` with a spacing `accent` set on its `letter` nearest `share` of the way across it
    ('Kuster', a '¨' over its 'u': 'Küster'); None when the text has no such letter near there
    or Unicode no such accented letter. A letter that follows `before` (the page's characters
    before it) is taken first, farther off: across a long line, type of one width is a rough
    guide."""
    mark = ACCENTS.get(accent)
    composed = _compose(letter, mark) if mark else None
    # the accented letters of European languages and pinyin end at Latin Extended-B: 'Ḟ' is
    # a stray dot (a listing's visible space) over an 'F', not a letter anyone typed
    if composed is None or ord(composed) > LATIN_EXTENDED_B_END:
        return None
    spot = share * len(text) - 0.5  # where the letter would be in type of one width
    found = [i for i in range(len(text)) if text[i] == letter and abs(i - spot) <= PLACE_WINDOW]
    if before:
        after = [
            i
            for i in range(len(text))
            if text[i] == letter
            and abs(i - spot) <= CONTEXT_WINDOW
            and text[max(0, i - len(before)) : i] == before
        ]
        found = after or found
    if not found:
        return None
    i = min(found, key=lambda i: abs(i - spot))
    return text[:i] + composed + text[i + 1 :]


LATIN_EXTENDED_B_END = 0x24F
PLACE_WINDOW = 4  # characters: proportional type strays this far from an even spread
CONTEXT_WINDOW = 16  # characters: this far when the letters before it match too


# An acute kept as typed stands in for this private-use character while the others compose.
HIDDEN_ACUTE = "\uf8ff"


def _apostrophes(texts: list[str]) -> bool:
    """Whether the page types '´' for an apostrophe: one between two letters that make no
    accented letter ('don´t', 'l´homme'; TeX sets its acute before a vowel or n, s, z, c...)."""
    for text in texts:
        for m in APOSTROPHE_RE.finditer(text):
            letter = text[m.end()]
            if _compose(letter, "\u0301") is None:
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
    return _compose(letter, mark)


def _compose(letter: str, mark: str) -> str | None:
    """The one character of `letter` with the combining `mark` ('ı' takes it as 'i'), or None
    when Unicode has none."""
    composed = unicodedata.normalize("NFC", DOTLESS.get(letter, letter) + mark)
    return composed if len(composed) == 1 else None


class GlyphNames:
    """Per page, the glyph names of its simple fonts, read on first need from the PDF file."""

    def __init__(self, opener: Callable[[], IO[bytes]]) -> None:
        self._opener = opener
        self._reader: Any = None
        self._handle: IO[bytes] | None = None
        self._failed = False
        # each font object's codes and renamed ASCII codes, read once for the whole document
        self._by_font: dict[tuple[int, int], _FontCodes] = {}

    def page(self, index: int) -> PageGlyphs:
        return PageGlyphs(self, index)

    def fonts(self, index: int) -> PageFonts:
        """Base font name (subset prefix removed) -> {character code: text}: every named code,
        and the ASCII codes the font renames (``_renamed``)."""
        reader = self._open()
        if reader is None:
            return PageFonts({}, {})
        try:
            return _page_fonts(reader.pages[index], self._by_font)
        except Exception:  # a damaged font or resource dictionary leaves the glyphs unread
            return PageFonts({}, {})

    def _open(self) -> Any:
        if self._reader is None and not self._failed:
            try:
                from pypdf import PdfReader

                # a damaged cross-reference ('Object 632 0 not defined') is pypdf's to mend
                # or give up on, not the terminal's: the glyph names are a best-effort read
                logging.getLogger("pypdf").setLevel(logging.ERROR)
                self._handle = self._opener()
                self._reader = PdfReader(self._handle, strict=False)
            except Exception:
                self._failed = True
        return self._reader

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()


class PageFonts(NamedTuple):
    named: dict[str, dict[int, str]]
    renamed: dict[str, dict[int, str]]


class _FontCodes(NamedTuple):
    named: dict[int, str]
    renamed: dict[int, str]


class PageGlyphs:
    """Looks up the text of one character of a page's text layer that pdfium read as its bare
    character code: an unmapped control code, or an ASCII code its font renames."""

    def __init__(self, names: GlyphNames, index: int) -> None:
        self._names = names
        self._index = index
        self._fonts: PageFonts | None = None

    def text(self, textpage: Any, index: int, code: int, math_only: bool = False) -> str:
        """The text of character `index`, whose font maps character `code` to nothing; with
        `math_only`, only a math symbol's (``MATH_NAMES``)."""
        text = self._lookup(textpage, index, code, self._page().named)
        return "" if math_only and text not in MATH_TEXTS else text

    def renamed_codes(self) -> frozenset[int]:
        """The ASCII codes some font of the page sets as another glyph ('h' as '⟨')."""
        return frozenset(code for codes in self._page().renamed.values() for code in codes)

    def renamed_text(self, textpage: Any, index: int, code: int) -> str:
        """The text of character `index`, read as ASCII `code`, if its font renames that code."""
        return self._lookup(textpage, index, code, self._page().renamed)

    def _page(self) -> PageFonts:
        if self._fonts is None:
            self._fonts = self._names.fonts(self._index)
        return self._fonts

    @staticmethod
    def _lookup(textpage: Any, index: int, code: int, fonts: dict[str, dict[int, str]]) -> str:
        if not fonts or pdfium_c.FPDFText_IsGenerated(textpage, index):
            return ""
        name = _font_name(textpage, index)
        return fonts.get(name, {}).get(code, "") if name else ""


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


def _page_fonts(page: Any, cache: dict[tuple[int, int], _FontCodes]) -> PageFonts:
    out = PageFonts({}, {})
    for font in _fonts_of(page.get("/Resources")):
        ref = getattr(font, "indirect_reference", None)
        key = (ref.idnum, ref.generation) if ref is not None else None
        codes = cache.get(key) if key is not None else None
        if codes is None:
            codes = _font_codes(font)
            if key is not None:
                cache[key] = codes
        # pdfium names a font without its subset prefix, so two subsets of one face ('CMR10'
        # re-encoded twice) share a name: their glyph names are merged, the first one kept
        base = _strip_subset(str(font.get("/BaseFont", "")).lstrip("/"))
        if not base:
            continue
        named = out.named.setdefault(base, {})
        for code, text in codes.named.items():
            named.setdefault(code, text)
        # a renamed code counts only where every font of that name renames it alike: a text
        # font that shares its name with a re-encoded copy keeps its letters
        renamed = out.renamed.get(base)
        out.renamed[base] = (
            dict(codes.renamed)
            if renamed is None
            else {code: text for code, text in renamed.items() if codes.renamed.get(code) == text}
        )
    return PageFonts(
        {base: texts for base, texts in out.named.items() if texts},
        {base: texts for base, texts in out.renamed.items() if texts},
    )


def _font_codes(font: Any) -> _FontCodes:
    names = _encoding(font)
    named = {c: t for c, name in names.items() if (t := glyph_text(name))}
    return _FontCodes(named, _renamed(font, names, named))


def _renamed(font: Any, names: dict[int, str], named: dict[int, str]) -> dict[int, str]:
    """The printable ASCII codes that the font's own encoding names as a glyph pdfium has no
    Unicode for, so that it reports the bare code: CMSY sets '⟨' at 'h' as /angbracketleft.
    Glyphs pdfium names itself (OT1's /quoteright at "'") it reads right. A code that the
    font's ToUnicode map gives text for is read by pdfium from it, and is left alone. So is a
    code whose character another glyph of the font also makes ('{' as /braceleft at 0x66,
    where CMSY's 0x7B is /paragraph): pdfium may have read that glyph."""
    mapped = _unicode_mapped(font)
    if mapped is None:
        return {}
    made = {named.get(c) or ASCII_NAMES.get(n.split(".", 1)[0]) for c, n in names.items()}
    return {
        code: MATH_NAMES[base]
        for code, name in names.items()
        if 0x21 <= code < 0x7F
        and (base := name.split(".", 1)[0]) in MATH_NAMES
        and chr(code) not in made
        and code not in mapped
    }


def _unicode_mapped(font: Any) -> set[int] | None:
    """The codes the font's ToUnicode map gives text for: none without a map, None (all)
    for one that cannot be read. Latin Modern's math fonts map only some of their glyphs
    ('∗' at 3, not '⟨' at 104)."""
    if "/ToUnicode" not in font:
        return set()
    try:
        cmap = font["/ToUnicode"].get_object().get_data()[:MAX_FONT_HEADER]
    except Exception:
        return None
    codes: set[int] = set()
    for body in BFCHAR_RE.findall(cmap):
        codes.update(int(src, 16) for src in CMAP_PAIR_RE.findall(body))
    for body in BFRANGE_RE.findall(cmap):
        for low, high in CMAP_RANGE_RE.findall(body):
            codes.update(range(int(low, 16), min(int(high, 16), 0xFF) + 1))
    return codes if codes or b"usecmap" not in cmap else None


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
