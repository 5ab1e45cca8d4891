"""Which chunks are navigation: a table of contents, a list of figures or tables, an index.

Such a chunk repeats the document's own headings and terms with page numbers after them. It is
kept and searchable (a question about the contents finds it), but it is no answer to a question
about what the pages say, so search ranks it below content that matches about as well
(`search/shaping.py`). Decided from the chunk's text and heading, whatever the format:
- mostly entries that end in a page reference after a leader or a cell edge
  ('2.1 Options … 4', '1 | Introduction | 2', '\\baselineskip . . 870, 874'); or
- under (or opening with) a navigation name ('Contents', 'Index', 'Inhaltsverzeichnis') with
  several entries that end in a page number, leaders or not ('Topologische Räume 2').
A change history lists changes with page references too; it is content, not navigation.
"""

from __future__ import annotations

import re

from kb_search.parsed import ParsedChunk

# A section number before a name ('9 Index', 'B. Contents').
_NUMBER = r"^\W*(?:[\dIVXA-H]{1,3}(?:\.\d{1,2})*\.?\s+)?"
# The names navigation pages go by (English, German, French, Spanish, Italian).
NAVIGATION_NAME_RE = re.compile(
    _NUMBER + r"(?:(?:table of )?contents|(?:general |subject |alphabetical )?index(?: of \w+)?"
    r"|list of (?:figures|tables|listings|poems|illustrations|examples|algorithms|symbols"
    r"|abbreviations)|inhalt|inhaltsverzeichnis|stichwortverzeichnis|sachverzeichnis"
    r"|sachregister|abbildungsverzeichnis|tabellenverzeichnis|table des mati[eè]res"
    r"|sommaire|[ií]ndice(?: general| analitico)?|contenido|contenuto)\W*$",
    re.I,
)
# Content that lists page references without being navigation.
NOT_NAVIGATION_RE = re.compile(
    _NUMBER + r"(?:change history|changes|revision history|version history|history)\W*$", re.I
)
# An entry's page reference: after an ellipsis (leaders as structure.py leaves them) or a
# leader's dot, a page or pages ('… 4', '. 870, 874', '… iv', '… 7 f.'), then the entry's end.
LEADER_REFERENCE_RE = re.compile(
    r"(?:\u2026|(?<=\s)\.(?=[ \t]))[ \t]*(?:\d{1,4}|[ivxlc]{1,7})"
    r"(?:[ \t]*[,\u2013-][ \t]*\d{1,4})*(?:[ \t]*ff?\.)?(?=\s|$)"
)
# A table row whose last cell is a page and whose cell before it has words ('1 | Intro | 2');
# not a row of figures ('font | 18 | 23', '0 | 1 | 2').
PAGE_CELL_RE = re.compile(r"(?:\d{1,4}|[ivxlc]{1,7})")
LETTER_RE = re.compile(r"[^\W\d_]")
# A page number after an entry's last word, with nothing or a comma between ('Topologische
# Räume 2', 'Abbildung affine, 107').
BARE_REFERENCE_RE = re.compile(r"(?<=[^\W\d_]),?[ \t]+\d{1,4}(?=[\s,]|$)")
# A line that starts with a section number ('2.1 Options', 'IV. Appendix'): an entry of a
# contents list that shows no pages (a slide deck's outline).
NUMBERED_LINE_RE = re.compile(
    r"^[ \t]*(?:\d{1,2}(?:\.\d{1,2})*\.?|[IVX]{1,5}\.|[A-Z]\.)[ \t]+\S", re.M
)
# Leaders whose page was read elsewhere (a column of its own).
BARE_LEADER_RE = re.compile(r"\u2026(?![ \t]*\d)")
# Words, not numbers: an index entry is a term and many pages.
WORD_RE = re.compile(r"[^\W\d_]\w*")
# Leader-marked references per word from which a chunk is navigation: an entry of a table of
# contents or an index is a title or a term of a few words and its pages (measured on the
# PDF corpora: docs/formats.md, "Navigation").
REFERENCES_PER_WORD = 1 / 12
MIN_REFERENCES = 4
# Under a navigation name, this many entries (bare page numbers count) make the chunk one.
NAMED_MIN_REFERENCES = 3


def is_navigation(text: str, heading: str | None = None) -> bool:
    """Is this chunk a table of contents, a list of figures or tables, or an index?"""
    chain = [part.strip() for part in (heading or "").split(" > ") if part.strip()]
    if any(NOT_NAVIGATION_RE.match(part) for part in chain[-1:]):
        return False
    words = len(WORD_RE.findall(text))
    if not words:
        return False
    leader_refs = len(LEADER_REFERENCE_RE.findall(text)) + _page_cells(text)
    if leader_refs >= MIN_REFERENCES and leader_refs >= words * REFERENCES_PER_WORD:
        return True
    first_line = text.lstrip().split("\n", 1)[0]
    named = any(NAVIGATION_NAME_RE.match(part) for part in chain[-1:]) or bool(
        NAVIGATION_NAME_RE.match(first_line)
    )
    if not named:
        return False
    refs = leader_refs + len(BARE_REFERENCE_RE.findall(text))
    refs += len(BARE_LEADER_RE.findall(text)) + len(NUMBERED_LINE_RE.findall(text))
    return refs >= NAMED_MIN_REFERENCES and refs >= words * REFERENCES_PER_WORD


def _page_cells(text: str) -> int:
    """Table rows that end in a page cell after a cell with words."""
    found = 0
    for line in text.split("\n"):
        cells = line.split("|")
        if len(cells) >= 2 and PAGE_CELL_RE.fullmatch(cells[-1].strip()):
            found += bool(LETTER_RE.search(cells[-2]))
    return found


def mark(chunks: list[ParsedChunk]) -> None:
    """Set `navigation` on the chunks that are."""
    for chunk in chunks:
        chunk.navigation = is_navigation(chunk.text, chunk.heading)
