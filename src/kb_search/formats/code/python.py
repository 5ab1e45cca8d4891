"""Python source via `ast`: a chunk per top-level function/class, methods for big classes."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from kb_search.chunking.tokens import TokenCounter, count_tokens
from kb_search.formats.code.windows import span_chunk, window_chunks
from kb_search.formats.registry import Source
from kb_search.parsed import ChunkSettings, ParsedChunk, ParsedDocument

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
MAX_DOCSTRING_CHARS = 2000
MAX_CONTEXT_SUMMARY_CHARS = 80


@dataclass
class _Span:
    start: int  # 0-based, inclusive
    end: int  # exclusive
    node: ast.AST | None  # None for module or class-level code between definitions


def parse_python(
    text: str, path: Path, settings: ChunkSettings, count: TokenCounter = count_tokens
) -> ParsedDocument:
    """Chunk a Python file; files that do not parse fall back to line windows."""
    lines = text.split("\n")
    metadata: dict[str, str] = {}
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        chunks = window_chunks(lines, 0, len(lines), None, settings, count)
        metadata["parse_error"] = "syntax error; chunked by lines"
    else:
        docstring = ast.get_docstring(tree)
        if docstring:
            metadata["docstring"] = docstring[:MAX_DOCSTRING_CHARS]
        chunks = _module_chunks(lines, tree, settings, count)
    return ParsedDocument(
        title=path.name, doc_type="code", chunks=chunks, language="python", metadata=metadata
    )


def _module_chunks(
    lines: list[str], tree: ast.Module, settings: ChunkSettings, count: TokenCounter
) -> list[ParsedChunk]:
    chunks: list[ParsedChunk] = []
    for span in _spans(lines, tree.body, 0, len(lines)):
        if span.node is None:
            chunks += window_chunks(lines, span.start, span.end, None, settings, count)
        elif isinstance(span.node, ast.ClassDef):
            chunks += _class_chunks(lines, span, settings, count)
        else:
            chunks += _function_chunks(lines, span, settings, count, None, None)
    return chunks


def _spans(lines: list[str], body: list[ast.stmt], floor: int, ceiling: int) -> list[_Span]:
    """Definitions (decorators and comments directly above included) and the code between."""
    spans: list[_Span] = []
    cursor = floor
    for node in body:
        if not isinstance(node, _DEFS):
            continue
        start = _leading_comments(lines, _first_line(node), cursor)
        end = node.end_lineno or node.lineno
        if start > cursor:
            spans.append(_Span(cursor, start, None))
        spans.append(_Span(start, end, node))
        cursor = end
    if cursor < ceiling:
        spans.append(_Span(cursor, ceiling, None))
    return spans


def _first_line(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> int:
    return min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1


def _leading_comments(lines: list[str], start: int, floor: int) -> int:
    while start > floor and lines[start - 1].lstrip().startswith("#"):
        start -= 1
    return start


def _function_chunks(
    lines: list[str],
    span: _Span,
    settings: ChunkSettings,
    count: TokenCounter,
    symbol: str | None,
    context: str | None,
) -> list[ParsedChunk]:
    node = span.node
    assert isinstance(node, _DEFS)
    header = "# " + lines[node.lineno - 1].strip()
    return window_chunks(
        lines, span.start, span.end, symbol or node.name, settings, count, context, header
    )


def _class_chunks(
    lines: list[str], span: _Span, settings: ChunkSettings, count: TokenCounter
) -> list[ParsedChunk]:
    """The class whole when it fits; else its header/attributes and one chunk per method."""
    node = span.node
    assert isinstance(node, ast.ClassDef)
    whole = span_chunk(lines, span.start, span.end, node.name, count)
    if whole is None or whole.token_count <= settings.max_tokens:
        return [whole] if whole else []
    context = class_context(node)
    chunks: list[ParsedChunk] = []
    for member in _spans(lines, node.body, span.start, span.end):
        if member.node is None:
            chunks += window_chunks(lines, member.start, member.end, node.name, settings, count)
            continue
        symbol = f"{node.name}.{member.node.name}"  # type: ignore[attr-defined]
        chunks += _function_chunks(lines, member, settings, count, symbol, context)
    return chunks


def class_context(node: ast.ClassDef) -> str:
    """`# class Spider(scrapy.Spider): first docstring line` for method chunks."""
    bases = [ast.unparse(b) for b in node.bases] + [ast.unparse(k) for k in node.keywords]
    signature = f"class {node.name}({', '.join(bases)}):" if bases else f"class {node.name}:"
    docstring = (ast.get_docstring(node) or "").strip()
    summary = docstring.splitlines()[0].strip() if docstring else ""
    if len(summary) > MAX_CONTEXT_SUMMARY_CHARS:
        summary = summary[:MAX_CONTEXT_SUMMARY_CHARS].rstrip() + "..."
    return f"# {signature} {summary}".rstrip()


def parse_python_source(source: Source) -> ParsedDocument:
    return parse_python(source.text(), source.name, source.settings, source.count)
