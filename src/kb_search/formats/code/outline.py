"""A source file's definitions, read from its tree-sitter syntax tree.

The outline is a tree of `Definition`s with exact line spans: each span takes in the doc
comments, attributes and decorators directly above the definition (no blank line between),
and closing lines (`}`, `end`, `#endif`) that follow it, so that the definitions and the code
between them cover every line of the file once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from kb_search.formats.code.grammars import (
    CLASS,
    GRAMMARS,
    NAMESPACE,
    Grammar,
    Node,
    load_language,
)

MAX_SIGNATURE_CHARS = 120


@dataclass
class Definition:
    kind: str  # FUNCTION | TYPE | CLASS | NAMESPACE
    symbol: str  # dotted chain of names, e.g. "app.Widget.draw"
    signature: str  # the line that names it, e.g. "void draw() const {"
    head: int  # 0-based line of the signature
    start: int  # 0-based first line, leading comments included
    end: int  # exclusive
    children: list[Definition] = field(default_factory=list)


@dataclass
class Outline:
    definitions: list[Definition]
    error_share: float  # share of non-blank lines inside ERROR nodes


@dataclass
class _Found:
    span: Node  # the lines: the definition or the wrapper (export, decorator, template) around it
    node: Node  # the definition itself
    kind: str
    name: str


def read_outline(text: str, lines: list[str], grammar_name: str) -> Outline | None:
    """The definitions of a file, or None when the grammar's package is not installed."""
    language = load_language(grammar_name)
    if language is None:
        return None
    from tree_sitter import Parser, QueryCursor

    grammar = GRAMMARS[grammar_name]
    tree = Parser(language).parse(text.encode("utf-8", "surrogatepass"))
    captures = QueryCursor(_query(grammar_name)).captures(tree.root_node)
    leading = _leading_rows(captures.get("lead", []), lines)
    if grammar.leading_line:
        pattern = re.compile(grammar.leading_line)
        leading.update(i for i, line in enumerate(lines) if pattern.match(line))
    reader = _Reader(grammar, lines, leading)
    definitions = reader.sequence(tree.root_node, None, 0, len(lines))
    return Outline(definitions, _error_share(captures.get("error", []), lines))


@cache
def _query(grammar_name: str) -> Any:
    from tree_sitter import Query

    language = load_language(grammar_name)
    kinds = sorted(k for k in GRAMMARS[grammar_name].leading if language.id_for_node_kind(k, True))
    lead = f"[{' '.join(f'({k})' for k in kinds)}] @lead " if kinds else ""
    return Query(language, lead + "(ERROR) @error")


def _last_row(node: Node) -> int:
    """A node's last line: one that ends at column 0 stops on the line before."""
    row, column = node.end_point
    return row - 1 if column == 0 and row > node.start_point[0] else row


def _leading_rows(nodes: list[Node], lines: list[str]) -> set[int]:
    """Lines made only of comments or attributes, which may lead the definition below them."""
    rows: set[int] = set()
    for node in nodes:
        row, column = node.start_point
        if row < len(lines) and not lines[row][:column].strip():
            rows.update(range(row, _last_row(node) + 1))
    return rows


def _error_share(errors: list[Node], lines: list[str]) -> float:
    nonblank = {i for i, line in enumerate(lines) if line.strip()}
    if not errors or not nonblank:
        return 0.0
    broken: set[int] = set()
    for node in errors:
        broken.update(range(node.start_point[0], _last_row(node) + 1))
    return len(broken & nonblank) / len(nonblank)


class _Reader:
    def __init__(self, grammar: Grammar, lines: list[str], leading: set[int]) -> None:
        self.grammar = grammar
        self.lines = lines
        self.leading = leading
        comment = re.escape(grammar.comment)
        self.closing = re.compile(
            rf"^(?:[)\]}};,]|end\b)(?:[\s)\]}};,]|end\b)*(?:(?:{comment}|/\*).*)?$"
        )

    def sequence(
        self, node: Node, parent: str | None, floor: int, ceiling: int
    ) -> list[Definition]:
        """The definitions under `node`, with line spans inside [floor, ceiling)."""
        definitions: list[Definition] = []
        for found in self.find(node):
            start = found.span.start_point[0]
            end = min(_last_row(found.span) + 1, ceiling)
            cursor = definitions[-1].end if definitions else floor
            while start - 1 >= cursor and start - 1 in self.leading:
                start -= 1
            start = max(start, cursor)
            if start >= end:  # on a line already taken (two definitions on one line)
                if definitions:
                    definitions[-1].end = max(definitions[-1].end, end)
                continue
            definitions.append(self.definition(found, parent, start, end))
        self.absorb_closing_lines(definitions, ceiling)
        return definitions

    def definition(self, found: _Found, parent: str | None, start: int, end: int) -> Definition:
        symbol = f"{parent}.{found.name}" if parent else found.name
        name_node = (
            found.node.child_by_field_name("name")
            or found.node.child_by_field_name("declarator")
            or found.node
        )
        row = name_node.start_point[0]
        signature = self.lines[row].strip()[:MAX_SIGNATURE_CHARS] if row < len(self.lines) else ""
        definition = Definition(found.kind, symbol, signature, row, start, end)
        if found.kind in (CLASS, NAMESPACE):
            definition.children = self.sequence(found.node, symbol, row + 1, end)
        return definition

    def find(self, node: Node) -> list[_Found]:
        """Definitions among the children of `node`, looking through scopes and wrappers."""
        found: list[_Found] = []
        for child in node.named_children:
            kind = self.grammar.definitions.get(child.type)
            name = self.grammar.name_of(child) if kind else None
            if kind and name:
                found.append(_Found(child, child, kind, name))
            elif kind == NAMESPACE:  # anonymous or bodiless: its contents belong to the parent
                found += self.find(child)
            elif child.type in self.grammar.wrappers:
                inner = self.find(child)
                if len(inner) == 1:
                    inner[0].span = child
                found += inner
            elif child.type in self.grammar.scopes:
                found += self.find(child)
        return found

    def absorb_closing_lines(self, definitions: list[Definition], ceiling: int) -> None:
        """Give lines such as `}` or `end` after a definition to it, not to a chunk of their own."""
        for index, definition in enumerate(definitions):
            limit = definitions[index + 1].start if index + 1 < len(definitions) else ceiling
            end = definition.end
            while end < limit and self.is_closing(self.lines[end]):
                end += 1
            while end > definition.end and not self.lines[end - 1].strip():
                end -= 1
            definition.end = end

    def is_closing(self, line: str) -> bool:
        """Blank, or only closing brackets, `end` or `#endif`, perhaps with a trailing comment."""
        stripped = line.strip()
        return (
            not stripped
            or bool(self.closing.match(stripped))
            or bool(_PREPROCESSOR_CLOSE.match(stripped))
        )


_PREPROCESSOR_CLOSE = re.compile(r"#\s*endif\b")
