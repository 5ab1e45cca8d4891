"""Caps for every format, whatever its chunker: the longest chunk in characters and the most
chunks per document. The text chunkers already keep them (chunking/units.py); this catches
the others (code, new formats) in parse_file."""

from __future__ import annotations

from dataclasses import replace

from kb_search.chunking.tokens import TokenCounter, split_words
from kb_search.parsed import ChunkSettings, ParsedChunk, ParsedDocument


def cap_document(
    document: ParsedDocument, settings: ChunkSettings, count: TokenCounter
) -> ParsedDocument:
    """The caps for every format, whatever its chunker: no chunk over the character cap (cut
    at line ends, a line over it at spaces, a word by characters), no more than max_chunks
    chunks (the rest dropped). Each cut is said in document.notes."""
    limit, most = settings.char_limit, settings.max_chunks
    chunks = document.chunks
    if len(chunks) <= most and all(len(c.text) <= limit for c in chunks):
        return document
    capped: list[ParsedChunk] = []
    long_chunks = consumed = 0
    for chunk in chunks:
        if len(capped) >= most:
            break
        consumed += 1
        if len(chunk.text) <= limit:
            capped.append(chunk)
        else:
            long_chunks += 1
            capped.extend(_cut_chunk(chunk, settings, count))
    if long_chunks:
        document.notes.append(f"{long_chunks} chunks longer than {limit} characters split")
    dropped = len(capped) - most + len(chunks) - consumed if len(capped) >= most else 0
    if dropped > 0:
        document.notes.append(f"truncated after {most} chunks ({dropped} more not indexed)")
    document.chunks = capped[:most]
    return document


def _cut_chunk(
    chunk: ParsedChunk, settings: ChunkSettings, count: TokenCounter
) -> list[ParsedChunk]:
    """Pieces of a chunk over the character cap, each with its own lines when its text is
    the file's lines (code chunks), else the chunk's range."""
    limit, max_tokens = settings.char_limit, settings.max_tokens
    lines = chunk.text.split("\n")
    exact = (
        chunk.line_start is not None
        and chunk.line_end is not None
        and chunk.line_end - chunk.line_start + 1 == len(lines)
    )
    pieces: list[tuple[str, int, int]] = []  # text, first and last line offset
    run: list[str] = []
    run_start = width = 0
    for offset, line in enumerate(lines):
        if run and width + 1 + len(line) > limit:
            pieces.append(("\n".join(run), run_start, offset - 1))
            run, width = [], 0
        if len(line) > limit:
            pieces.extend(
                (part, offset, offset) for part in split_words(line, max_tokens, count, limit)
            )
            continue
        if not run:
            run_start = offset
        run.append(line)
        width += len(line) + (1 if len(run) > 1 else 0)
    if run:
        pieces.append(("\n".join(run), run_start, len(lines) - 1))
    result = []
    for text, first, last in pieces:
        if not text.strip():
            continue
        piece = replace(chunk, text=text, token_count=count(text))
        if exact:
            assert chunk.line_start is not None
            piece.line_start, piece.line_end = chunk.line_start + first, chunk.line_start + last
        result.append(piece)
    return result
