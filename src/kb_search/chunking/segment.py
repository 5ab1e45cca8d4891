"""Cutting a document's units into chunks: the cheapest cut that fits the budget.

A unit is the smallest thing a chunk boundary may fall next to: a line, a sentence of a long
line, a table row, a heading, a fenced block that fits. Each unit says what it costs to
start a chunk in front of it (`break_cost`: nothing before a section, more inside a
paragraph, prohibitive right after a heading) and what it costs to keep it in the chunk of
the unit before (`join_cost`: mixing two sections). A chunk under `min_tokens` costs more
than any honest cut, so small sections and tails are merged with a neighbour whenever one
has room, and rebalanced when neither has. The cheapest cut is found by dynamic programming
(the Knuth-Plass way), linear in units times the units a chunk can hold.

Every unit fits a chunk on its own with its prefix (the heading line, table header or fence
opener a chunk starting there repeats) and its suffix (a fence closer); the unit builders
guarantee it, so a cut always exists.
"""

from __future__ import annotations

from collections import Counter
from copy import copy
from dataclasses import dataclass

from kb_search.chunking.tokens import TokenCounter
from kb_search.parsed import ChunkSettings, ParsedChunk

# Costs of starting a chunk in front of a unit (break_cost).
SECTION = 0.0  # a heading that opens a section
PAGE = 1.0  # the first paragraph of a PDF page
DEEP_HEADING = 1.0  # a heading too deep to open a section of its own
BLOCK = 2.0  # a paragraph, list, table or fenced block
TABLE_ROW = 4.0  # a row, the table header repeated when it is small
LIST_ITEM = 4.0
LINE = 6.0  # another line of the same paragraph or of an over-long fence
SENTENCE = 8.0  # another sentence of the same line
WORD = 20.0  # inside a sentence (only when a sentence alone is over the budget)
FORBIDDEN = 1e6  # right after a heading, a fence opener or a table header
# Costs of keeping a unit in the chunk of the one before (join_cost), by section relation.
CHILD = 1.0
SIBLING = 2.0
UP = 4.0  # back to a shallower level: the chunk's heading chain fits its start less well
TOP = 8.0  # a new top-level section
SMALL = 1000.0  # a chunk under min_tokens
# Above this many units the cut is made over runs of units of about an eighth of a chunk.
COARSEN_ABOVE = 20_000


@dataclass(slots=True)
class Unit:
    text: str
    tokens: int
    chain: tuple[str, ...] = ()
    line_start: int | None = None  # 1-based, inclusive
    line_end: int | None = None
    page_start: int | None = None
    page_end: int | None = None
    sep: str = "\n"  # put between the unit before and this one when both are in a chunk
    break_cost: float = BLOCK
    join_cost: float = 0.0
    forced_break: bool = False  # a chunk always starts here
    sticky: bool = False  # never the last unit of a chunk (headings, fence openers)
    heading: bool = False  # a heading line: it does not vote for the chunk's heading chain
    # the page its text is on for `cited_page`, None: page_start (a heading's run that took in
    # the text after it, `_coarsen`: that text's page)
    text_page: int | None = None
    prefix: str = ""  # put in front when a chunk starts here
    prefix_tokens: int = 0
    suffix: str = ""  # put after when a chunk ends here
    suffix_tokens: int = 0


@dataclass
class Cut:
    """Chunks of a document and what the cut had to leave out or force."""

    chunks: list[ParsedChunk]
    notes: list[str]


def chunk_units(units: list[Unit], settings: ChunkSettings, count: TokenCounter) -> Cut:
    """Cut units into chunks under settings.max_tokens and the character cap."""
    if not units:
        return Cut([], [])
    _glue_sticky(units)
    if _whole_fits(units, settings):
        return Cut([_render(units, whole=True, count=count)], [])
    if len(units) > COARSEN_ABOVE:
        units = _coarsen(units, settings)
    bounds = _best_cut(units, settings)
    notes: list[str] = []
    if len(bounds) - 1 > settings.max_chunks:
        dropped = len(bounds) - 1 - settings.max_chunks
        bounds = bounds[: settings.max_chunks + 1]
        notes.append(f"truncated after {settings.max_chunks} chunks ({dropped} more not indexed)")
    chunks = [_render(units[a:b], whole=False, count=count) for a, b in zip(bounds, bounds[1:])]
    return Cut(chunks, notes)


def _glue_sticky(units: list[Unit]) -> None:
    for before, unit in zip(units, units[1:]):
        if before.sticky and not unit.forced_break:
            unit.break_cost = max(unit.break_cost, FORBIDDEN)


def _whole_fits(units: list[Unit], settings: ChunkSettings) -> bool:
    if any(u.forced_break for u in units[1:]):
        return False
    tokens = sum(u.tokens for u in units)
    chars = sum(len(u.sep) + len(u.text) for u in units) - len(units[0].sep)
    return tokens <= settings.max_tokens and chars <= settings.char_limit


def _penalties(settings: ChunkSettings) -> list[float]:
    """Cost of a chunk by its size: a little for unused room (squared, so that a section cut
    in two gives two even halves rather than a full chunk and a scrap), a lot for being
    small."""
    top = settings.max_tokens
    costs = []
    for size in range(top + 1):
        room = (top - size) / top
        small = SMALL + settings.min_tokens - size if size < settings.min_tokens else 0.0
        costs.append(room * room + small)
    return costs


def _best_cut(units: list[Unit], settings: ChunkSettings) -> list[int]:
    """Indexes where chunks start (and len(units) at the end) of the cheapest cut."""
    n = len(units)
    tokens = [0] * (n + 1)
    chars = [0] * (n + 1)
    joins = [0.0] * (n + 1)
    body = [0] * (n + 1)  # units that are not headings: a chunk of headings alone is junk
    for k, unit in enumerate(units):
        tokens[k + 1] = tokens[k] + unit.tokens
        chars[k + 1] = chars[k] + len(unit.sep) + len(unit.text)
        joins[k + 1] = joins[k] + unit.join_cost
        body[k + 1] = body[k] + (not unit.heading)
    forced = [u.forced_break for u in units]
    suffix_tokens = [u.suffix_tokens for u in units]
    suffix_chars = [len(u.suffix) for u in units]
    max_tokens, max_chars = settings.max_tokens, settings.char_limit
    penalty = _penalties(settings)
    best = [float("inf")] * (n + 1)
    best[0] = 0.0
    back = [0] * (n + 1)
    for i in range(n):
        start = units[i]
        base = best[i] + (start.break_cost if i else 0.0) - joins[i + 1]
        token_offset = start.prefix_tokens - tokens[i]
        char_offset = len(start.prefix) - chars[i] - len(start.sep)
        # The unit alone always fits (the builders see to it); longer runs while they fit.
        size = tokens[i + 1] + token_offset + suffix_tokens[i]
        cost = base + joins[i + 1] + penalty[min(size, max_tokens)]
        cost += SMALL if body[i + 1] == body[i] else 0.0
        if cost < best[i + 1]:
            best[i + 1], back[i + 1] = cost, i
        for j in range(i + 2, n + 1):
            if forced[j - 1]:
                break
            size = tokens[j] + token_offset
            if size > max_tokens or chars[j] + char_offset > max_chars:
                break
            size += suffix_tokens[j - 1]
            if size > max_tokens or chars[j] + char_offset + suffix_chars[j - 1] > max_chars:
                continue
            cost = base + joins[j] + penalty[size] + (SMALL if body[j] == body[i] else 0.0)
            if cost < best[j]:
                best[j], back[j] = cost, i
    bounds = [n]
    while bounds[-1]:
        bounds.append(back[bounds[-1]])
    return bounds[::-1]


def _coarsen(units: list[Unit], settings: ChunkSettings) -> list[Unit]:
    """Runs of units of up to an eighth of a chunk, so that the cut stays fast on huge files."""
    target = max(1, settings.max_tokens // 8)
    runs: list[Unit] = []
    for unit in units:
        run = runs[-1] if runs else None
        if (
            run is None
            or unit.forced_break
            or (run.tokens + unit.tokens > target and not run.sticky)  # keep headings glued
            or run.prefix_tokens + run.tokens + unit.tokens + unit.suffix_tokens
            > settings.max_tokens
            or len(run.prefix) + len(run.text) + len(unit.sep) + len(unit.text) + len(unit.suffix)
            > settings.char_limit
        ):
            runs.append(copy(unit))
            continue
        if run.heading and not unit.heading:
            run.chain, run.heading = unit.chain, False
            run.text_page = unit.page_start if unit.text_page is None else unit.text_page
        elif unit.tokens > run.tokens and not unit.heading:
            run.chain = unit.chain
        run.text += unit.sep + unit.text
        run.tokens += unit.tokens
        run.line_end = unit.line_end if unit.line_end is not None else run.line_end
        run.page_end = unit.page_end if unit.page_end is not None else run.page_end
        run.sticky = unit.sticky
        run.suffix, run.suffix_tokens = unit.suffix, unit.suffix_tokens
    return runs


def _render(units: list[Unit], whole: bool, count: TokenCounter) -> ParsedChunk:
    first, last = units[0], units[-1]
    parts = [] if whole else [first.prefix]
    parts.append(first.text)
    for unit in units[1:]:
        parts += [unit.sep, unit.text]
    if not whole:
        parts.append(last.suffix)
    text = "".join(parts)
    lines = [u.line_start for u in units if u.line_start is not None]
    line_ends = [u.line_end for u in units if u.line_end is not None]
    pages = [u.page_start for u in units if u.page_start is not None]
    page_ends = [u.page_end for u in units if u.page_end is not None]
    chain = heading_chain(units)
    return ParsedChunk(
        text=text,
        heading=" > ".join(chain) if chain else None,
        line_start=min(lines) if lines else None,
        line_end=max(line_ends) if line_ends else None,
        page_start=min(pages) if pages else None,
        page_end=max(page_ends) if page_ends else None,
        cited_page=cited_page(units),
        token_count=_token_count(units, whole, count, text),
    )


def cited_page(units: list[Unit]) -> int | None:
    """The page a citation of these units opens: the one holding most of their text (not
    counting headings, unless there is nothing else), the first of equals. A chunk that starts
    with a heading at the foot of a page, or a section's title slide, is read on the next."""
    weights: Counter[int] = Counter()
    for heading_too in (False, True):
        for unit in units:
            page = unit.page_start if unit.text_page is None else unit.text_page
            if page is not None and (heading_too or not unit.heading):
                weights[page] += max(unit.tokens, 1)
        if weights:
            return max(sorted(weights), key=lambda page: weights[page])
    return None


def _token_count(units: list[Unit], whole: bool, count: TokenCounter, text: str) -> int:
    """The units' counts add up: word pieces never span whitespace, so counting the chunk
    again would double the tokenizer's work (for the estimating counter the sum is an upper
    bound). Parts of one word cut by characters are joined without a space: count again."""
    if any(not unit.sep for unit in units[1:]):
        return count(text)
    total = sum(unit.tokens for unit in units)
    return total if whole else total + units[0].prefix_tokens + units[-1].suffix_tokens


def heading_chain(units: list[Unit]) -> tuple[str, ...]:
    """The deepest heading chain that holds three quarters of the chunk's text.

    A chunk made of one section gets that section's chain; a heading-only section merged
    into the next one gets the next one's; a small tail of one section beside a big one
    gets the big one's; sibling sections of comparable size get their parent's. When no
    chain holds three quarters (two top-level sections half and half), the biggest
    section's.
    """
    votes: Counter[tuple[str, ...]] = Counter()
    own: Counter[tuple[str, ...]] = Counter()
    total = 0
    for unit in units:
        if unit.heading:
            continue
        weight = max(unit.tokens, 1)
        total += weight
        own[unit.chain] += weight
        for depth in range(1, len(unit.chain) + 1):
            votes[unit.chain[:depth]] += weight
    if not total:
        return next((u.chain for u in reversed(units) if u.chain), ())
    strong = [chain for chain, weight in votes.items() if 4 * weight >= 3 * total]
    if strong:
        return max(strong, key=len)
    # Text before the first heading names nothing: a section merged into it names the chunk.
    headed = Counter({chain: weight for chain, weight in own.items() if chain}) or own
    return max(headed, key=lambda chain: headed[chain])  # ties: the first seen
