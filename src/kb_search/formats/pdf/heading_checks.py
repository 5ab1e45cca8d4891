"""Lines that fonts and numbering would make headings but a reader never takes for one.

- a list item: it starts with a bullet (a heading is never one of a list's items);
- a line that ends like a sentence: with an ellipsis, an exclamation, or a colon after a
  clause that introduces what follows ('So to work with this you likely need to know:');
- a form's field, a label and its figure ('Serves: 2', 'Cook Time: 10 min'): it fills in
  a value beside a title, it does not head the text below (a name and its release, 'Python:
  3.12', heads a release's notes);
- a numbered line set smaller than the document's deeper-numbered headings: '3 Tircis et
  Dorilas' in bold body type, a speaker in an example play, while '1.1 Purpose' is set larger.
  A document's type hierarchy never sets a section smaller than its subsections, so the
  number is part of the text (a list, a play, a numbered example), not a section number;
- a date ('4. Februar 2006', 'Imprimé le 13 avril 2009'): it dates the document, it heads
  nothing;
- a numbered mark in brackets ('[Green 2]', '[OA 1]', '[3]'): the label of a margin note or
  a reviewer's comment, set bold beside the text it marks;
- a name after its initials ('C. D. Biemesderfer4,5'): an author under a paper's title, whose
  first initial would pass for an appendix's letter.
- a line with an e-mail address in it ('E-Mail: application@employer.com' in a letter's
  sender block, an author and the address beside the name): it says whom to write to.

Bold marks a heading only where the body is not bold itself: a book set in a heavy face (or
whose fonts all report bold) would make each of its short lines a heading.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict

from kb_search.formats.pdf.front import EMAIL_RE, MONTHS
from kb_search.formats.pdf.layout import Line, Page

BULLET_RE = re.compile(
    r"^[\u2022\u00b7\u25aa\u25ab\u25e6\u2023\u25b6\u25ba\u25a0\u25a1\u27a2\u2043]\s"
)
SENTENCE_END_RE = re.compile(r"(\u2026|\.\.\.|!)$")
INTRO_MIN_WORDS = 8  # a line this long ending with ':' is a clause that introduces a list
SECTION_LABEL_RE = re.compile(r"^(\d+(\.\d+)*\.?|[A-Z]\.|[IVX]{1,5}\.)\s")
SECTION_NUMBER_RE = re.compile(r"^(\d+(?:\.\d+)*)\.?\s+\S")
# 'Serves: 2', 'Cook Time: 1 min.', 'Version: 2.3': a few words, a colon, a number and a unit.
FIELD_RE = re.compile(r"^[^\W\d_][^\W\d_ ]*( [^\W\d_]+){0,2}:\s*\d[\d.,/]*( ?[^\W\d_]{1,5}\.?)?$")
# 'Python: 3.12', 'Django: 4.2.1': one name and a release number with its dots, no unit, heads
# what follows (a release's notes); 'Version: 2.3' is still a field.
RELEASE_RE = re.compile(r"^(?!(version|release|revision|rev)\b)[^\W\d_]+:\s*\d+(\.\d+)+$", re.I)
# A day, a month and a year in one of the ways they are written ('13 avril 2009', 'March 3,
# 2020', '1997/12/29', '29.12.1997').
DATE_IN_LINE_RE = re.compile(
    rf"\b(\d{{1,2}}(er|st|nd|rd|th)?\.?\s+{MONTHS}\s+\d{{4}}"
    rf"|{MONTHS}\s+\d{{1,2}},?\s+\d{{4}}"
    r"|\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{4})\b",
    re.I,
)
INITIALS_NAME_RE = re.compile(r"^(?:[A-Z]\.\s?){2,}\s*[A-Z][^\W\d_]+")
NOTE_MARK_RE = re.compile(r"^\[[^\[\]]{0,24}?\d{1,4}\]$")
DATE_LEAD_MAX_WORDS = 5  # 'Dernière mise à jour le': a few words that lead to the date
BOLD_BODY_SHARE = 0.5  # bold this share of the body's prose: bold is the body's weight
BOLD_BODY_MIN_CHARS = 3000  # a page of prose: less (a one-line sample, a form) is no body
RANK_SIZE = 0.95  # a heading below this share of its subsections' size is out of rank
RANK_MIN_LINES = 2  # subsections seen before their size is trusted


def cannot_be_heading(text: str) -> bool:
    """A list item or a line that ends like a sentence (a label set in capitals may trail off
    with an ellipsis; a numbered line ending in a colon heads what follows it)."""
    text = text.strip()
    if BULLET_RE.match(text) or (FIELD_RE.match(text) and not RELEASE_RE.match(text)):
        return True
    if NOTE_MARK_RE.match(text) or INITIALS_NAME_RE.match(text):
        return True
    if SENTENCE_END_RE.search(text) and not text.isupper():
        return True
    if is_date_line(text) or EMAIL_RE.search(text):
        return True
    long = len(text.split()) >= INTRO_MIN_WORDS
    return text.endswith(":") and long and not SECTION_LABEL_RE.match(text)


def demote_out_of_rank(pages: list[Page]) -> None:
    """Headings whose section number puts them above subsections set larger than they are
    are body lines: their heading level is removed."""
    by_depth: dict[int, list[Line]] = defaultdict(list)
    for page in pages:
        for line in page.lines:
            m = SECTION_NUMBER_RE.match(line.text)
            if line.heading_level is not None and m:
                by_depth[m.group(1).count(".") + 1].append(line)
    sizes = {
        depth: statistics.median(ln.size for ln in lines)
        for depth, lines in by_depth.items()
        if len(lines) >= RANK_MIN_LINES
    }
    for depth, lines in by_depth.items():
        deeper = [size for d, size in sizes.items() if d > depth]
        if not deeper:
            continue
        floor = RANK_SIZE * max(deeper)
        for line in lines:
            if line.size < floor:
                line.heading_level = None


def is_date_line(text: str) -> bool:
    """A date, alone or after a few words that lead to it, and no other figure (a release
    heading 'Version 2.1, 13 April 2009' keeps its number)."""
    m = DATE_IN_LINE_RE.search(text)
    if m is None:
        return False
    rest = (text[: m.start()] + " " + text[m.end() :]).strip(" .,:;()")
    return len(rest.split()) <= DATE_LEAD_MAX_WORDS and not any(c.isdigit() for c in rest)


def plain_bold_body(pages: list[Page], body_size: float) -> None:
    """Where most prose at the body's size is bold, bold marks nothing: it is cleared, so that
    only size and numbering make headings. A few lines (a sample, a form) make no body to judge
    by."""
    bold = total = 0
    for page in pages:
        for line in page.lines:
            if not line.mono and body_size > 0 and abs(line.size - body_size) <= 0.1 * body_size:
                total += len(line.text)
                bold += len(line.text) if line.bold else 0
    if total >= BOLD_BODY_MIN_CHARS and bold > BOLD_BODY_SHARE * total:
        for page in pages:
            for line in page.lines:
                line.bold = False
