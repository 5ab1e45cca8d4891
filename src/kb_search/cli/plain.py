"""Snippets as prose: the Markdown syntax that is noise in a one-paragraph excerpt (heading
marks, table pipes, code fences, emphasis, link targets) taken out, the words kept.

Only for the terminal; the JSON keeps the text as stored. Code is left alone: there `*`, `_`
and `#` mean something. The snippet highlight markers (\\x02, \\x03) pass through.
"""

from __future__ import annotations

import re

from kb_search.search.results import HL_CLOSE, HL_OPEN

_FENCE = re.compile(r"^\s*(```|~~~)")
_RULE_CELL = re.compile(r":?-{2,}:?")
_HEADING = re.compile(r"^\s*#{1,6}\s+")
_HEADING_TAIL = re.compile(r"(?<!\s)\s+#+\s*$")  # from a run's start only: linear
_QUOTE = re.compile(r"^\s*(>\s*)+")
# No class runs past the next opening bracket or parenthesis, and an emphasis spans at most
# SPAN characters: a line of unclosed "![" or "**" costs linear time, not quadratic.
SPAN = 300
_IMAGE = re.compile(r"!\[([^\[\]]*)\]\([^()]*\)")
_LINK = re.compile(r"\[([^\[\]]+)\]\([^()]*\)")
# A highlight marker inside a word is part of it: `\x02bind\x03_contextvars(\x02request\x03_id`
# is one identifier, not an emphasis from one `_` to the next (the old code showed
# `bindcontextvars(requestid`, and `CHACHAPOLY1305NONCE_SIZE`).
_WORD = rf"\w{HL_OPEN}{HL_CLOSE}"
_STRONG = re.compile(rf"(\*\*|__)(?=\S)(.{{1,{SPAN}}}?)(?<=\S)\1")
_EMPHASIS = re.compile(
    rf"(?<![{_WORD}*])([*_])(?=[^\s*_])(.{{1,{SPAN}}}?)(?<=[^\s*_])\1(?![{_WORD}*])"
)
_STRAY = re.compile(rf"(?<![{_WORD}])(\*\*|__)|(\*\*|__)(?![{_WORD}])")
_CODE = re.compile(r"`+([^`]*)`+")
_TAG = re.compile(r"</?[a-zA-Z][^>\n]{0,40}>")
_MID_HEADING = re.compile(r"(^|\s)#{1,6}\s+")  # headings a snippet cut into one line


def strip_markdown(text: str) -> str:
    """`text` with Markdown noise removed, on one line."""
    lines = []
    for line in text.splitlines():
        if _FENCE.match(line) or _is_table_rule(line) or _is_rule(line):
            continue
        line = _QUOTE.sub("", _HEADING.sub("", line))
        line = _HEADING_TAIL.sub("", line)
        if line.count("|") >= 2:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            line = " · ".join(c for c in cells if c) + ";"
        lines.append(line)
    text = " ".join(lines)
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _CODE.sub(r"\1", text).replace("`", "")
    text = _STRONG.sub(r"\2", text)
    text = _EMPHASIS.sub(r"\2", text)
    text = _STRAY.sub("", text)
    text = _TAG.sub(" ", text)
    text = _MID_HEADING.sub(r"\1", text)
    return " ".join(text.split())


def _is_table_rule(line: str) -> bool:
    """A table's header rule (`|---|:--:|`): cells of two or more dashes, colons at the ends."""
    cells = line.strip().strip("|").split("|")
    return all(_RULE_CELL.fullmatch(cell.strip()) for cell in cells)


def _is_rule(line: str) -> bool:
    """A rule or a setext/RST underline: one of -*_=~^# three or more times, spaces between."""
    marks = "".join(line.split())
    return len(marks) >= 3 and marks[0] in "-*_=~^#" and marks == marks[0] * len(marks)


def snippet_text(snippet: str, doc_type: str, text: str = "", words: int = 24) -> str:
    """What the terminal shows of a snippet: prose cleaned, code only joined to one line.
    A snippet without matches (no marker) is the chunk's first `words`, taken from `text`
    after cleaning, so its line structure (headings, tables) is still there to clean."""
    if HL_OPEN not in snippet and text:
        snippet = text
        clean = strip_markdown(text) if doc_type != "code" else " ".join(text.split())
        parts = clean.split()
        return " ".join(parts[:words]) + (" …" if len(parts) > words else "")
    if doc_type != "code":
        return strip_markdown(snippet)
    return " ".join(snippet.split())


def without_heading(snippet: str, heading: str) -> str:
    """The snippet less the heading it opens with, when that heading (the last part of
    `heading`, shown on the line above it) is all it repeats: "Install › From source" above
    "From source: Download the tarball…" leaves "Download the tarball…". Only a whole heading
    goes, with one separator after it ("-v" or ".env" are kept whole); highlight markers are
    skipped over, never cut in half."""
    last = heading.rsplit(" › ", 1)[-1].strip()
    if not last:
        return snippet
    at = consumed = 0
    open_marks = 0
    while consumed < len(last) and at < len(snippet):
        char = snippet[at]
        if char in (HL_OPEN, HL_CLOSE):
            open_marks += 1 if char == HL_OPEN else -1
        elif char.casefold() != last[consumed].casefold():
            return snippet
        else:
            consumed += 1
        at += 1
    if consumed < len(last):
        return snippet
    if open_marks and snippet.startswith(HL_CLOSE, at):
        at, open_marks = at + 1, 0
    following = snippet[at : at + 2].lstrip(HL_OPEN)[:1]
    if open_marks or (_is_word(following) and _is_word(last[-1])):
        return snippet  # mid-highlight, or the heading is the start of a longer word
    rest = _SEPARATOR.sub("", snippet[at:], count=1)
    return rest or snippet


_SEPARATOR = re.compile(r"^\s*(?:[:.\-–—](?=\s))?\s*")


def _is_word(char: str) -> bool:
    return bool(char) and (char.isalnum() or char == "_")
