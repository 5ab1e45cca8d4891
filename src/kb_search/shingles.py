"""Near-identical text: word shingles, and how much of one text another holds.

A text's shingles are its runs of SHINGLE_WORDS consecutive words (lower case, letters and
digits only), so layout hardly matters: PDF line breaks, HTML markup and Markdown syntax
drop out, and a passage cut at other chunk boundaries keeps most of its shingles.
`containment` is the share of the smaller text's shingles that the larger one holds: near 1
for the same passage in a PDF and in its HTML chapter, low for two texts that only share
phrases (measured in docs/search.md, "Copies").

A whole document is compared by its `sketch`: the hashes of the shingles that fall in one
SKETCH_RATE-th of the hash space. The same shingle always hashes alike, so two documents'
sketches share about one in SKETCH_RATE of their common shingles, and the shared share of the
smaller sketch estimates the containment of the whole texts (a book and its chapters as well
as a guide in two formats) from a fixed, small fraction of the words.
"""

from __future__ import annotations

import re
import zlib
from collections import deque

SHINGLE_WORDS = 3
MIN_SHINGLES = 8  # a text shorter than this (a heading, a one-liner) is never called a copy
_WORD = re.compile(r"\w+")

Shingles = frozenset[tuple[str, ...]]
SKETCH_RATE = 8  # one shingle hash in this many is kept in a document's sketch


def shingles(text: str) -> Shingles:
    """The text's runs of SHINGLE_WORDS words."""
    words = _WORD.findall(text.lower())
    return frozenset(zip(*(words[i:] for i in range(SHINGLE_WORDS))))


def sketch(text: str) -> list[int]:
    """The text's shingle hashes (CRC-32 of the words joined by a space) that are multiples of
    SKETCH_RATE, each once, sorted. Read word by word: a book's text costs its sketch, not a
    list of its words and a set of all its hashes (25 times the text)."""
    window: deque[str] = deque(maxlen=SHINGLE_WORDS)
    hashes = set()
    for word in _WORD.finditer(text.lower()):
        window.append(word[0])
        if len(window) == SHINGLE_WORDS:
            value = zlib.crc32(" ".join(window).encode())
            if value % SKETCH_RATE == 0:
                hashes.add(value)
    return sorted(hashes)


def containment(a: Shingles, b: Shingles) -> float:
    """|a ∩ b| / min(|a|, |b|); 0 when either text is under MIN_SHINGLES."""
    if len(a) < MIN_SHINGLES or len(b) < MIN_SHINGLES:
        return 0.0
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return len(small & large) / len(small)


class ShingleIndex:
    """Texts added one at a time; `containments` of a new text against each of them, by one
    pass over its shingles (not one set intersection per pair)."""

    def __init__(self) -> None:
        self._owners: dict[tuple[str, ...], list[int]] = {}
        self._sizes: list[int] = []

    def add(self, text_shingles: Shingles) -> int:
        """Index a text; returns its number (0, 1, ...)."""
        number = len(self._sizes)
        self._sizes.append(len(text_shingles))
        for shingle in text_shingles:
            self._owners.setdefault(shingle, []).append(number)
        return number

    def containments(self, text_shingles: Shingles) -> dict[int, float]:
        """`containment` of the text with every indexed text it shares a shingle with."""
        size = len(text_shingles)
        if size < MIN_SHINGLES:
            return {}
        shared: dict[int, int] = {}
        for shingle in text_shingles:
            for number in self._owners.get(shingle, ()):
                shared[number] = shared.get(number, 0) + 1
        return {
            number: count / min(size, self._sizes[number])
            for number, count in shared.items()
            if self._sizes[number] >= MIN_SHINGLES
        }
