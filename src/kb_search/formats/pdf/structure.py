"""PDF document structure: ordered lines -> title, headings, paragraphs, chunks.

Rejoins words hyphenated across lines and
pages, ranks headings by font size, bold, capitals and numbering, picks the title, groups lines
into paragraphs and cuts them under the shared rules of ``chunking/units.py``.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass, replace
from itertools import pairwise
from pathlib import Path

from kb_search.chunking.segment import Cut
from kb_search.chunking.tokens import TokenCounter
from kb_search.chunking.units import Passage, chunk_passages
from kb_search.formats.pdf import front as front
from kb_search.formats.pdf.furniture import PAGE_NUMBER_RE
from kb_search.formats.pdf.heading_checks import cannot_be_heading, demote_out_of_rank
from kb_search.formats.pdf.layout import TABLE_CELLS, Line, Page
from kb_search.formats.pdf.outline import TOC_ENTRY_RE, Entry, apply_outline, opens_contents_entry
from kb_search.formats.pdf.slides import frame_starts, mark_frame_titles
from kb_search.parsed import ChunkSettings

HYPHENS = "-\u00ad\u2010\u2011"
# (?<!\w): a match starts only where a word does, so a long line is scanned once (linear).
LINE_END_HYPHEN_RE = re.compile(r"(?<!\w)(\w+)([-\u00ad\u2010\u2011\u2013])$")
BULLET_RE = re.compile(r"^([\u2022\u00b7\u25aa\u25e6\u2023\u2013*-]|\(?\d{1,2}[.)]|\(?[a-z][.)])\s")
# A section number has three digits at most: '11070 New Belgrade' is a postcode, '2024 Roadmap'
# a year.
NUMBERED_HEADING_RE = re.compile(r"^((\d{1,3}(\.\d+)*)\.?|[IVX]{1,5}\.|[A-H]\.)\s+\S")
NUMBER_PREFIX_RE = re.compile(r"^((\d{1,3}(\.\d+)*)\.?|[IVX]{1,5}\.|[A-H]\.)\s+")
# A line that starts with one of these continues a sentence from the line above.
CONTINUATION_WORDS = frozenset(
    {"a", "an", "and", "as", "at", "but", "by", "for", "from", "in", "is", "it", "of", "on"}
    | {"or", "that", "the", "to", "was", "we", "which", "with"}
)
# (?<!...): from the start of a run of letters only, so each run is scanned once (linear).
SENTENCE_BREAK_RE = re.compile(r"(?<![^\W\d_])[^\W\d_]{3,}[.!?]\s+[A-Z]")
# The label of a boxed note ('Warning', 'Note:'): it heads a box, not the text after it.
BOX_LABEL_RE = re.compile(
    r"^\W*(warning|note|notes|tip|hint|caution|important|attention|danger|remark|example"
    r"|info|information|see also|nb)\W*$",
    re.I,
)
# A bibliography entry: '[12] A. Author, ...', '[Knu84] Knuth ...'.
BIBLIOGRAPHY_RE = re.compile(r"^\[\w{1,12}\+?\]\s")
# A subsection's number ('B.1', '4.2.1') and a section's ('10', 'B', '4.2').
SERIES_SUBSECTION_RE = re.compile(r"^((?:[A-Z]|\d{1,3})(?:\.\d{1,3})+)\.?\s+\S")
SERIES_SECTION_RE = re.compile(r"^((?:[A-Z]|\d{1,3})(?:\.\d{1,3})*)\.?\s+\S")
CONTENTS_HEADINGS = frozenset({"contents", "table of contents", "content"})
LARGER = 1.15  # type this much larger than the body's is set large: a title's, a heading's
LABEL_SIZE = 0.5  # a numbered line under this share of the body's size is a label
WRAPPED_MAX_WORDS = 8  # the second line of a wrapped heading, this long at most
TITLED_MAX_WORDS = 9  # a numbered line in body type, title-cased, this long at most
# Lines closer than this share of their size are not set that large (a display title set
# solid keeps about 0.94 of its measured size from line to line)
CROWDED_PITCH = 0.92
PITCH_SLACK = 0.1  # lines this share off the block's pitch (or box height) are set alike
PARAGRAPH_MIN_LINES = 5  # lines of one size at one pitch: a paragraph, not a title
SIDE_BY_SIDE_MIN_WORDS = 4  # authors or affiliations side by side, in words
# A footnote mark after a title ('... in LaTeX ∗', 'A Study†'): the note, not the title's.
# From the start of a trailing run of marks and spaces only: no nested repeat (linear time).
# '\u21e4' is the asterisk of a symbol font whose ToUnicode map names it wrongly (texshade's
# 'The TEXshade package⇤'): no title ends on an arrow to a bar.
FOOTNOTE_MARK_RE = re.compile(
    r"(?<![\s*\u2217\u2020\u2021\u00a7\u00b6\u21e4])[\s*\u2217\u2020\u2021\u00a7\u00b6\u21e4]*"
    r"[*\u2217\u2020\u2021\u00a7\u00b6\u21e4]\s*$"
)
# The same marks glued to a word inside a title that goes on ('The dramatist package∗ User Guide').
# Or before a dash or colon that goes on ('substr.sty∗—Substring Functions').
INNER_MARK_RE = re.compile(
    r"(?<=[^\W\d_])[*\u2217\u2020\u2021\u00a7\u00b6]+(?=[\s\u2013\u2014:;,])"
)
# A chapter label a title goes on from ('Chapter 1' above 'What is Earth Science?').
CHAPTER_LABEL_RE = re.compile(r"^(chapter|part|book|lecture|unit)\s+(\d+|[ivxlc]+|[a-z])\.?$", re.I)
# Words a wrapped title line can end on: the title goes on below ('... for', '... and'), in
# English, German, French and Spanish ('Erweiterungen von', 'Manuel de').
OPEN_ENDINGS = frozenset(
    {"a", "an", "and", "for", "in", "of", "on", "or", "the", "to", "with"}
    | {"von", "und", "für", "mit", "der", "die", "das", "des", "zum", "zur"}
    | {"de", "du", "et", "la", "le", "les", "pour", "avec", "del", "para", "con", "y"}
)
# A subtitle after a title line that ends on a colon is set this share of its size at least
SUBTITLE_SIZE = 0.7
LETTERS_RE = re.compile(r"[^\W\d_]+")
# A manual page's name line: the command (or several, comma-separated), a dash, what it is.
MAN_NAME_RE = re.compile(r"^[^\s,]+(,\s*[^\s,]+)*\s+[-\u2212\u2013\u2014]\s+\S")
CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
# A table of contents' dot leaders ('Options . . . . . . 4', or one '.' per cell when the dots
# were read as a table row): a reader sees a gap to the page number, not fifty full stops.
# Dot leaders ('Intro . . . . 5', '| . . . |'). One way to split a run of blanks (the bar
# takes its own), and never from inside one: linear on a paragraph of spaces (the old form,
# two blank runs around an optional bar, was cubic: 2,000 spaces took 3 s).
LEADER_RE = re.compile(r"(?<![ \t])(?:[ \t]*(?:\|[ \t]*)?\.){5,}[ \t]*\|?")
WORD_RE = re.compile(r"[^\W\d_][\w\-\u2010]*\w|\w+", re.UNICODE)
MEANINGLESS_TITLE_RE = re.compile(
    r"^(untitled( \w+)?|title|document\d*|microsoft (word|powerpoint).*"
    r"|.*\.(docx?|pdf|tex|dvi|rtf|od[tpsg]|pptx?|xlsx?|indd|exe|e?ps|txt|html?|qxd|wpd|key"
    r"|pages|numbers|ai|psd|pub|xps)"
    r"|powerpoint presentation|presentation\d*)$",
    re.I,
)
# A TeX length left at the head of a Title field ('=1exfamilytree package v3.1', from a
# line break with its space, '\\\\[1ex]', in the title): no title starts with '='.
TEX_LENGTH_LEAD_RE = re.compile(r"^=-?\d{0,3}(\.\d{1,3})?(pt|ex|em|mm|cm|in|bp|pc)\s*")
# TeX source inside a Title field: a line break's length ('easyformat [.5em] _the_ manual',
# from '\\\\[.5em]') or a control word ('\LaTeX'). Page 1 shows the title as typeset.
TEX_IN_TITLE_RE = re.compile(
    r"\[-?\d{0,3}(\.\d{1,3})?\s?(pt|ex|em|mm|cm|in|bp|pc)\]|\\[A-Za-z@]{2,}"
)
# An identifier, not a name: one 'word' joined by underscores ('905_Precinct_NoOU'), an
# underscore inside it (`_identifier`). Not `\w+(_\w+)+`: `\w` holds `_`, and that nesting
# took exponential time on a metadata title such as 'a_a_a_..._a!' (40 pairs: hours).
IDENTIFIER_TITLE_RE = re.compile(r"\w+")


@dataclass
class Para:
    text: str
    page: int
    heading_level: int | None = None
    chain: str | None = None
    new_chunk: bool = False  # a chunk starts here (a slide's first paragraph)


# --------------------------------------------------------------------------- cleanup


def body_size(pages: list[Page]) -> float:
    """The size most prose is set in. Listings are not prose: a manual with more code than text
    (set smaller) would make every short line of its prose 'larger than the body', a heading."""
    sizes: Counter[float] = Counter()
    listings: Counter[float] = Counter()
    for page in pages:
        for line in page.lines:
            if line.size > 0:
                (listings if line.mono else sizes)[round(line.size * 2) / 2] += len(line.text)
    sizes = sizes or listings  # all of it fixed-pitch (a screenplay in Courier): that is the body
    return sizes.most_common(1)[0][0] if sizes else 0.0


def fix_page_break_hyphens(paras: list[Para]) -> None:
    """'infor-' at the foot of one page and 'mation' atop the next become one word."""
    for prev, nxt in pairwise(paras):
        if prev.page == nxt.page or prev.heading_level or nxt.heading_level:
            continue
        m = re.search(r"(\s|^)(\w+)[" + HYPHENS + r"]$", prev.text)
        if m and nxt.text[:1].islower():
            prev.text = prev.text[: m.start(2)].rstrip()
            nxt.text = m.group(2) + nxt.text
    paras[:] = [p for p in paras if p.text]


# --------------------------------------------------------------------------- headings, title


def heading_level(line: Line, body_size: float, heading_sizes: list[float]) -> int | None:
    text = line.text
    words = text.split()
    if line.mono or line.cells >= TABLE_CELLS or not _could_be_heading(text, words):
        return None
    numbered = NUMBERED_HEADING_RE.match(text)
    larger = _set_large(line, body_size)
    if text[-1] == "." and not (numbered and len(words) <= 2):
        return None
    letters = [c for c in text if c.isalpha()]
    # bold or capitals make a heading only at the body's size or above: a short line in small
    # capitals is a label, a caption or a running header
    body_or_larger = body_size == 0 or line.size >= 0.95 * body_size
    caps = len(letters) >= 4 and all(c.isupper() for c in letters) and len(words) <= 8
    caps = caps and body_or_larger
    bold = line.bold and len(words) <= 10 and body_or_larger
    dotted = numbered is not None and ("." in numbered.group(1) or not numbered.group(2))
    # title case alone, in body type, names a section only in a short line: '2. Australian
    # Institute of Health and Welfare (AIHW), Australian Cancer Incidence' is a reference
    titled = dotted and _title_case(words[1:]) and len(words) <= TITLED_MAX_WORDS
    # a numbered line in bold or title case far below the body's size is a label in a figure
    # or a form ('4 times a day' in a 3pt exercise chart); small capitals measure about 0.6
    legible = body_size == 0 or line.size >= LABEL_SIZE * body_size
    if numbered and (larger or (legible and (line.bold or caps or titled))):
        return numbered.group(1).rstrip(".").count(".") + 1 if numbered.group(2) else 1
    if larger:
        return _size_level(line.size, heading_sizes)
    if caps or bold:
        return len(heading_sizes) + 1
    return None


def _could_be_heading(text: str, words: list[str]) -> bool:
    if not (1 <= len(words) <= 15 and len(text) <= 120) or text[-1] in ",;" or text.count(",") > 1:
        return False
    if BOX_LABEL_RE.match(text) or BIBLIOGRAPHY_RE.match(text) or TOC_ENTRY_RE.search(text):
        return False
    if front.is_generic_heading(text) and front.PAGE_AFTER_RE.search(text):
        return False  # 'List of Tables 3': the contents' entry for a list, not the list's heading
    if cannot_be_heading(text):
        return False
    return _wordy(text) and not PAGE_NUMBER_RE.match(text) and not _reads_like_prose(text)


def _reads_like_prose(text: str) -> bool:
    """A line of running text, whatever its font: it goes on from the line above ('and the
    largest ...'), holds the end of one sentence and the start of another ('invent. They'),
    or is a date."""
    rest = NUMBER_PREFIX_RE.sub("", text, count=1)
    # the first word if it is letters (what `\W*([^\W\d_]+)` matched, without backtracking)
    start = next((i for i, ch in enumerate(rest) if ch.isalnum() or ch == "_"), len(rest))
    first = LETTERS_RE.match(rest, start)
    if first and first.group(0) in CONTINUATION_WORDS:
        return True
    return SENTENCE_BREAK_RE.search(text) is not None or front.DATE_RE.match(text) is not None


def _wordy(text: str) -> bool:
    visible = [c for c in text if not c.isspace()]
    letters = sum(c.isalpha() for c in visible)
    return letters >= 2 and letters >= 0.5 * len(visible)


def _size_level(size: float, heading_sizes: list[float]) -> int:
    for level, head in enumerate(heading_sizes, start=1):
        if size >= 0.92 * head:
            return level
    return len(heading_sizes) + 1


def _title_case(words: list[str]) -> bool:
    significant = [w for w in words if len(w) >= 4 and w[0].isalpha()]
    return bool(significant) and all(w[0].isupper() for w in significant)


def _heading_sizes(pages: list[Page], body_size: float) -> list[float]:
    """Distinct heading font sizes, largest first; sizes within 8% count as one."""
    if body_size <= 0:
        return []
    sizes = sorted(
        (
            ln.size
            for p in pages
            for ln in p.lines
            if _set_large(ln, body_size) and _could_be_heading(ln.text, ln.text.split())
        ),
        reverse=True,
    )
    heads: list[float] = []
    for size in sizes:
        if not heads or size < 0.92 * heads[-1]:
            heads.append(size)
    return heads[:4]


def choose_title(
    meta_title: str | None,
    pages: list[Page],
    body: float,
    path: Path,
    outline: list[Entry] | None = None,
) -> str:
    """The Title field when sane, else the largest lines atop the first page with text that
    are not authors' e-mails, affiliations, dates, table rows, a section heading or a generic
    'Contents' or a paragraph, else the outline's first entry; the file name only when none of
    these is."""
    meta_title = _unmarked(TEX_LENGTH_LEAD_RE.sub("", meta_title or ""))
    if meta_title and _meaningful_title(meta_title, path):
        return meta_title
    first = next((p for p in pages if p.lines), None)
    title = _page_title(first, pages, body) if first is not None else ""
    if title:
        return title
    entry = _outline_title(outline or [])
    return entry or path.stem


def _page_title(page: Page, pages: list[Page], body: float) -> str:
    """The title atop one page, '' when none of its lines can be."""
    lines = sorted(page.lines, key=lambda ln: ln.y0)
    man = _manual_page_name(lines[:15])
    if man:
        return man
    top = _above_first_section(lines[:15])
    prose = _paragraph_lines(top)
    named = [ln for ln in top if _could_name_document(ln) and id(ln) not in prose]
    big = [ln for ln in named if _set_large(ln, body)]
    if big:
        # glyph-box sizes are noisy: of the lines set in the largest size, the topmost
        largest = max(ln.size for ln in big)
        return _title_lines(top, next(ln for ln in big if ln.size >= 0.92 * largest))
    sizes = _heading_sizes(pages, body)
    for index, line in enumerate(named):
        if heading_level(line, body, sizes) is not None:
            return _unmarked(line.text)[:200]
        below = named[index + 1] if index + 1 < len(named) else None
        if below is not None and _wrapped_at_comma(line, below, body, sizes):
            return _unmarked(f"{line.text} {below.text}")[:200]
    return ""


def _manual_page_name(top: list[Line]) -> str:
    """A manual page's name line ('bash − GNU Bourne-Again SHell' under 'NAME'): its title.
    The 'NAME' heading above it is the first section's, in the title's place."""
    for line, below in zip(top, top[1:]):
        if line.text.strip() == "NAME" and MAN_NAME_RE.match(below.text):
            return below.text.strip()[:200]
    return ""


def _wrapped_at_comma(line: Line, below: Line, body: float, sizes: list[float]) -> bool:
    """A title in heading type wrapped after a comma ('COLLAPSED CORES IN GLOBULAR CLUSTERS,'
    over 'GAUGE-BOSON COUPLINGS, AND AASTEX EXAMPLES'): the first line ends as no heading
    does, the next goes on close under it in its type."""
    return (
        line.text.endswith(",")
        and heading_level(replace(line, text=line.text[:-1]), body, sizes) is not None
        and heading_level(below, body, sizes) is not None
        and below.block == line.block
        and abs(below.size - line.size) <= 0.05 * line.size
        and 0 <= below.y0 - line.y1 <= 0.8 * line.size
    )


def _paragraph_lines(top: list[Line]) -> set[int]:
    """The ids of the lines of a paragraph: a run of PARAGRAPH_MIN_LINES or more of one block
    and size, each the same step below the one before, and the lines below it in that block,
    size and weight (a formula in the text breaks the step). An edition's text set larger than its
    apparatus names nothing, however large against the body; a title wraps over three lines
    at most."""
    runs: list[Line] = []  # the first line of each paragraph found
    run: list[Line] = []
    for line in [*top, None]:
        if line is not None and run and _runs_on(run, line):
            run.append(line)
            continue
        if len(run) >= PARAGRAPH_MIN_LINES:
            runs.append(run[0])
        run = [line] if line is not None else []
    return {
        id(ln)
        for ln in top
        for first in runs
        if ln.block == first.block
        and ln.y0 >= first.y0  # a title set in the text's size and block stands above it
        and ln.bold == first.bold
        and abs(ln.size - first.size) <= 0.05 * first.size
    }


def _runs_on(run: list[Line], line: Line) -> bool:
    last = run[-1]
    step = line.y0 - last.y0
    even = len(run) < 2 or abs(step - (last.y0 - run[-2].y0)) <= PITCH_SLACK * step
    return (
        line.block == last.block
        and abs(line.size - last.size) <= 0.05 * last.size
        and 0 < step <= 2 * last.size
        and even
    )


def _above_first_section(top: list[Line]) -> list[Line]:
    """The lines above page 1's first 'Abstract' or 'Contents': the title is set above them, and
    a heading further down ('Copyright' under the contents) names a section, however large."""
    cut = next((i for i, ln in enumerate(top) if i and front.is_generic_heading(ln.text)), None)
    return top if cut is None else top[:cut]


def _outline_title(outline: list[Entry]) -> str:
    """The outline's first top-level entry when it names something: a few words, not a
    numbered section, not 'Contents' or 'Introduction'."""
    top = [e for e in outline if e.level == 1]
    if not top:
        return ""
    text = top[0].text
    if len(text.split()) < 2 or NUMBERED_HEADING_RE.match(text) or front.is_generic_heading(text):
        return ""
    return text if _wordy(text) else ""


def _unmarked(title: str) -> str:
    """The title without footnote marks, at its end or inside it."""
    return INNER_MARK_RE.sub("", FOOTNOTE_MARK_RE.sub("", title)).strip()


def _could_name_document(line: Line) -> bool:
    text = line.text
    return (
        len(text) <= 150
        and line.cells < TABLE_CELLS
        and _wordy(text)
        # '1st', '~70%' are figures; two ideographs make a word ('声 明', letter-spaced)
        and (re.search(r"[^\W\d_]{3}", text) is not None or len(CJK_RE.findall(text)) >= 2)
        and not NUMBERED_HEADING_RE.match(text)  # '4 Conclusions' heads a section
        and not PAGE_NUMBER_RE.match(text)
        and not front.is_front_matter(text)
        and not front.is_generic_heading(text)
    )


def _title_lines(top: list[Line], largest: Line) -> str:
    """The largest line on page 1 plus the lines it wraps onto (same block and size, close;
    farther when the line above ends on 'for' or is a chapter label; a subtitle in smaller
    type after a colon), and the lines above it that lead into it ('PRACTICAL USE OF' over
    'SPECIAL COMMANDS'). Only lines under or over the title count: a contents box or an
    abstract beside it is no part of it."""
    index = top.index(largest)
    lines = [largest]
    for line in reversed([ln for ln in top[:index] if _stacked(ln, largest)][-2:]):
        gap = lines[0].y0 - line.y1
        # a one-word line is the end of a title set in two sizes ('EXPDLIST – an Expanded
        # description' over a larger 'Environment'), not the whole of it
        # (and set near its size: authors' names above a title are set far smaller)
        one_word = len(lines) == 1 and len(largest.text.split()) == 1
        one_word = one_word and line.size >= 0.6 * largest.size
        leads = _open_ended(line) or (one_word and not CHAPTER_LABEL_RE.match(line.text))
        if not (leads and line.size >= 0.5 * largest.size and _could_name_document(line)):
            break
        if gap > line.size:
            break
        lines.insert(0, line)
    following = [ln for ln in top[index + 1 :] if _stacked(ln, largest)]
    for line in following[:3]:
        prev = lines[-1]
        # a connecting word on a line of its own ('IN' between 'COMMANDS' and 'DVIPDFMx')
        # carries the title on in the type of the line before it
        ref = lines[-2] if len(lines) > 1 and _connector(prev) else prev
        goes_on = _open_ended(prev) or CHAPTER_LABEL_RE.match(prev.text) is not None
        subtitle = prev.text.rstrip().endswith(":") and _could_name_document(line)
        if subtitle:
            same = SUBTITLE_SIZE * prev.size <= line.size <= 1.05 * prev.size
        else:
            tolerance = 0.15 if goes_on else 0.05
            same = abs(line.size - ref.size) <= tolerance * ref.size or _connector(line)
        gap = line.y0 - prev.y1
        if not same or gap > (3.0 if goes_on or subtitle else 0.8) * prev.size:
            break
        if not (_could_name_document(line) or goes_on or _connector(line)):
            break
        lines.append(line)
    return _unmarked(" ".join(ln.text for ln in lines))[:200]


def _stacked(line: Line, title: Line) -> bool:
    """In the title's block and under or over it (their extents across the page overlap)."""
    return line.block == title.block and line.x0 < title.x1 and title.x0 < line.x1


def _open_ended(line: Line) -> bool:
    words = line.text.split()
    return bool(words) and words[-1].lower() in OPEN_ENDINGS


def _connector(line: Line) -> bool:
    """A line of connecting words alone ('IN', 'and the')."""
    words = line.text.lower().split()
    return bool(words) and len(words) <= 2 and all(w in OPEN_ENDINGS for w in words)


def _identifier(text: str) -> bool:
    return IDENTIFIER_TITLE_RE.fullmatch(text) is not None and "_" in text[1:-1]


def _meaningful_title(title: str, path: Path) -> bool:
    t = title.strip()
    if len(t) < 3 or not re.search(r"[^\W\d_]{2}", t):
        return False
    return not (
        MEANINGLESS_TITLE_RE.match(t)
        or TEX_IN_TITLE_RE.search(t)
        or _identifier(t)
        or t.lower() == path.stem.lower()
        or front.is_default_title(t)
    )


# --------------------------------------------------------------------------- paragraphs


def paragraphs(
    pages: list[Page],
    body_size: float,
    title: str,
    outline: list[Entry] | None = None,
    slides: bool = False,
) -> list[Para]:
    """The pages' lines as paragraphs with their heading chains: headings from the outline
    when it describes the text, else from fonts and numbering; a slide's frame title heads
    its slide."""
    from_outline = apply_outline(pages, outline or [])
    if not from_outline:
        sizes = _heading_sizes(pages, body_size)
        for page in pages:
            for line in page.lines:
                line.heading_level = heading_level(line, body_size, sizes)
            _demote_crowded(page.lines, body_size)
            _demote_long_heading_runs(page.lines, body_size)
            _join_wrapped_headings(page.lines, body_size)
            _demote_wrapped_contents_entries(page.lines)
            _demote_figure_labels(page.lines)
        demote_out_of_rank(pages)
    frame_level, starts = 0, set()
    if slides:
        frame_level, starts = mark_frame_titles(pages, title), frame_starts(pages)
    vocab, hyphenated = _vocabulary(pages)
    first_page = next((p.number for p in pages if p.lines), 0)
    paras: list[Para] = []
    stack: list[tuple[int, str]] = []
    byline = False  # just below the title on page 1: authors, not sections
    contents_page = 0  # the page a 'Contents' heading is on: its entries head nothing
    for page in pages:
        first_para = len(paras)
        if page.number in starts:  # a slide without a frame title is not under the one before
            stack = [entry for entry in stack if entry[0] < frame_level]
        for group in _group_lines(page.lines):
            first = group[0]
            if byline and not (first.heading_level is not None and _byline(first)):
                byline = False
            if first.mono:
                text = _listing(group)
            elif first.cells >= TABLE_CELLS:
                text = "\n".join(ln.text for ln in group)
            else:
                text = _join_lines([ln.text for ln in group], vocab, hyphenated)
            if not first.mono:
                text = LEADER_RE.sub(" \u2026 ", text).replace("  ", " ")
            if first.heading_level is not None:
                # under a 'Chapter 1' label the line names the chapter, whatever else it names
                chapter_title = bool(stack) and CHAPTER_LABEL_RE.match(stack[-1][1]) is not None
                if page.number == first_page and _part_of_title(text, title) and not chapter_title:
                    paras.append(Para(text, page.number, None, _chain(stack)))
                    byline = not from_outline
                    continue
                if byline or (page.number == first_page and not stack and _side_by_side(first)):
                    paras.append(Para(text, page.number, None, _chain(stack)))
                    continue
                if contents_page == page.number and _contents_entry(text):
                    paras.append(Para(text, page.number, None, _chain(stack)))
                    continue
                if any(head == text[:80] and lv < first.heading_level for lv, head in stack):
                    # the same heading again, ranked deeper (a frame title on a slide's next
                    # page): the chain goes back to it, it does not become its own child
                    while stack[-1][1] != text[:80]:
                        stack.pop()
                    paras.append(Para(text, page.number, first.heading_level, _chain(stack)))
                    continue
                while stack and (
                    stack[-1][0] >= first.heading_level
                    or _contents(stack[-1][1])
                    or _other_series(stack[-1][1], text)
                ):
                    stack.pop()
                stack.append((first.heading_level, text[:80]))
                contents_page = page.number if _contents(text) else contents_page
            paras.append(Para(text, page.number, first.heading_level, _chain(stack)))
        if page.number in starts and len(paras) > first_para:
            paras[first_para].new_chunk = True
    return paras


def _other_series(parent: str, heading: str) -> bool:
    """A subsection numbered in another chapter's series ('B.1' or '4.1') is not under the
    numbered chapter on the stack ('10 Installing Bash'): that chapter has ended, even where
    the heading of the new one was not recognised."""
    child = SERIES_SUBSECTION_RE.match(heading)
    above = SERIES_SECTION_RE.match(parent)
    if child is None or above is None:
        return False
    number = above.group(1).rstrip(".")
    return number.count(".") < child.group(1).count(".") and not child.group(1).startswith(
        number + "."
    )


def _contents(heading: str) -> bool:
    """A table of contents' heading: it heads its list, never the chapters after it (a
    booklet sets 'Contents' larger than its chapters' titles)."""
    return heading.strip(" .:").lower() in CONTENTS_HEADINGS


def _contents_entry(text: str) -> bool:
    """An entry of a table of contents, set like the heading it names: a title and its page
    ('Second chapter, starred 6', 'A App. 1 12'), not a 'Chapter 2' label."""
    return front.PAGE_AFTER_RE.search(text) is not None and not CHAPTER_LABEL_RE.match(text)


def _part_of_title(text: str, title: str) -> bool:
    """The title's own lines on page 1 (marks and all, or one of its wrapped lines): they
    name the document, not a section, so they head no chain."""
    key, title_key = _letters_key(_unmarked(text)), _letters_key(title)
    if key == title_key:
        return True
    # a short line that begins or ends the title is one of its lines ('Environment' under
    # 'EXPDLIST – an Expanded description')
    edge = len(key) >= 4 and (title_key.startswith(key) or title_key.endswith(key))
    return key in title_key and (len(key) >= 0.3 * len(title_key) or edge)


def _byline(line: Line) -> bool:
    """A line set large under the title that is no section heading: not bold, not numbered,
    not 'Abstract' or 'Contents' (the authors' names, a subtitle, a version)."""
    text = line.text
    return not (line.bold or NUMBERED_HEADING_RE.match(text) or front.is_generic_heading(text))


def _side_by_side(line: Line) -> bool:
    """Authors or affiliations set side by side on the first page before any section
    ('Institut Gaspard Monge   Valeo Borg'), bold or not: a section heading is one run of
    text, not two cells."""
    text = line.text
    # two names or places hold four words at least; fewer in two cells is one heading whose
    # words were set apart (right-to-left text, letter-spaced capitals)
    return (
        line.cells >= 2
        and len(text.split()) >= SIDE_BY_SIDE_MIN_WORDS
        and not (NUMBERED_HEADING_RE.match(text) or front.is_generic_heading(text))
    )


def _letters_key(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def _chain(stack: list[tuple[int, str]]) -> str | None:
    return " > ".join(text for _level, text in stack) or None


def _group_lines(lines: list[Line]) -> list[list[Line]]:
    """Split a page's lines (already in reading order, headings marked) into paragraphs."""
    pitch = _typical_pitch(lines)
    groups: list[list[Line]] = []
    for line in lines:
        prev = groups[-1][-1] if groups else None
        if prev is None or _starts_paragraph(prev, line, pitch):
            groups.append([line])
        else:
            groups[-1].append(line)
    return groups


def _demote_long_heading_runs(lines: list[Line], body_size: float) -> None:
    """More than three lines in a row at one size, heading-like or set larger than the body,
    is body text set large (a big abstract, a syntax block), not headings: a line of it
    that ends in a comma or is fixed-pitch does not break the run."""
    run: list[Line] = []
    for line in [*lines, None]:
        if (
            line is not None
            and (line.heading_level is not None or (run and _set_large(line, body_size)))
            and (not run or (run[-1].block == line.block and abs(run[-1].size - line.size) < 0.5))
        ):
            run.append(line)
            continue
        if len(run) > 3 and not any(NUMBERED_HEADING_RE.match(ln.text) for ln in run[1:]):
            for ln in run:
                ln.heading_level = None
        run = [line] if line is not None and line.heading_level is not None else []


def _set_large(line: Line, body_size: float) -> bool:
    return body_size > 0 and line.size >= LARGER * body_size


def _demote_crowded(lines: list[Line], body_size: float) -> None:
    """A line whose next or previous line in its block, in a like size, stands closer than the
    larger of their sizes is not set large, whatever size its glyphs report: type that large
    needs about its size from one line to the next. Such lines are body text (a paragraph of a
    scaled font)."""
    for index, line in enumerate(lines):
        if line.heading_level is None or line.bold or not _set_large(line, body_size):
            continue
        for other in lines[max(index - 1, 0) : index + 2]:
            # a much smaller line close above (a slide's navigation bar) leaves room enough
            if other is line or other.block != line.block or other.size < 0.75 * line.size:
                continue
            if abs(other.y0 - line.y0) < CROWDED_PITCH * max(line.size, other.size):
                line.heading_level = None
                break


def _join_wrapped_headings(lines: list[Line], body_size: float) -> None:
    """The second line of a heading wrapped in a narrow column or box ('Annotation by
    Paragraph' over 'and Sentence Number'): set close under it in the same bold or larger type,
    short, and last in that type, it goes on with the heading even where it starts like
    running text. A third line in that type makes a paragraph set large, not a title."""
    for index in range(1, len(lines)):
        prev, line = lines[index - 1], lines[index]
        if prev.heading_level is None:
            continue
        if line.heading_level is not None:
            # '6.1 Définitions des variables de mémorisa-' over 'tion': a heading that ends
            # in a hyphen goes on below, whatever level the rest was given on its own
            if _hyphen_wrapped(prev, line):
                line.heading_level = prev.heading_level
            continue
        if not (prev.bold or _set_large(prev, body_size)):
            continue
        below = lines[index + 1] if index + 1 < len(lines) else None
        words = line.text.split()
        if (
            _set_under(prev, line)
            and not (below is not None and _set_under(line, below))
            and not line.mono
            and line.cells < TABLE_CELLS
            and prev.text[-1:] not in ".:;!?"
            and len(words) <= WRAPPED_MAX_WORDS
            and len(prev.text.split()) + len(words) <= 15
            and line.text[-1:] not in ".,;"
            and _wordy(line.text)
            and not BOX_LABEL_RE.match(line.text)
            and not cannot_be_heading(line.text)
        ):
            line.heading_level = prev.heading_level


def _demote_wrapped_contents_entries(lines: list[Line]) -> None:
    """A contents entry's first line, wrapped in its column, heads nothing (a bold or larger
    entry would head the entries after it)."""
    for line, below in zip(lines, lines[1:]):
        if below.heading_level is None and opens_contents_entry(line, below):
            line.heading_level = None


def _demote_figure_labels(lines: list[Line]) -> None:
    """A line set large near rows of cells in its own type, a line or two above or below it in
    its block, is one more row of a figure (a plot's axis label and a glyph, '4 bc', between
    the axis's other figures): a heading is followed by text, and a table's rows are set in
    body type, not in the heading's."""
    for index, line in enumerate(lines):
        if line.heading_level is None:
            continue
        neighbours = lines[max(index - 2, 0) : index] + lines[index + 1 : index + 3]
        if any(
            other.block == line.block
            and other.cells >= TABLE_CELLS
            and abs(other.size - line.size) <= 0.05 * line.size
            and min(abs(other.y0 - line.y1), abs(line.y0 - other.y1)) <= 3 * line.size
            for other in neighbours
        ):
            line.heading_level = None


def _hyphen_wrapped(upper: Line, lower: Line) -> bool:
    """A heading broken inside a word: the upper line ends in a hyphen after letters, the
    lower one goes on in lower case, set under it in the same type."""
    return (
        LINE_END_HYPHEN_RE.search(upper.text) is not None
        and upper.text[-1] != "\u2013"
        and lower.text[:1].islower()
        and _set_under(upper, lower)
    )


def _set_under(upper: Line, lower: Line) -> bool:
    """The next line of the same block, close below, in the same size and weight."""
    return (
        lower.block == upper.block
        and lower.y0 > upper.y0
        and lower.y0 - upper.y1 <= 0.6 * upper.size
        and abs(lower.size - upper.size) <= 0.05 * upper.size
        and lower.bold == upper.bold
    )


def _typical_pitch(lines: list[Line]) -> float:
    pitches = [
        b.y0 - a.y0
        for a, b in pairwise(lines)
        if a.block == b.block and b.y0 > a.y0 and a.heading_level is None
    ]
    return statistics.median(pitches) if pitches else 0.0


def _starts_paragraph(prev: Line, line: Line, pitch: float) -> bool:
    if line.block != prev.block or line.y0 < prev.y0:
        return True
    if line.mono != prev.mono:
        return True
    if line.mono:  # a listing runs on over a blank line or two
        return bool(pitch) and line.y0 - prev.y0 > 3 * pitch
    if (line.cells >= TABLE_CELLS) != (prev.cells >= TABLE_CELLS):
        return True
    if (line.heading_level is None) != (prev.heading_level is None):
        return True
    if line.heading_level is not None:
        # a heading wrapped over two lines continues; a new heading starts a new paragraph
        return line.heading_level != prev.heading_level or line.y0 - prev.y1 > 0.6 * line.size
    if pitch and line.y0 - prev.y0 > 1.4 * pitch:
        return True
    if (
        prev.size
        and abs(line.size - prev.size) > 0.2 * prev.size
        and not _one_type(prev, line, pitch)
    ):
        return True
    if BULLET_RE.match(line.text):
        return True
    indent = line.size or 8.0
    return (
        line.x0 - prev.x0 > 0.8 * indent
        and prev.text[-1:] in ".!?:"
        and not BULLET_RE.match(prev.text)
    )


def _one_type(prev: Line, line: Line, pitch: float) -> bool:
    """Two lines whose sizes, measured from their glyphs, differ, but that stand the block's
    usual pitch apart in boxes of one height: one type, measured by different letters (a font
    whose glyph boxes hug each letter reads 'the num-' as 4.6 and 'ber in font' as 6.5 in a
    10pt text). Type of another size sits at another pitch or in lower boxes."""
    step = line.y0 - prev.y0
    high, low = sorted((prev.y1 - prev.y0, line.y1 - line.y0), reverse=True)
    return (
        pitch > 0 and abs(step - pitch) <= PITCH_SLACK * pitch and low >= (1 - PITCH_SLACK) * high
    )


def _listing(lines: list[Line]) -> str:
    """A listing's lines, one a line, indented as printed."""
    step = statistics.median(
        [(ln.x1 - ln.x0) / len(ln.text) for ln in lines if len(ln.text.strip()) >= 2] or [5.0]
    )
    left = min(ln.x0 for ln in lines)
    return "\n".join(" " * min(round((ln.x0 - left) / step), 40) + ln.text for ln in lines)


def _vocabulary(pages: list[Page]) -> tuple[set[str], set[str]]:
    """Words seen in the text, and hyphenated words seen inside lines (not at their ends)."""
    words: set[str] = set()
    hyphenated: set[str] = set()
    for page in pages:
        for line in page.lines:
            for word in WORD_RE.findall(line.text.lower()):
                words.add(word)
                if "-" in word.strip("-"):
                    hyphenated.add(word)
    return words, hyphenated


def _join_lines(texts: list[str], vocab: set[str], hyphenated: set[str]) -> str:
    out = texts[0]
    for text in texts[1:]:
        # the hyphenated word lies after the last space: looked for there, a paragraph of
        # thousands of lines is joined in linear time
        m = LINE_END_HYPHEN_RE.search(out, out.rfind(" ") + 1)
        if m is None:
            out = f"{out} {text}"
        elif text[:1].islower() and m.group(2) != "\u2013":
            out = out[: m.end(1)] + _hyphen_kept(m.group(1), text, vocab, hyphenated) + text
        else:  # "737–" + "9", "Lucene-" + "BM25": a real dash, but no space after it
            out = out + text
    return out.replace("\u00ad", "")


def _hyphen_kept(head: str, text: str, vocab: set[str], hyphenated: set[str]) -> str:
    """'-' when the document writes this word with a hyphen elsewhere and never without."""
    tail = re.match(r"\w+", text)
    tail_word = tail.group(0) if tail else ""
    joined = (head + tail_word).lower()
    return "-" if f"{head}-{tail_word}".lower() in hyphenated and joined not in vocab else ""


# --------------------------------------------------------------------------- chunking


def chunk(paras: list[Para], settings: ChunkSettings, count: TokenCounter) -> Cut:
    """The shared chunking rules (headings glued to their text, no small chunks, table rows
    whole), preferring page boundaries."""
    passages = [
        Passage(
            text=p.text,
            chain=tuple(p.chain.split(" > ")) if p.chain else (),
            page=p.page,
            heading=p.heading_level is not None,
            rows="\n" in p.text,
            new_chunk=p.new_chunk,
        )
        for p in paras
    ]
    return chunk_passages(passages, settings, count)
