"""What every chunking of a text file must satisfy, checked against the file itself.

The checks re-read the source with their own small scanner (ATX headings outside fences),
so they do not trust the parser's idea of sections.
"""

from __future__ import annotations

import re

from kb_search.chunking.tables import is_separator_row
from kb_search.chunking.tokens import TokenCounter
from kb_search.parsed import ChunkSettings, ParsedDocument

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
SPLIT_LEVELS = 3
MAX_TITLE_CHARS = 200  # of one heading in a chain (the parser cuts longer ones)


def line_chains(lines: list[str], body_start: int) -> list[tuple[str, ...]]:
    """The heading chain (levels 1-3) each line sits under."""
    chains: list[tuple[str, ...]] = []
    open_levels: dict[int, str] = {}
    fence: str | None = None
    for index, line in enumerate(lines):
        opened = _FENCE.match(line)
        if fence is None and index >= body_start:
            atx = _ATX.match(line)
            if atx and len(atx.group(1)) <= SPLIT_LEVELS and _title(atx.group(2)):
                level = len(atx.group(1))
                open_levels = {k: v for k, v in open_levels.items() if k < level}
                open_levels[level] = _title(atx.group(2))
        if opened:
            marker = opened.group(1)
            if fence is None:
                fence = marker
            elif line.strip().startswith(fence) and set(line.strip()) == {fence[0]}:
                fence = None
        chains.append(tuple(open_levels[k] for k in sorted(open_levels)))
    return chains


def _title(raw: str) -> str:
    """A heading's title as CommonMark reads it: no closing `#` run, no `{#anchor}`; a
    heading of `#` alone is empty (and opens no section)."""
    title = re.sub(r"[ \t]+#+$", "", raw.strip())
    title = "" if set(title) <= {"#"} else title
    return re.sub(r"\s*\{#[^}]*\}$", "", title).strip()[:MAX_TITLE_CHARS]


def check_document(
    document: ParsedDocument,
    text: str,
    settings: ChunkSettings,
    count: TokenCounter,
    body_start: int = 0,
    markdown: bool = True,
) -> None:
    """Assert the invariants on every chunk of a document parsed from `text`."""
    chunks = document.chunks
    lines = text.split("\n")
    assert chunks, "no chunks"
    whole = len(chunks) == 1
    chains = line_chains(lines, body_start) if markdown else [()] * len(lines)
    previous_start = previous_end = 0
    for index, chunk in enumerate(chunks):
        where = f"chunk {index} (L{chunk.line_start}-L{chunk.line_end}): {chunk.text[:60]!r}"
        assert chunk.text.strip(), where
        assert chunk.token_count <= settings.max_tokens, where
        assert count(chunk.text) <= chunk.token_count, where
        assert len(chunk.text) <= settings.char_limit, where
        assert chunk.line_start is not None and chunk.line_end is not None, where
        assert 1 <= chunk.line_start <= chunk.line_end <= len(lines), where
        assert chunk.line_start >= previous_start and chunk.line_end >= previous_end, where
        previous_start, previous_end = chunk.line_start, chunk.line_end
        if not whole and chunk.token_count < settings.min_tokens:
            _check_small(chunks, index, settings, where)
        if markdown and not whole and _only_headings(chunk.text):
            # Only where no neighbour had room: a run of empty sections before a block
            # that fills a chunk on its own, or at the end of a file.
            _check_small(chunks, index, settings, f"heading-only {where}")
        if markdown:
            _check_heading(chunk.heading, chains[chunk.line_start - 1 : chunk.line_end], where)
            _check_rows_whole(chunk.text, where)
            fences = sum(1 for line in chunk.text.split("\n") if _FENCE.match(line))
            assert fences % 2 == 0, f"unbalanced fence in {where}"
    _check_nothing_lost(chunks, lines, body_start)


def _only_headings(text: str) -> bool:
    return all(_ATX.match(line) for line in text.split("\n") if line.strip())


def _check_small(chunks: list, index: int, settings: ChunkSettings, where: str) -> None:
    """A small chunk is allowed only where neither neighbour had room for it."""
    chunk = chunks[index]
    for other in [chunks[i] for i in (index - 1, index + 1) if 0 <= i < len(chunks)]:
        tokens = other.token_count + chunk.token_count
        chars = len(other.text) + len(chunk.text)
        room = tokens <= settings.max_tokens and chars <= settings.char_limit
        assert not room, f"small chunk could have joined a neighbour: {where}"


def _check_heading(heading: str | None, chains: list[tuple[str, ...]], where: str) -> None:
    if heading is None:
        assert () in chains, f"no heading, but every line is under one: {where}"
        return
    parts = tuple(heading.split(" > "))
    assert any(chain[: len(parts)] == parts for chain in chains), f"{heading!r} not in {where}"


def _check_rows_whole(text: str, where: str) -> None:
    for line in text.split("\n"):
        if line.lstrip().startswith("|"):
            assert line.rstrip().endswith("|"), f"table row cut in {where}: {line[:60]!r}"


def _check_nothing_lost(chunks: list, lines: list[str], body_start: int) -> None:
    """Every word of every non-blank line is in a chunk whose range covers that line."""
    covering: dict[int, list[str]] = {}
    for chunk in chunks:
        for number in range(chunk.line_start, chunk.line_end + 1):
            covering.setdefault(number, []).append(chunk.text)
    for number, line in enumerate(lines[body_start:], start=body_start + 1):
        if not line.strip() or is_separator_row(line):
            continue
        texts = covering.get(number)
        assert texts, f"line {number} is in no chunk: {line[:60]!r}"
        joined = "\n".join(texts)
        # A word longer than a chunk's character cap is cut across chunks: glued back here.
        glued = "".join(texts)
        missing = [word for word in line.split() if word not in joined and word not in glued]
        assert not missing, f"line {number} lost {missing[:5]}"
