"""Well-known licence texts (Apache-2.0, MIT, BSD, GPL, MPL...): one short chunk, not N.

A project's LICENSE or COPYING holds a standard legal text, word for word the same in
thousands of repositories. Indexed whole it is 2 to 40 chunks of boilerplate whose words
("limit", "use", "permission", "add your own", "modifications") match unrelated questions and
take slots from the documentation. What a person asks of it is which licence applies ("what
licence is this under", "Apache License permissions"), and that the name and the first
lines answer.

The rule (docs/formats.md, "Licence texts"): a document is a licence text when

1. it opens with the text of a well-known licence: the licence's fingerprint (phrases found
   in every copy of its text, compared as lower-case words, so wrapping, quotes and
   punctuation do not matter) is found, the first one in the opening lines, after at most a
   title, copyright lines and a line naming the licence (a README that ends with its licence
   opens with its own prose, and stays whole);
2. it is not much longer than the licences it holds (each licence's longest usual text,
   a few copyright lines and an appendix): a document that quotes a licence among other
   text stays whole.

Such a document becomes one chunk over all its lines: "Licence: <name> (<SPDX id>)", its
copyright lines and its opening lines. Its title names the licence; `metadata["licences"]`
the SPDX ids. `kb get` of its citation still returns the whole text from the file, and the
same licence shipped by several projects is one result naming the others (`also_at`).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

from kb_search.chunking.tokens import TokenCounter, count_tokens
from kb_search.parsed import ParsedChunk, ParsedDocument


@dataclass(frozen=True)
class KnownLicence:
    spdx: str
    name: str
    opening: tuple[str, ...]  # one of these opens the text (as lower-case words)
    body: tuple[str, ...]  # ...and one of these is in it (the text itself, not a mention)
    words: int  # the longest usual text of it, in words
    ending: str = ""  # its last words, where known: a document's own text may not follow


def _w(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


_WORD = re.compile(r"[a-z0-9]+")

_BSD_BODY = (
    _w("Redistributions of source code must retain the above copyright notice"),
    _w("THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS"),
)
_BSD_OPENING = (
    _w("Redistribution and use in source and binary forms, with or without modification, are "
       "permitted provided that the following conditions are met"),
)  # fmt: skip
_GNU_BODY = (
    _w("This program is free software"),
    _w("Everyone is permitted to copy and distribute verbatim copies of this license document"),
)

# More specific texts first: the first whose fingerprint matches names the text.
LICENCES: tuple[KnownLicence, ...] = (
    KnownLicence(
        "Apache-2.0", "Apache License 2.0",
        (_w("Apache License Version 2.0, January 2004"),),
        (_w("TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION"),),
        1800,
    ),
    # ...and its notice alone (what a LICENSE holds in some projects)
    KnownLicence(
        "Apache-2.0", "Apache License 2.0",
        (_w("Licensed under the Apache License, Version 2.0"),),
        (_w("you may not use this file except in compliance with the License"),),
        120,
        _w("limitations under the License"),
    ),
    KnownLicence(
        "AGPL-3.0", "GNU Affero General Public License v3.0",
        (_w("GNU AFFERO GENERAL PUBLIC LICENSE Version 3, 19 November 2007"),), _GNU_BODY, 6600,
    ),
    KnownLicence(
        "LGPL-3.0", "GNU Lesser General Public License v3.0",
        (_w("GNU LESSER GENERAL PUBLIC LICENSE Version 3, 29 June 2007"),), _GNU_BODY, 1400,
    ),
    KnownLicence(
        "LGPL-2.1", "GNU Lesser General Public License v2.1",
        (_w("GNU LESSER GENERAL PUBLIC LICENSE Version 2.1, February 1999"),), _GNU_BODY, 4700,
    ),
    KnownLicence(
        "LGPL-2.0", "GNU Library General Public License v2",
        (_w("GNU LIBRARY GENERAL PUBLIC LICENSE Version 2, June 1991"),), _GNU_BODY, 4600,
    ),
    KnownLicence(
        "GPL-3.0", "GNU General Public License v3.0",
        (_w("GNU GENERAL PUBLIC LICENSE Version 3, 29 June 2007"),), _GNU_BODY, 6300,
    ),
    KnownLicence(
        "GPL-2.0", "GNU General Public License v2.0",
        (_w("GNU GENERAL PUBLIC LICENSE Version 2, June 1991"),), _GNU_BODY, 3200,
    ),
    KnownLicence(
        "GFDL-1.3", "GNU Free Documentation License v1.3",
        (_w("GNU Free Documentation License Version 1.3, 3 November 2008"),),
        (_w("The purpose of this License is to make a manual"),),
        4100,
    ),
    KnownLicence(
        "GFDL-1.2", "GNU Free Documentation License v1.2",
        (_w("GNU Free Documentation License Version 1.2, November 2002"),),
        (_w("The purpose of this License is to make a manual"),),
        3700,
    ),
    KnownLicence(
        "MPL-2.0", "Mozilla Public License 2.0",
        (_w("Mozilla Public License Version 2.0"), _w("Mozilla Public License, version 2.0")),
        (_w("Covered Software"), _w("This Source Code Form is subject to the terms")),
        2600,
    ),
    KnownLicence(
        "MPL-1.1", "Mozilla Public License 1.1",
        (_w("MOZILLA PUBLIC LICENSE Version 1.1"),), (_w("Covered Code"),), 4400,
    ),
    KnownLicence(
        "EPL-2.0", "Eclipse Public License 2.0",
        (_w("Eclipse Public License - v 2.0"),), (_w("THE ACCOMPANYING PROGRAM IS PROVIDED"),),
        2600,
    ),
    KnownLicence(
        "EPL-1.0", "Eclipse Public License 1.0",
        (_w("Eclipse Public License - v 1.0"),), (_w("THE ACCOMPANYING PROGRAM IS PROVIDED"),),
        2000,
    ),
    KnownLicence(
        "BSL-1.0", "Boost Software License 1.0",
        (_w("Boost Software License - Version 1.0"),),
        (_w("Permission is hereby granted, free of charge, to any person or organization"),),
        300,
    ),
    KnownLicence(
        "MIT", "MIT License",
        (_w("Permission is hereby granted, free of charge, to any person obtaining a copy"),),
        (_w("The above copyright notice and this permission notice shall be included in all "
            "copies or substantial portions of the Software"),),
        250,
    ),  # fmt: skip
    KnownLicence(
        "MIT-0", "MIT No Attribution",
        (_w("Permission is hereby granted, free of charge, to any person obtaining a copy"),),
        (_w("THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND"),),
        200,
    ),
    KnownLicence(
        "BlueOak-1.0.0", "Blue Oak Model License 1.0.0",
        (_w("Blue Oak Model License Version 1.0.0"),),
        (_w("This license gives everyone as much permission to work with this software"),),
        600,
    ),
    KnownLicence(
        "ISC", "ISC License",
        (_w("Permission to use, copy, modify, and/or distribute this software for any purpose"),
         _w("Permission to use, copy, modify, and distribute this software for any purpose")),
        (_w("DISCLAIMS ALL WARRANTIES WITH REGARD TO THIS SOFTWARE"),),
        200,
    ),
    KnownLicence(
        "BSD-4-Clause", "BSD 4-Clause License", _BSD_OPENING,
        (_w("All advertising materials mentioning features or use of this software"),), 400,
    ),
    KnownLicence(
        "BSD-3-Clause", "BSD 3-Clause License", _BSD_OPENING,
        (_w("Neither the name of"),), 350,
    ),
    KnownLicence("BSD-2-Clause", "BSD 2-Clause License", _BSD_OPENING, _BSD_BODY, 300),
    KnownLicence(
        "Zlib", "zlib License",
        (_w("This software is provided 'as-is', without any express or implied warranty"),),
        (_w("Altered source versions must be plainly marked as such"),),
        200,
    ),
    KnownLicence(
        "Unlicense", "The Unlicense",
        (_w("This is free and unencumbered software released into the public domain"),),
        (_w("Anyone is free to copy, modify, publish, use, compile, sell, or distribute"),),
        300,
    ),
    KnownLicence(
        "CC0-1.0", "Creative Commons Zero v1.0 Universal",
        (_w("Creative Commons Legal Code CC0 1.0 Universal"), _w("CC0 1.0 Universal")),
        (_w("Statement of Purpose"),),
        1300,
    ),
    KnownLicence(
        "CC-BY-SA-4.0", "Creative Commons Attribution-ShareAlike 4.0",
        (_w("Attribution-ShareAlike 4.0 International"),),
        (_w("Creative Commons Corporation"),),
        3600,
    ),
    KnownLicence(
        "CC-BY-4.0", "Creative Commons Attribution 4.0",
        (_w("Attribution 4.0 International"),), (_w("Creative Commons Corporation"),), 3300,
    ),
    KnownLicence(
        "WTFPL", "Do What The F*ck You Want To Public License",
        (_w("DO WHAT THE FUCK YOU WANT TO PUBLIC LICENSE"),),
        (_w("TERMS AND CONDITIONS FOR COPYING, DISTRIBUTION AND MODIFICATION"),),
        150,
    ),
)  # fmt: skip

OPENING_LINES = 40  # a licence opens within this many non-blank lines...
# ...after a title, copyright lines, lines naming a licence and at most this many other words
PREAMBLE_WORDS = 40
EXTRA_WORDS = 80  # copyright lines and a short preamble beyond the licences' own words
# Words after a licence's known ending (not counting lines naming a licence or a copyright,
# as Debian's "the full text ... is in /usr/share/common-licenses"): a doc page under an
# Apache header comment is the page, not the licence
TRAILING_WORDS = 30
# No document of more words (or characters per word) is a licence text: what every file read
# as text or Markdown is checked against before its words are gathered (a 50 MB text took
# 20 s and 840 MB here), and what keeps a page in a script of no a-z words whole
MAX_WORDS = sum(licence.words for licence in LICENCES) + EXTRA_WORDS
MAX_CHARS_PER_WORD = 16
MAX_CHARS = MAX_CHARS_PER_WORD * MAX_WORDS + 1000
SUMMARY_WORDS = 40  # of the licence's opening lines in its chunk
MIN_OPENING_WORDS = 20  # kept before section titles give way, when the chunk must be cut
MAX_SECTION_WORDS = 70  # of its section titles ("Grant of Patent License; Trademarks; ...")
MAX_COPYRIGHT_LINES = 5
_COPYRIGHT = re.compile(r"copyright|\(c\)|©|all rights reserved", re.I)
_LICENCE_LINE = re.compile(r"licen[cs]", re.I)
# A numbered section's title: "   6. Trademarks. This License does not...", "1. Definitions"
_SECTION = re.compile(
    r"^\s{0,8}\d{1,2}\.\s+([A-Z][\w'’/-]*(?:[ ,]+[\w'’/-]+){0,7}?)(?:\.(?:\s|$)|\s*$)"
)
# A copyright statement ("Copyright (c) 2019 Ann", "© 2020 Bob"), not the licence's own words
# about "copyright notice"s, nor the template's placeholder ("Copyright [yyyy] [name...]").
_STATEMENT = re.compile(
    r"^\W*(?:copyright\b|\(c\)|©)(?=.*(?:\b(?:19|20)\d\d\b|\(c\)|©))(?!.*(?:\[yyyy\]|<year>))", re.I
)


@dataclass(frozen=True)
class Recognised:
    licences: tuple[KnownLicence, ...]
    opening_line: int  # 0-based line where the first licence's text opens

    @property
    def ids(self) -> list[str]:
        return [licence.spdx for licence in self.licences]

    @property
    def names(self) -> str:
        return "; ".join(f"{lic.name} ({lic.spdx})" for lic in self.licences)


class _Words:
    """A text as lower-case words joined by spaces, with the line each word came from."""

    def __init__(self, lines: list[str]):
        parts: list[str] = []
        self.starts: list[int] = []  # character offset in `text` where each line's words start
        self.line_of: list[int] = []
        offset = 0
        for number, line in enumerate(lines):
            words = _WORD.findall(line.lower())
            if not words:
                continue
            self.starts.append(offset)
            self.line_of.append(number)
            piece = " ".join(words)
            parts.append(piece)
            offset += len(piece) + 1
        self.text = " ".join(parts)
        self.count = len(self.text.split()) if self.text else 0

    def find(self, phrase: str) -> int | None:
        """The line where `phrase` starts (as whole words), or None."""
        at = f" {self.text} ".find(f" {phrase} ")
        if at < 0:
            return None
        return self.line_of[bisect_right(self.starts, at) - 1]

    def last_line_of(self, phrase: str) -> int | None:
        """The line where the last whole-word `phrase` ends, or None."""
        at = f" {self.text} ".rfind(f" {phrase} ")
        if at < 0:
            return None
        return self.line_of[bisect_right(self.starts, at + len(phrase) - 1) - 1]


def recognise(text: str) -> Recognised | None:
    """The well-known licences a document is the text of (rule in the module doc), or None."""
    if len(text) > MAX_CHARS or not _opens_near_the_top(text) or not _within_bounds(text):
        return None
    lines = text.split("\n")
    words = _Words(lines)
    if not words.text:
        return None
    found: list[tuple[int, KnownLicence]] = []
    for licence in LICENCES:
        openings = [line for p in licence.opening if (line := words.find(p)) is not None]
        if not openings or not any(words.find(p) is not None for p in licence.body):
            continue
        if any(
            other.spdx == licence.spdx or other.opening == licence.opening for _, other in found
        ):
            continue  # named already (the BSD family shares its opening: the more specific)
        found.append((min(openings), licence))
    if not found:
        return None
    found.sort(key=lambda item: item[0])
    first = found[0][0]
    if not _only_preamble(lines[:first]):
        return None
    if words.count > sum(licence.words for _, licence in found) + EXTRA_WORDS:
        return None
    if len(text.strip()) > MAX_CHARS_PER_WORD * words.count + 1000:
        return None  # most of it is not in words a licence is written in
    ends = words.last_line_of(found[-1][1].ending) if found[-1][1].ending else None
    if ends is not None and _prose_words(lines[ends + 1 :]) > TRAILING_WORDS:
        return None
    return Recognised(tuple(licence for _, licence in found), first)


def _opens_near_the_top(text: str) -> bool:
    """Whether a licence's opening words are in the first lines that hold words, where rule 1
    wants them: the cheap test every other file fails first."""
    head: list[str] = []
    for line in text.split("\n", 4 * OPENING_LINES)[: 4 * OPENING_LINES]:
        if _ANY_CASE_WORD.search(line):
            head.append(line)
            if len(head) > OPENING_LINES + 5:  # + the opening's own lines
                break
    words = _Words(head)
    return any(words.find(p) is not None for licence in LICENCES for p in licence.opening)


def _within_bounds(text: str) -> bool:
    return sum(1 for _ in zip(range(MAX_WORDS + 1), _ANY_CASE_WORD.finditer(text))) <= MAX_WORDS


_ANY_CASE_WORD = re.compile(r"[A-Za-z0-9]+")


def _only_preamble(lines: list[str]) -> bool:
    """Lines before a licence's text: a title, copyright lines, a line naming the licence."""
    kept = [line for line in lines if _WORD.search(line.lower())]
    if len(kept) > OPENING_LINES:
        return False
    return _prose_words(kept) <= PREAMBLE_WORDS


def _prose_words(lines: list[str]) -> int:
    """Words of the lines that name no licence and hold no copyright."""
    prose = [line for line in lines if not (_COPYRIGHT.search(line) or _LICENCE_LINE.search(line))]
    return sum(len(line.split()) for line in prose)


def condense_licence(
    document: ParsedDocument,
    text: str,
    count: TokenCounter = count_tokens,
    max_tokens: int = 200,
) -> ParsedDocument:
    """`document` as one chunk naming its licences when `text` (its lines) is a licence
    text (its opening words, then its section titles, cut to fit `max_tokens`); else the
    document as it was."""
    found = recognise(text)
    if found is None:
        return document
    lines = text.split("\n")
    preamble = [line.strip() for line in lines[: found.opening_line] if line.strip()]
    later = lines[found.opening_line :]
    copyright_lines = [ln.strip() for ln in later if _STATEMENT.search(ln)][:MAX_COPYRIGHT_LINES]
    head = [f"Licence: {found.names}", *preamble, *copyright_lines]
    opening = " ".join(later).split()[:SUMMARY_WORDS]
    sections = _section_titles(later)

    def compose() -> str:
        outline = [f"Sections: {'; '.join(sections)}"] if sections else []
        return "\n".join([*head, *outline, *([" ".join([*opening, "…"])] if opening else [])])

    body = compose()
    while count(body) > max_tokens and (opening or sections):
        if len(opening) > MIN_OPENING_WORDS or not sections:
            del opening[-10:]
        else:
            sections.pop()
        body = compose()
    last = max((c.line_end or 0 for c in document.chunks), default=0) or len(lines)
    chunk = ParsedChunk(text=body, line_start=1, line_end=last, token_count=count(body))
    metadata = {**document.metadata, "licences": found.ids}
    title = " + ".join(licence.name for licence in found.licences)
    if _own_title(document.title, preamble):
        title = f"{document.title}: {title}"  # "autopuncitems: MIT License", a README's
    return ParsedDocument(
        title=title,
        doc_type=document.doc_type,
        chunks=[chunk],
        language=document.language,
        tags=document.tags,
        metadata=metadata,
        page_count=document.page_count,
        notes=document.notes,
    )


def _own_title(title: str, preamble: list[str]) -> bool:
    """Whether the document's title is a line of its preface that names no licence or
    copyright: the project the file is about, not the licence's own heading. A title a few
    words long that opens with a letter or digit: not a comment's `/*`, a rule, a sentence."""
    if not title[:1].isalnum() or len(title.split()) > MAX_TITLE_WORDS:
        return False
    if _COPYRIGHT.search(title) or _LICENCE_LINE.search(title) or not _NAME.search(title):
        return False
    return any(line.lstrip("#").strip() == title for line in preamble)


MAX_TITLE_WORDS = 8
_NAME = re.compile(r"[A-Za-z]{3}")


def _section_titles(lines: list[str]) -> list[str]:
    """The licence's numbered section titles, in order, each once, within MAX_SECTION_WORDS:
    what a question about one clause ("trademarks", "patent grant") names."""
    titles: list[str] = []
    words = 0
    for line in lines:
        match = _SECTION.match(line)
        if not match or match.group(1) in titles:
            continue
        words += len(match.group(1).split())
        if words > MAX_SECTION_WORDS:
            break
        titles.append(match.group(1))
    return titles
