"""Headings from a PDF's outline (bookmarks): the author's own table of contents.

When a PDF has an outline that names the headings its pages show, those lines and no others
(but for a bold or large 'Contents', 'Index' before or after them, which outlines often leave
out) are headings, at the outline's depth, whether or not its titles carry the section number
the page prints: a running head, a bold body sentence, a bibliography line or a box label
('Warning') is not in the outline, so it never becomes a heading. An outline that does not
match the text (generated 'Page 1', 'Page 2' bookmarks) is ignored and fonts decide.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pypdfium2 as pdfium

from kb_search.formats.pdf.layout import TABLE_CELLS, Line, Page

MAX_ENTRIES = 5000
MIN_ENTRIES = 3
MIN_MATCHED_SHARE = 0.5  # of the entries: below that, the outline does not describe the text
# Front and back matter that outlines often leave out (starred sections, generated lists).
UNLISTED = frozenset(
    {"abstract", "contents", "table of contents", "preface", "foreword", "index", "glossary"}
    | {"references", "bibliography", "acknowledgements", "acknowledgments", "change history"}
    # ... in German and French
    | {"inhaltsverzeichnis", "inhalt", "vorwort", "literaturverzeichnis", "stichwortverzeichnis"}
    | {"table des matières", "sommaire", "préface", "bibliographie"}
)
UNLISTED_SIZE = 1.15  # a generic heading the outline leaves out is set this much larger
WRAP_MIN_CHARS = 8  # a heading's first line, when it wraps, holds at least this much of it
NUMBER_PREFIX_RE = re.compile(r"^\W*((\d+|[ivxlc]+|[a-z])(\.\d+)*)\.?\s+", re.I)
# The word before a chapter's number ('Appendix A Reporting Bugs', 'Chapter 3 Usage'): the
# outline names the chapter without it.
CHAPTER_WORD_RE = re.compile(
    r"^\W*(appendix|chapter|annex|annexe|anhang|kapitel|chapitre)\s+(?=\w{1,4}\.?\s)", re.I
)

# What a line's key leaves out: every character but those str.isalnum() keeps (a pattern's
# word characters are those and '_'), removed in one pass rather than one call per character.
NOT_ALNUM_RE = re.compile(r"[\W_]+")
# A table of contents' entry: a title, leaders and its page ('Usage . . . . 12').
TOC_ENTRY_RE = re.compile(r"[^\W\d_]\s*(\.\s*){3,}\d{1,4}$")


@dataclass
class Entry:
    page: int  # 1-based
    level: int  # 1 for the top level
    key: str  # the title, normalised
    bare: str  # ... without its section number
    text: str = ""  # the title as written


def read_outline(doc: pdfium.PdfDocument) -> list[Entry]:
    """The outline's entries that point at a page; [] when there are none or it is damaged."""
    entries: list[Entry] = []
    try:
        for item in doc.get_toc(max_depth=8):
            if len(entries) >= MAX_ENTRIES:
                break
            dest = item.get_dest()
            index = dest.get_index() if dest is not None else None
            title = item.get_title() or ""
            if index is None or index < 0 or not _key(title):
                continue
            bare = NUMBER_PREFIX_RE.sub("", title, count=1)
            text = " ".join(title.split())[:200]
            entries.append(Entry(index + 1, item.level + 1, _key(title), _key(bare), text))
    except Exception:  # a damaged outline must not stop ingestion
        return []
    return entries


def apply_outline(pages: list[Page], entries: list[Entry]) -> bool:
    """Mark the lines the outline names as headings and no others but for generic ones it
    leaves out ('Contents', 'Index'); False (nothing changed) when the outline is too small or
    does not match the text."""
    if len(entries) < MIN_ENTRIES:
        return False
    by_page: dict[int, list[Entry]] = {}
    for entry in entries:
        by_page.setdefault(entry.page, []).append(entry)
    levels: dict[int, int] = {}  # id(line) -> level
    matched: set[int] = set()  # id(entry)
    for page in pages:
        # a heading atop a page may be bookmarked at the foot of the page before, or before
        # the blank page a chapter that opens on a right-hand page leaves
        candidates = [e for back in (0, 1, 2) for e in by_page.get(page.number - back, [])]
        # a line's number is dropped only to match a bookmark without one: '10 5 Usage' (a
        # running head) must not pass for the bookmark '5 Usage'
        unnumbered = [e for e in candidates if e.key == e.bare]
        wrapping: Entry | None = None
        for line, below in zip(page.lines, [*page.lines[1:], None]):
            if line.cells >= TABLE_CELLS or opens_contents_entry(line, below):
                wrapping = None
                continue
            key = _key(line.text)
            # bookmarks often leave out the number the heading prints ('2 Usage' as 'Usage')
            bare = _key(NUMBER_PREFIX_RE.sub("", CHAPTER_WORD_RE.sub("", line.text), count=1))
            if wrapping is not None and key and wrapping.key.endswith(key):
                levels[id(line)] = wrapping.level
                wrapping = None
                continue
            wrapping = None
            hyphen = line.text.rstrip().endswith(("-", "\u00ad", "\u2010"))
            # a fixed-pitch line is a command in a margin or a listing ('\antilabe' beside
            # '9.11 Antilabe'): it names a bookmark only with the number the bookmark has
            entry = _match(key, candidates, matched, hyphen, line.mono) or _match(
                bare, unnumbered, matched, hyphen
            )
            if entry is not None:
                matched.add(id(entry))
                levels[id(line)] = entry.level
                if key not in (entry.key, entry.bare) and bare != entry.bare:
                    wrapping = entry
    if len(matched) < MIN_MATCHED_SHARE * len(entries):
        return False
    listed = [i for i, line in enumerate(ln for p in pages for ln in p.lines) if id(line) in levels]
    index = 0
    for page in pages:
        sizes = sorted(ln.size for ln in page.lines)
        median = sizes[len(sizes) // 2] if sizes else 0.0
        for line in page.lines:
            level = levels.get(id(line))
            # front and back matter only: between listed headings a 'Summary' is the outline's
            outside = index < listed[0] or index > listed[-1]
            if level is None and outside and _unlisted_heading(line, median):
                level = 1
            line.heading_level = level
            index += 1
    return True


def opens_contents_entry(line: Line, below: Line | None) -> bool:
    """The first line of a contents entry wrapped in its column ('Providing copy and show
    functions for' over 'environments . . . 1'): the next line of its block, close below,
    goes on with a hanging indent and ends in leaders and a page. The entry names a section
    elsewhere (the bookmark's own line is further on); its first line heads nothing."""
    return (
        below is not None
        and below.block == line.block
        and 0 < below.y0 - line.y1 <= line.size
        and below.x0 > line.x0 + 0.5 * line.size
        and TOC_ENTRY_RE.search(below.text) is not None
    )


def _unlisted_heading(line: Line, page_size: float) -> bool:
    """'Contents', 'Abstract', 'Index' set bold or large: a top-level heading."""
    display = line.bold or line.size >= UNLISTED_SIZE * page_size
    return display and line.text.strip(" .:").lower() in UNLISTED


def _match(
    key: str,
    candidates: list[Entry],
    matched: set[int],
    hyphen: bool = False,
    numbered: bool = False,
) -> Entry | None:
    """The entry the line names whole, or whose first words it holds (a heading wrapped over
    lines): ending where one of the entry's words ends, or in a hyphen. '\\firstlinenum' in a
    margin is not the start of 'First line number and line number increment'. `numbered`: the
    line must hold the entry's number too."""
    if not key:
        return None
    for entry in candidates:
        if id(entry) in matched:
            continue
        wholes = (entry.key,) if numbered else (entry.key, entry.bare)
        if key in wholes:
            return entry
        if len(key) >= WRAP_MIN_CHARS and any(
            whole.startswith(key) and (hyphen or _ends_a_word(len(key), whole, entry.text))
            for whole in wholes
            if whole
        ):
            return entry
    return None


def _ends_a_word(length: int, whole: str, text: str) -> bool:
    """Whether the first `length` characters of `whole` (a title's key) end one of its words.
    An entry without its text (built by hand) is not checked."""
    if not text:
        return True
    words = [k for k in map(_key, text.split()) if k]
    ends, total = set(), 0
    for word in words:
        total += len(word)
        ends.add(total)
    # `whole` may be the title without its leading number: count from where it starts
    offset = len(_key(text)) - len(whole)
    return offset < 0 or length + offset in ends  # < 0: the text was cut short


def _key(text: str) -> str:
    return NOT_ALNUM_RE.sub("", text.lower())
