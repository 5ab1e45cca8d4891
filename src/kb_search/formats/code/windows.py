"""Chunks cut by line: a span as one chunk, or overlapping windows under a token budget."""

from __future__ import annotations

from kb_search.chunking.tokens import TokenCounter, pack_lines, trim_blank_lines
from kb_search.parsed import ChunkSettings, ParsedChunk

WINDOW_OVERLAP_LINES = 2


def span_chunk(
    lines: list[str],
    start: int,
    end: int,
    symbol: str | None,
    count: TokenCounter,
    context: str | None = None,
) -> ParsedChunk | None:
    """lines[start:end] without blank edges as one chunk, optionally under a context line."""
    kept, first = trim_blank_lines(lines[start:end], start + 1)
    if not kept:
        return None
    body = "\n".join(kept)
    text = f"{context}\n{body}" if context else body
    return ParsedChunk(
        text=text,
        symbol=symbol,
        line_start=first,
        line_end=first + len(kept) - 1,
        token_count=count(text),
    )


def window_chunks(
    lines: list[str],
    start: int,
    end: int,
    symbol: str | None,
    settings: ChunkSettings,
    count: TokenCounter,
    context: str | None = None,
    header: str | None = None,
) -> list[ParsedChunk]:
    """lines[start:end] as one chunk when it fits, else overlapping line windows.

    `context` heads every window; `header` (e.g. the signature) heads every window but the first.
    """
    whole = span_chunk(lines, start, end, symbol, count, context)
    if whole is None or whole.token_count <= settings.max_tokens:
        return [whole] if whole else []
    prefix = "\n".join(p for p in (context, header) if p)
    budget = settings.max_tokens - (count(prefix) if prefix else 0)
    if budget < settings.max_tokens // 2:
        context = header = prefix = None
        budget = settings.max_tokens
    pieces = pack_lines(lines[start:end], start + 1, budget, count, WINDOW_OVERLAP_LINES)
    chunks = []
    for index, piece in enumerate(pieces):
        lead = prefix if index else context
        text = f"{lead}\n{piece.text}" if lead else piece.text
        chunks.append(
            ParsedChunk(
                text=text,
                symbol=symbol,
                line_start=piece.line_start,
                line_end=piece.line_end,
                token_count=count(text),
            )
        )
    return chunks
