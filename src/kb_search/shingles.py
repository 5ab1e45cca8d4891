"""Near-identical text: word shingles, and how much of one text another holds.

A text's shingles are its runs of SHINGLE_WORDS consecutive words (lower case, letters and
digits only), so layout hardly matters: PDF line breaks, HTML markup and Markdown syntax
drop out, and a passage cut at other chunk boundaries keeps most of its shingles.
`containment` is the share of the smaller text's shingles that the larger one holds: near 1
for the same passage in a PDF and in its HTML chapter, low for two texts that only share
phrases (measured in docs/search.md, "Copies").
"""

from __future__ import annotations

import re

SHINGLE_WORDS = 3
MIN_SHINGLES = 8  # a text shorter than this (a heading, a one-liner) is never called a copy
_WORD = re.compile(r"\w+")

Shingles = frozenset[tuple[str, ...]]


def shingles(text: str) -> Shingles:
    """The text's runs of SHINGLE_WORDS words."""
    words = _WORD.findall(text.lower())
    size = SHINGLE_WORDS
    return frozenset(tuple(words[i : i + size]) for i in range(len(words) - size + 1))


def containment(a: Shingles, b: Shingles) -> float:
    """|a ∩ b| / min(|a|, |b|); 0 when either text is under MIN_SHINGLES."""
    if len(a) < MIN_SHINGLES or len(b) < MIN_SHINGLES:
        return 0.0
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return len(small & large) / len(small)
