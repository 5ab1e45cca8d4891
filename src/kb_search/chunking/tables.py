"""Markdown pipe tables: normalised rows, header detection, and over-long rows split by cells.

A separator row is stored (and counted) as `|---|---|`: written out with 170 dashes it
would cost 170 word pieces in every chunk that repeats it. Cell padding is collapsed for
the same reason (spaces cost no tokens, but they cost characters in every JSON answer).
"""

from __future__ import annotations

import re

from kb_search.chunking.tokens import TokenCounter, split_words

_SEPARATOR_CELL = re.compile(r"^\s*:?-+:?\s*$")
_PIPE = re.compile(r"(?<!\\)\|")
_PADDING_AFTER = re.compile(r"(?<!\\)\|[ \t]{2,}")
_PADDING_BEFORE = re.compile(r"(?<![ \t])[ \t]{2,}\|")  # from a run's start only: linear


def is_table_line(line: str) -> bool:
    return line.lstrip().startswith("|")


def split_cells(row: str) -> list[str]:
    """The cells of one row, stripped; the outer pipes do not make empty cells."""
    text = row.strip()
    if text.startswith("|"):
        text = text[1:]
    if text.endswith("|") and not text.endswith("\\|"):
        text = text[:-1]
    return [cell.strip() for cell in _PIPE.split(text)]


def is_separator_row(row: str) -> bool:
    """`|---|:--:|`: every cell is dashes with optional alignment colons."""
    if "-" not in row or not is_table_line(row):
        return False
    return all(_SEPARATOR_CELL.match(cell) for cell in split_cells(row))


def render_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def normalise_row(row: str) -> str:
    """A separator row as `|---|` cells (alignment kept); other rows with padding collapsed."""
    if is_separator_row(row):
        return "|" + "|".join(_separator_cell(cell) for cell in split_cells(row)) + "|"
    return _PADDING_BEFORE.sub(" |", _PADDING_AFTER.sub("| ", row.rstrip()))


def _separator_cell(cell: str) -> str:
    return (":" if cell.startswith(":") else "") + "---" + (":" if cell.endswith(":") else "")


def split_row(
    row: str,
    header: list[str] | None,
    max_tokens: int,
    max_chars: int,
    count: TokenCounter,
) -> list[str]:
    """Split one row too big for a chunk into smaller tables of some of its cells.

    Each piece is a valid table: the names of its columns (when `header` is given), a
    separator, and the row's cells for those columns. A single cell over the budget is cut
    at spaces (by characters only when a word alone is over it).
    """
    cells = split_cells(row)
    names = (header or [])[: len(cells)]
    names += [""] * (len(cells) - len(names)) if header else []
    # Per column: its cell, its name and its share of the pipes and the separator row.
    sizes = [count(c) + (count(names[i]) + 5 if names else 0) + 1 for i, c in enumerate(cells)]
    widths = [len(c) + (len(names[i]) + 7 if names else 0) + 3 for i, c in enumerate(cells)]
    pieces: list[str] = []
    group: list[int] = []
    used = width = 0
    for index in range(len(cells)):
        if group and (used + sizes[index] > max_tokens or width + widths[index] > max_chars):
            pieces.extend(_emit(cells, names, group, max_tokens, max_chars, count))
            group, used, width = [], 0, 0
        group.append(index)
        used += sizes[index]
        width += widths[index]
    if group:
        pieces.extend(_emit(cells, names, group, max_tokens, max_chars, count))
    return pieces


def _emit(
    cells: list[str],
    names: list[str],
    group: list[int],
    max_tokens: int,
    max_chars: int,
    count: TokenCounter,
) -> list[str]:
    """The group as one piece when it fits, else halves (one cell: cut at spaces)."""
    text = _render_piece(cells, names, group)
    if _fits(text, max_tokens, max_chars, count):
        return [text]
    if len(group) == 1:
        return _split_cell(cells[group[0]], names, group[0], max_tokens, max_chars, count)
    middle = len(group) // 2
    return _emit(cells, names, group[:middle], max_tokens, max_chars, count) + _emit(
        cells, names, group[middle:], max_tokens, max_chars, count
    )


def _fits(text: str, max_tokens: int, max_chars: int, count: TokenCounter) -> bool:
    return len(text) <= max_chars and count(text) <= max_tokens


def _render_piece(cells: list[str], names: list[str], columns: list[int]) -> str:
    row = render_row([cells[i] for i in columns])
    if not names:
        return row
    return "\n".join([render_row([names[i] for i in columns]), "|---" * len(columns) + "|", row])


def _split_cell(
    cell: str, names: list[str], index: int, max_tokens: int, max_chars: int, count: TokenCounter
) -> list[str]:
    frame = _render_piece([""], [names[index]] if names else [], [0])
    budget_tokens = max(1, max_tokens - count(frame))
    budget_chars = max(1, max_chars - len(frame))
    parts = split_words(cell, budget_tokens, count, budget_chars)
    return [_render_piece([part], [names[index]] if names else [], [0]) for part in parts]
