"""Source code other than Python: definitions from a tree-sitter grammar, else regex and windows.

Tree-sitter recovers from syntax errors, so a file it cannot really read still parses; when
more than `MAX_ERROR_SHARE` of its non-blank lines sit in ERROR nodes (another dialect, a
template language, a C++ header named `.h`), the outline is not trusted and the file goes to
the next grammar to try, then to the regex fallback.
"""

from __future__ import annotations

from pathlib import Path

from kb_search.chunking.tokens import TokenCounter, count_tokens
from kb_search.formats.code.chunks import CodeChunker
from kb_search.formats.code.grammars import GRAMMARS, grammar_name
from kb_search.formats.code.outline import read_outline
from kb_search.formats.code.regex import regex_chunks
from kb_search.formats.registry import Source, language_for
from kb_search.parsed import ChunkSettings, ParsedChunk, ParsedDocument

MAX_ERROR_SHARE = 0.2
# A `.h` file may be C++: when the C grammar fails on it, the C++ one gets a try.
_SECOND_GRAMMAR = {"c": "cpp"}


def parse_code(
    text: str,
    path: Path,
    settings: ChunkSettings,
    count: TokenCounter = count_tokens,
    language: str | None = None,
) -> ParsedDocument:
    """Chunk one source file: a chunk per definition, the code between them in line windows."""
    language = language or language_for(path) or "text"
    lines = text.split("\n")
    metadata: dict[str, str] = {}
    chunks = syntax_chunks(text, lines, language, path.suffix, settings, count, metadata)
    if chunks is None:
        chunks = regex_chunks(lines, language, settings, count)
        metadata["chunker"] = "regex"
    return ParsedDocument(
        title=path.name, doc_type="code", chunks=chunks, language=language, metadata=metadata
    )


def syntax_chunks(
    text: str,
    lines: list[str],
    language: str,
    suffix: str,
    settings: ChunkSettings,
    count: TokenCounter,
    metadata: dict[str, str],
) -> list[ParsedChunk] | None:
    """Chunks from the language's tree-sitter grammar; None when no grammar reads the file."""
    first = grammar_name(language, suffix)
    for name in (first, _SECOND_GRAMMAR.get(first)):
        if name is None:
            continue
        outline = read_outline(text, lines, name)
        if outline is None:
            continue
        if outline.error_share > MAX_ERROR_SHARE:
            metadata["parse_error"] = (
                f"tree-sitter {name}: {outline.error_share:.0%} of lines unparsed"
            )
            continue
        metadata.pop("parse_error", None)
        metadata["chunker"] = f"tree-sitter {name}"
        chunker = CodeChunker(lines, GRAMMARS[name].comment, settings, count)
        return chunker.chunks(outline.definitions)
    return None


def parse_code_source(source: Source) -> ParsedDocument:
    text = source.text()
    return parse_code(text, source.name, source.settings, source.count, language=source.language)
