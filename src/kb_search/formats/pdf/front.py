"""Front matter of a PDF's first page: which lines can name the document and which cannot.

A paper's first page holds its title, then authors, affiliations, e-mail addresses and dates,
a manual's its version, often in fonts as large as the title's. None of those is a title.
"""

from __future__ import annotations

import re

# (?<!...): a match starts where a run of address characters does, so each run is scanned once.
EMAIL_RE = re.compile(
    r"(?<![\w.+-])[\w.+-]+@[\w-]+(\.[\w-]+)+|\}\s*@|@\s*[\w-]+\.(edu|com|org|net|ac)\b"
)
AFFILIATION_WORD = (
    r"(universit(y|ies|[éaàä]t?)|institut(e|o)?|department|dept\.|laborator(y|ies)|college"
    r"|school|faculty|research cent(er|re)|academy)"
)
# An affiliation is marked (a footnote digit or symbol before it), addressed ('University of',
# 'Harvard University, Cambridge'), not merely a title that names a university.
AFFILIATION_RE = re.compile(
    rf"^\W*(\d{{1,2}}|[*\u2020\u2021\u00a7\u00b6])\s*\S.*\b{AFFILIATION_WORD}\b"
    rf"|\b{AFFILIATION_WORD}\s+(of|for)\b|\b{AFFILIATION_WORD}\s*,",
    re.I,
)
# Month names in English, French and German, whole or cut short ('Sept.', 'févr', 'Dez'), and
# in Spanish and Italian, whole.
MONTHS = (
    r"(enero|febrero|marzo|abril|mayo|junio|julio|agosto|se?tiembre|octubre|noviembre|diciembre"
    r"|gennaio|febbraio|aprile|maggio|giugno|luglio|settembre|ottobre|dicembre"
    r"|jan(uary|vier|uar)?|feb(ruary|ruar)?|f[eé]v(rier)?|mar(ch|s)?|m[aä]rz|apr(il)?|avr(il)?"
    r"|may|mai|june?|juin|juni|july?|juil(let)?|juli|aug(ust)?|ao[uû]t|sep(t|tember|tembre)?"
    r"|oct(ober|obre)?|okt(ober)?|nov(ember|embre)?|dec(ember)?|d[eé]c(embre)?|dez(ember)?)\.?"
)
DATE_RE = re.compile(
    rf"^\W*((\d{{1,2}}\s+)?{MONTHS}\s+(\d{{1,2}},?\s+)?\d{{4}}"
    rf"|\d{{1,4}}[-/.]\d{{1,2}}[-/.]\d{{1,4}}"
    rf"|(received|accepted|published|submitted|revised|dated?)\b.*\d{{4}})\W*$",
    re.I,
)
# A release line under a title: 'Version 1.2', 'v1.10, 29.06.2003', 'Release 3 (2021/04/01)'.
# A capital V and a whole number is a name ('V8', 'V2'), not a release: 'V' needs a dot after it
# or in its number ('V. 3', 'V1.2').
VERSION_RE = re.compile(
    r"^\W*(version|release|revision|rev\.?|(?-i:v)\.?|V\.|V(?=\s*\d+\.\d))\s*\d+(\.\d+)*[a-z]?"
    r"([\s,;:(\u2013\u2014-]+[\w\s./,-]{0,24}\d{2}\)?)?\s*$",  # a date may follow
    re.I,
)
# Words that head a section of any document: a page 1 that begins with one of them has no
# title of its own there.
GENERIC_HEADINGS = frozenset(
    {
        "abstract",
        "contents",
        "table of contents",
        "introduction",
        "preface",
        "foreword",
        "index",
        "summary",
        "references",
        "acknowledgements",
        "acknowledgments",
        "list of figures",
        "list of tables",
        "title",
        "heading",
        "header",
    }
)
# A contents entry's page number ('Contents 1', 'List of Tables . . . iii', 'A App. 1 12'), set
# off by a blank or a leader, not the end of a number ('version 2.4142'). From the start of a
# run of blanks and dots only, so each run is scanned once (linear).
PAGE_AFTER_RE = re.compile(r"(?<=[^\s.\u2026])(?=\.*[\s\u2026])[\s.\u2026]+(\d{1,4}|[ivxl]{1,6})$")
# Spreadsheet and word-processor defaults written into the Title field.
DEFAULT_TITLE_RE = re.compile(r"^(book|sheet|workbook|presentation|slide)\s*\d+$", re.I)


def is_front_matter(text: str) -> bool:
    """An e-mail, affiliation, date or version line: it describes the authors or the release,
    not the document."""
    return bool(
        EMAIL_RE.search(text)
        or AFFILIATION_RE.search(text)
        or DATE_RE.match(text)
        or VERSION_RE.match(text)
    )


def is_generic_heading(text: str) -> bool:
    """'Contents', 'Abstract', or a contents entry of one ('Contents 1', 'List of Figures 2')."""
    return PAGE_AFTER_RE.sub("", text).strip(" .:").lower() in GENERIC_HEADINGS


def is_default_title(text: str) -> bool:
    return DEFAULT_TITLE_RE.match(text.strip()) is not None
