"""From the sections and blocks of a text file (Markdown, reStructuredText, plain text, and
what HTML and Docling convert to Markdown) to the units `segment` cuts into chunks.

Shared rules, whatever the format:
- a heading is glued to what follows it: it never ends a chunk, so a heading-only section
  joins the next section;
- a chunk that starts inside a section repeats the section's heading line, one that starts
  inside a table repeats the table header (both only when small: at most a quarter of the
  budget), one that starts or ends inside a fenced block reopens or closes the fence;
- a fenced block or table that fits is one unit (never cut); one that does not is cut
  between lines or rows; a row over the budget is split by cells, a line by sentences and
  then words, a word by characters only when it alone is over the budget;
- table separator rows are normalised (`|---|`) before they are counted and stored;
- no unit, so no chunk, is longer than the character cap; past `max_chunks` chunks' worth
  of text the rest of the file is dropped with a note.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from kb_search.chunking import segment
from kb_search.chunking.segment import Cut, Unit, chunk_units
from kb_search.chunking.tables import is_separator_row, normalise_row, split_cells, split_row
from kb_search.chunking.tokens import TokenCounter, iter_words, split_sentences
from kb_search.parsed import ChunkSettings

_LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s")
# Dot leaders of a table of contents ("Bear ........ 8"), rules, underscores: each character
# is a word piece. Three are kept (still a rule, still an ellipsis).
_LEADER = re.compile(r"([.\-_=*~·•])\1{3,}|\.(?: \.){3,}")
_FENCE_OPEN = re.compile(r"^(\s*)(`{3,}|~{3,})")
# Repeated context (heading line, table header, fence opener + closer) may take this share.
CONTEXT_SHARE = 4
# A prose line longer than this share of the budget is offered to the cut sentence by sentence.
SENTENCE_SHARE = 4


@dataclass
class Section:
    """Lines [start, end) (0-based) under one heading; level 0 is text before any heading."""

    chain: tuple[str, ...]
    level: int
    start: int
    end: int
    heading_line: str | None = None  # repeated at the top of continuation chunks
    heading_end: int | None = None  # first line after the heading (setext/RST span 2-3)

    @property
    def body_start(self) -> int:
        if self.heading_end is not None:
            return self.heading_end
        return self.start + (1 if self.level else 0)


@dataclass
class Block:
    """A unit of layout: paragraph, fence, table or heading (one too deep to split at)."""

    kind: str
    start: int  # 0-based, inclusive
    end: int  # exclusive


BlocksOf = Callable[[list[str], int, int], list[Block]]


def shorten_leaders(line: str) -> str:
    """Runs of one punctuation character (4 and more) in prose as three."""
    return _LEADER.sub(lambda m: (m.group(1) or ".") * 3, line)


def paragraph_blocks(lines: list[str], start: int, end: int) -> list[Block]:
    """Blank-line separated paragraphs within lines[start:end]."""
    blocks: list[Block] = []
    index = start
    while index < end:
        if not lines[index].strip():
            index += 1
            continue
        block_start = index
        while index < end and lines[index].strip():
            index += 1
        blocks.append(Block("paragraph", block_start, index))
    return blocks


def chunk_sections(
    lines: list[str],
    sections: list[Section],
    settings: ChunkSettings,
    count: TokenCounter,
    blocks_of: BlocksOf = paragraph_blocks,
) -> Cut:
    """Chunks of a sectioned text file, with notes about what the caps cut or dropped."""
    builder = _Builder(lines, settings, count)
    top = min((s.level for s in sections if s.level), default=1)
    previous: Section | None = None
    try:
        for section in sections:
            builder.section(section, _join_cost(previous, section, top), blocks_of)
            previous = section
    except _Full as full:
        builder.notes.append(
            f"text from line {full.line} on not indexed: over {settings.max_chunks} chunks"
        )
    cut = chunk_units(builder.units, settings, count)
    return Cut(cut.chunks, builder.finish_notes() + cut.notes)


@dataclass
class Passage:
    """A paragraph of a document known by pages rather than source lines (a PDF's text)."""

    text: str
    chain: tuple[str, ...] = ()
    page: int | None = None
    heading: bool = False
    rows: bool = False  # its lines are table rows: cut between them, never inside one
    new_chunk: bool = False  # a chunk starts here (a slide: one frame, one chunk)


# Keeping the last paragraph of a page and the first of the next in one chunk.
SPAN_PAGES = 3.0


def chunk_passages(passages: list[Passage], settings: ChunkSettings, count: TokenCounter) -> Cut:
    """Chunks of a paged document, under the same rules as sectioned text files; chunks
    carry page ranges and no line ranges."""
    lines: list[str] = []
    pages: list[int | None] = []
    builder = _Builder(lines, settings, count)
    context = _Context()
    try:
        for passage in passages:
            first, first_unit = len(lines), len(builder.units)
            texts = passage.text.split("\n")
            lines.extend(texts + [""])
            pages.extend([passage.page] * len(texts) + [None])
            builder.chain = passage.chain
            if passage.new_chunk:  # nothing of the slide before is repeated on this one
                context = _Context()
            if passage.heading:
                context = builder.context(_Context(), f"{passage.text}\n\n")
                builder.lines_unit(
                    first,
                    first + len(texts),
                    _Context(),
                    segment.SECTION,
                    join_cost=segment.SIBLING,
                    heading=True,
                )
            elif passage.rows:
                for index, text in enumerate(texts, start=first):
                    cost = segment.BLOCK if index == first else segment.TABLE_ROW
                    builder.line(index, text, context, cost, prose=False)
            else:
                builder.paragraph(Block("paragraph", first, first + len(texts)), context)
            if passage.new_chunk and len(builder.units) > first_unit:
                builder.units[first_unit].forced_break = True
    except _Full:
        builder.notes.append(
            f"text from page {pages[len(lines) - 1] or '?'} on not indexed: "
            f"over {settings.max_chunks} chunks"
        )
    previous_page = None
    for unit in builder.units:
        assert unit.line_start is not None and unit.line_end is not None
        unit.page_start, unit.page_end = pages[unit.line_start - 1], pages[unit.line_end - 1]
        unit.line_start = unit.line_end = None
        if previous_page is not None and unit.page_start != previous_page:
            unit.break_cost = min(unit.break_cost, segment.PAGE)
            unit.join_cost += SPAN_PAGES
        previous_page = unit.page_end
    cut = chunk_units(builder.units, settings, count)
    return Cut(cut.chunks, builder.finish_notes() + cut.notes)


def _join_cost(previous: Section | None, section: Section, top: int) -> float:
    """Cost of one chunk holding the end of `previous` and the start of `section`."""
    if previous is None or previous.level == 0:
        return segment.SIBLING
    if section.level <= top:
        return segment.TOP
    if section.level < previous.level:
        return segment.UP
    return segment.CHILD if section.level > previous.level else segment.SIBLING


class _Full(Exception):
    def __init__(self, line: int):
        self.line = line


@dataclass
class _Context:
    """What a chunk starting at a unit repeats first, and its cost."""

    prefix: str = ""
    tokens: int = 0


class _Builder:
    def __init__(self, lines: list[str], settings: ChunkSettings, count: TokenCounter):
        self.lines, self.settings = lines, settings
        self._count = count
        self._memo: dict[str, int] = {}
        self.units: list[Unit] = []
        self.notes: list[str] = []
        self.chain: tuple[str, ...] = ()
        self.long_lines = 0
        self.allowance_tokens = settings.max_chunks * settings.max_tokens
        self.allowance_chars = settings.max_chunks * settings.char_limit

    # -- measuring
    def count(self, text: str) -> int:
        """Tokens of a text, each distinct text counted once (the model tokenizer is slow)."""
        tokens = self._memo.get(text)
        if tokens is None:
            tokens = self._memo[text] = self._count(text) if text.strip() else 0
        return tokens

    def count_lines(self, texts: list[str], chars_budget: int) -> int | None:
        """Tokens of lines joined by newlines, or None when they are over chars_budget.

        Word pieces never span a line break, so the sum of the lines is the count."""
        if sum(len(text) + 1 for text in texts) - 1 > chars_budget:
            return None
        return sum(self.count(text) for text in texts)

    def small_context(self, text: str, tokens: int | None = None) -> bool:
        if tokens is None:
            tokens = self.count(text)
        share = CONTEXT_SHARE
        return len(text) * share <= self.settings.char_limit and (
            tokens * share <= self.settings.max_tokens
        )

    def context(self, base: _Context, text: str) -> _Context:
        """`base` plus `text` when that is still small context, else `base` itself."""
        prefix = f"{base.prefix}{text}"
        # Counted without the blank line it ends with: usually the heading's own line, known.
        tokens = base.tokens + self.count(text.rstrip("\n"))
        if not self.small_context(prefix, tokens):
            return base
        return _Context(prefix, tokens)

    def budget(
        self, context: _Context, suffix_tokens: int = 0, suffix_chars: int = 0
    ) -> tuple[int, int]:
        """Tokens and characters left for a unit after its context and suffix."""
        tokens = max(1, self.settings.max_tokens - context.tokens - suffix_tokens)
        chars = max(1, self.settings.char_limit - len(context.prefix) - suffix_chars)
        return tokens, chars

    # -- emitting
    def add(
        self,
        text: str,
        tokens: int,
        first: int,
        last: int,
        context: _Context,
        break_cost: float,
        sep: str | None = None,
        **extra: object,
    ) -> Unit:
        """Append a unit for lines [first, last] (0-based); sep None: from the line gap."""
        if sep is None:
            previous = self.units[-1] if self.units else None
            adjacent = previous is not None and previous.line_end == first
            sep = "\n" if adjacent or previous is None else "\n\n"
        self.allowance_tokens -= tokens
        self.allowance_chars -= len(text)
        if self.allowance_tokens < 0 or self.allowance_chars < 0:
            raise _Full(first + 1)
        unit = Unit(
            text=text,
            tokens=tokens,
            chain=self.chain,
            line_start=first + 1,
            line_end=last + 1,
            sep=sep,
            break_cost=break_cost,
            prefix=context.prefix,
            prefix_tokens=context.tokens,
            **extra,  # type: ignore[arg-type]
        )
        self.units.append(unit)
        return unit

    def finish_notes(self) -> list[str]:
        if self.long_lines:
            limit = self.settings.char_limit
            plural = "line" if self.long_lines == 1 else "lines"
            self.notes.insert(0, f"{self.long_lines} {plural} longer than {limit} characters split")
        return self.notes

    # -- sections and blocks
    def section(self, section: Section, join_cost: float, blocks_of: BlocksOf) -> None:
        self.chain = section.chain
        context = _Context()
        body = section.body_start
        if section.level and body > section.start:
            self.lines_unit(
                section.start, body, context, segment.SECTION, join_cost=join_cost, heading=True
            )
            if section.heading_line:
                context = self.context(context, f"{section.heading_line}\n\n")
        for block in blocks_of(self.lines, body, section.end):
            if block.kind == "fence":
                self.fence(block, context)
            elif block.kind == "table":
                self.table(block, context)
            elif block.kind == "heading":
                self.lines_unit(block.start, block.end, context, segment.DEEP_HEADING, heading=True)
            else:
                self.paragraph(block, context)

    def lines_unit(
        self, start: int, end: int, context: _Context, cost: float, **extra: object
    ) -> None:
        """A heading (one line, or a title with its underline): one unit, glued to what
        follows; a heading over the budget is cut like any long line."""
        texts = [text for text in self.lines[start:end] if text.strip()]
        if not texts:
            return
        tokens_budget, chars_budget = self.budget(context)
        tokens = self.count_lines(texts, chars_budget)
        if tokens is not None and tokens <= tokens_budget:
            self.add("\n".join(texts), tokens, start, end - 1, context, cost, sticky=True, **extra)
            return
        for index in range(start, end):
            if self.lines[index].strip():
                self.line(index, self.lines[index], context, cost, prose=False, **extra)
                cost = segment.LINE
                extra.pop("join_cost", None)
        self.units[-1].sticky = True

    def paragraph(self, block: Block, context: _Context) -> None:
        for index in range(block.start, block.end):
            text = self.lines[index]
            if not text.strip():
                continue
            if index == block.start:
                cost = segment.BLOCK
            else:
                cost = segment.LIST_ITEM if _LIST_ITEM.match(text) else segment.LINE
            self.line(index, shorten_leaders(text), context, cost, prose=True)

    def line(
        self,
        index: int,
        text: str,
        context: _Context,
        cost: float,
        prose: bool,
        suffix: _Context | None = None,
        **extra: object,
    ) -> None:
        """One line as one unit, or as sentences (prose) and runs of words when it is long."""
        suffix = suffix or _Context()
        tokens_budget, chars_budget = self.budget(context, suffix.tokens, len(suffix.prefix))
        ends = {"suffix": suffix.prefix, "suffix_tokens": suffix.tokens} if suffix.prefix else {}
        pieces = split_sentences(text) if prose else [text.strip()]
        if len(text) <= chars_budget:
            tokens = sum(self.count(piece) for piece in pieces)
            short = not prose or tokens <= self.settings.max_tokens // SENTENCE_SHARE
            if tokens <= tokens_budget and short:
                self.add(text, tokens, index, index, context, cost, **ends, **extra)
                return
        if len(text) > self.settings.char_limit:
            self.long_lines += 1
        parts = self._parts(pieces, tokens_budget, chars_budget)
        for number, (part, tokens, sep, part_cost) in enumerate(parts):
            first = number == 0
            self.add(
                part,
                tokens,
                index,
                index,
                context,
                cost if first else part_cost,
                sep=None if first else sep,
                **ends,
                **extra,
            )
            extra.pop("join_cost", None)

    def _parts(
        self, sentences: list[str], tokens_budget: int, chars_budget: int
    ) -> Iterator[tuple[str, int, str, float]]:
        """(part, tokens, text that joined it to the part before, cost of a cut before it),
        lazily: a 19 MB line stops being cut once the chunk cap is reached."""
        for sentence in sentences:
            if len(sentence) <= chars_budget:
                tokens = self.count(sentence)
                if tokens <= tokens_budget:
                    yield sentence, tokens, " ", segment.SENTENCE
                    continue
            # Runs of half a budget: the cut can pair them and balance its chunks. A word cut
            # by characters fills whole chunks (no pairing to gain, and no count across a cut).
            half_tokens, half_chars = max(1, tokens_budget // 2), max(1, chars_budget // 2)
            words = iter_words(
                sentence, half_tokens, self._count, half_chars, (tokens_budget, chars_budget)
            )
            for number, (word, sep) in enumerate(words):
                first = number == 0
                cost = segment.SENTENCE if first else segment.WORD
                yield word, self._count(word), " " if first else sep, cost

    def fence(self, block: Block, context: _Context) -> None:
        """A fenced block: one unit when it fits, else its lines with the fence reopened."""
        texts = self.lines[block.start : block.end]
        tokens_budget, chars_budget = self.budget(context)
        tokens = self.count_lines(texts, chars_budget)
        if tokens is not None and tokens <= tokens_budget:
            self.add("\n".join(texts), tokens, block.start, block.end - 1, context, segment.BLOCK)
            return
        opener = self.lines[block.start]
        opened = _FENCE_OPEN.match(opener)
        closer = f"{opened.group(1)}{opened.group(2)}" if opened else "```"
        closed = block.end - block.start >= 2 and _closes(opened, self.lines[block.end - 1])
        close = _Context(f"\n{closer}", self.count(closer))
        # A valid fence matters more than the heading line: drop the heading first.
        for base in (context, _Context()):
            reopen = self.context(base, f"{opener}\n")
            tokens = reopen.tokens + close.tokens
            if reopen is not base and self.small_context(reopen.prefix + close.prefix, tokens):
                break
        else:
            reopen, close = context, _Context()
        self.line(block.start, opener, context, segment.BLOCK, prose=False)
        self.units[-1].sticky = True
        for index in range(block.start + 1, block.end - 1 if closed else block.end):
            if self.lines[index].strip():
                self.line(index, self.lines[index], reopen, segment.LINE, False, suffix=close)
        if closed:
            last = block.end - 1
            # Never a chunk of its own: a bare closing fence.
            self.line(last, self.lines[last], context, segment.FORBIDDEN, prose=False)

    def table(self, block: Block, context: _Context) -> None:
        """A table: one unit when it fits, else rows (header repeated when small)."""
        rows = [normalise_row(line) for line in self.lines[block.start : block.end]]
        tokens_budget, chars_budget = self.budget(context)
        tokens = self.count_lines(rows, chars_budget)
        if tokens is not None and tokens <= tokens_budget:
            self.add("\n".join(rows), tokens, block.start, block.end - 1, context, segment.BLOCK)
            return
        row_context, names, first_row = context, None, block.start
        if len(rows) >= 2 and is_separator_row(rows[1]):
            # The header matters more than the heading line: drop the heading first.
            for base in (context, _Context()):
                row_context = self.context(base, f"{rows[0]}\n{rows[1]}\n")
                if row_context is not base:
                    names = split_cells(rows[0])
                    break
            else:  # a wide header is not repeated, nor are its names in pieces of a split row
                row_context = context
            self.row(block.start, rows[0], context, segment.BLOCK, None)
            self.units[-1].sticky = True
            self.row(block.start + 1, rows[1], context, segment.FORBIDDEN, None)
            self.units[-1].sticky = True
            first_row = block.start + 2
        after_split = False
        for index in range(first_row, block.end):
            cost = segment.BLOCK if index == block.start else segment.TABLE_ROW
            text = rows[index - block.start]
            after_split = self.row(index, text, row_context, cost, names, context, after_split)

    def row(
        self,
        index: int,
        text: str,
        context: _Context,
        cost: float,
        names: list[str] | None,
        base: _Context | None = None,
        forced_break: bool = False,
    ) -> bool:
        """One table row; a row over the budget becomes small tables of some of its cells.

        True when the row was split: the next row must start a chunk (the pieces' headers
        name only their own columns)."""
        tokens_budget, chars_budget = self.budget(context)
        tokens = self.count_lines([text], chars_budget)
        if tokens is not None and tokens <= tokens_budget:
            self.add(text, tokens, index, index, context, cost, forced_break=forced_break)
            return False
        if len(text) > self.settings.char_limit:
            self.long_lines += 1
        own = base or context  # each piece carries its own columns' names
        tokens_budget, chars_budget = self.budget(own)
        pieces = split_row(text, names, tokens_budget, chars_budget, self.count)
        for number, piece in enumerate(pieces):
            first = number == 0
            self.add(
                piece,
                self.count(piece),
                index,
                index,
                own,
                cost if first else 0.0,
                forced_break=forced_break or not first,
            )
        return True


def _closes(opened: re.Match[str] | None, line: str) -> bool:
    """A fence closes with a run of its own marker character at least as long as the opener."""
    if opened is None:
        return False
    marker, stripped = opened.group(2), line.strip()
    return stripped.startswith(marker) and stripped == marker[0] * len(stripped)
