"""The definitions of a code file by qualified name and lines: what `kb get path.py#Class.method`
and `kb get path.py:120 --symbol` read. The names are the ones chunks carry (`Class.method`),
found by the same readers the code parsers use (Python's `ast`, tree-sitter outlines), so a
method inside a class that fit one chunk is found as well as one that has a chunk of its own.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from kb_search.formats.code.grammars import grammar_name
from kb_search.formats.code.outline import Definition, read_outline


@dataclass(frozen=True)
class Symbol:
    name: str  # qualified: "Class.method"
    first: int  # 1-based: the signature, with its decorators or leading doc comment
    last: int  # 1-based, inclusive


def file_symbols(text: str, path: Path, language: str | None) -> list[Symbol] | None:
    """Every definition of the file, outer before inner; None when no reader knows the
    language or the file does not parse."""
    if language == "python":
        return _python_symbols(text)
    if language is None:
        return None
    lines = text.split("\n")
    outline = read_outline(text, lines, grammar_name(language, path.suffix))
    if outline is None:
        return None
    found: list[Symbol] = []
    _flatten(outline.definitions, found)
    return found


def _python_symbols(text: str) -> list[Symbol] | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    found: list[Symbol] = []
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:  # no recursion: a deeply nested file cannot exhaust the stack
        node, prefix = stack.pop()
        for child in reversed(getattr(node, "body", [])):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                found.append(Symbol(name, first, child.end_lineno or child.lineno))
                stack.append((child, name + "."))
    return sorted(found, key=lambda s: (s.first, -s.last))


def _flatten(definitions: list[Definition], found: list[Symbol]) -> None:
    for definition in definitions:
        found.append(Symbol(definition.symbol, definition.start + 1, max(definition.end, 1)))
        _flatten(definition.children, found)
