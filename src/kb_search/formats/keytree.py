"""Chunking structured text (JSON, YAML, TOML) along its keys.

A document is a tree of keyed spans of the file's text. A span that fits the token budget
is one chunk headed by its key path ("spec > template > containers"); one that does not is
opened and its children packed in order (top-level keys merged until a group reaches
min_tokens, deeper ones packed up to max_tokens); a leaf too big to fit is cut at lines.
Chunk text is always the file's own text, so line ranges are exact.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from kb_search.chunking.tokens import TokenCounter, pack_lines
from kb_search.parsed import ChunkSettings, ParsedChunk

MAX_LABELS_IN_HEADING = 3


@dataclass
class KeyNode:
    """Text [start, end) of the file that holds the value at `path`."""

    path: tuple[str, ...]
    start: int
    end: int
    ref: Any = None  # what the builder needs to find the children (a YAML node, a JSON offset)
    children: list[KeyNode] | None = field(default=None, repr=False)


ChildrenOf = Callable[[KeyNode], list["KeyNode"]]


class LineIndex:
    """Character offset -> 1-based line number."""

    def __init__(self, text: str) -> None:
        self.starts = [0] + [i + 1 for i, char in enumerate(text) if char == "\n"]

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def offset(self, line: int, column: int = 0) -> int:
        """Offset of a 0-based line and column."""
        return self.starts[min(line, len(self.starts) - 1)] + column


@dataclass
class _Packer:
    text: str
    children_of: ChildrenOf
    settings: ChunkSettings
    count: TokenCounter
    lines: LineIndex
    keep_gaps: bool
    chunks: list[ParsedChunk] = field(default_factory=list)

    def emit(self, node: KeyNode, root: bool = False) -> None:
        if self.size(node.start, node.end) <= self.settings.max_tokens:
            self.add(node.start, node.end, heading_of([node]))
            return
        kids = self.children_of(node)
        if not kids:
            self.split_leaf(node)
            return
        group: list[KeyNode] = []
        total = 0
        # Sizes include the text between siblings (separators, comments), so that a packed
        # group never exceeds the budget. With gaps kept, that text goes in the chunk too:
        # comments travel with the key after them (a file's opening comment with its first).
        gap_start = node.start if root else kids[0].start
        for kid in kids:
            kid_size = self.size(gap_start, kid.end)
            start = gap_start if self.keep_gaps else kid.start
            gap_start = kid.end
            if kid_size > self.settings.max_tokens:
                self.flush(group)
                group, total = [], 0
                self.emit(kid)
                continue
            too_big = total + kid_size > self.settings.max_tokens
            # Top-level keys are like sections: one that reached min_tokens stands alone with
            # its own heading. Inside a value too big to keep whole they are like paragraphs:
            # packed up to the budget.
            if group and (too_big or (root and total >= self.settings.min_tokens)):
                self.flush(group)
                group, total = [], 0
            group.append(kid if start == kid.start else replace(kid, start=start))
            total += kid_size
        self.flush(group)

    def size(self, start: int, end: int) -> int:
        """Tokens in text[start:end], or just "over budget" for a span that cannot fit: a
        word piece never covers more than 4 non-space characters, so a span with more than
        4 x max_tokens of them is over budget without counting (keeps big files linear)."""
        span = self.text[start:end]
        dense = len(span) - sum(span.count(space) for space in " \n\t\r")
        if dense > 4 * self.settings.max_tokens:
            return self.settings.max_tokens + 1
        return self.count(span)

    def flush(self, group: list[KeyNode]) -> None:
        if group:
            self.add(group[0].start, group[-1].end, heading_of(group))

    def add(self, start: int, end: int, heading: str | None) -> None:
        start, end = _strip_span(self.text, start, end)
        if start >= end:
            return
        body = self.text[start:end]
        self.chunks.append(
            ParsedChunk(
                text=body,
                heading=heading,
                line_start=self.lines.line(start),
                line_end=self.lines.line(end - 1),
                token_count=self.count(body),
            )
        )

    def split_leaf(self, node: KeyNode) -> None:
        start, end = _strip_span(self.text, node.start, node.end)
        heading = heading_of([node])
        first = self.lines.line(start)
        body_lines = self.text[start:end].split("\n")
        for piece in pack_lines(body_lines, first, self.settings.max_tokens, self.count):
            self.chunks.append(
                ParsedChunk(
                    text=piece.text,
                    heading=heading,
                    line_start=piece.line_start,
                    line_end=piece.line_end,
                    token_count=self.count(piece.text),
                )
            )


def chunk_tree(
    text: str,
    root: KeyNode,
    children_of: ChildrenOf,
    settings: ChunkSettings,
    count: TokenCounter,
    lines: LineIndex | None = None,
    keep_gaps: bool = False,
) -> list[ParsedChunk]:
    """Chunks of `root` (the whole document) along its keys; `keep_gaps` puts the text
    between keys (comments) in the chunk of the key that follows it."""
    packer = _Packer(text, children_of, settings, count, lines or LineIndex(text), keep_gaps)
    packer.emit(root, root=True)
    return packer.chunks


def heading_of(group: list[KeyNode]) -> str | None:
    """ "a > b" for one node; "a > b, c, d" (or "a > b … z") for siblings packed together."""
    paths = [node.path for node in group]
    if len(paths) == 1:
        return " > ".join(paths[0]) or None
    prefix = _common_prefix(paths)
    labels = [".".join(path[len(prefix) :]) or "(value)" for path in paths]
    if len(labels) > MAX_LABELS_IN_HEADING:
        labels = [labels[0], "…", labels[-1]]
    joined = ", ".join(labels).replace(", …,", " …")
    return " > ".join([*prefix, joined])


def _common_prefix(paths: list[tuple[str, ...]]) -> tuple[str, ...]:
    prefix = paths[0]
    for path in paths[1:]:
        size = 0
        while size < min(len(prefix), len(path)) and prefix[size] == path[size]:
            size += 1
        prefix = prefix[:size]
    # Never the whole path of a member: the last label says which siblings these are.
    return prefix[: min(len(p) for p in paths) - 1] if prefix else prefix


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Drop surrounding whitespace, but keep the indentation of the first line."""
    while end > start and text[end - 1].isspace():
        end -= 1
    while start < end and text[start] in "\r\n":
        start += 1
    line_start = text.rfind("\n", 0, start) + 1
    if text[line_start:start].isspace():
        start = line_start
    while start < end and text[start] == "\n":
        start += 1
    first_newline = text.find("\n", start, end)
    while first_newline != -1 and not text[start:first_newline].strip():
        start = first_newline + 1
        first_newline = text.find("\n", start, end)
    return start, end
