"""Config files: JSON (stdlib `json`), YAML (PyYAML's composer), TOML (`tomllib`/`tomli`),
chunked by key path (see `keytree`). A file its parser rejects (JSON with comments, a Helm
template, a TOML typo) is still indexed, by the generic code chunker."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable

import yaml

from kb_search.formats.code.parse import parse_code_source
from kb_search.formats.keytree import KeyNode, LineIndex, chunk_tree
from kb_search.formats.registry import Source
from kb_search.parsed import ParsedDocument

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

_DECODER = json.JSONDecoder()
_SPACE = " \t\r\n"


def parse_json_source(source: Source) -> ParsedDocument:
    text = source.text()
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return _fallback(source, "invalid JSON")
    root = KeyNode((), 0, len(text), ref=_skip(text, 0))
    return _document(source, text, root, lambda node: _json_children(text, node))


def _json_children(text: str, node: KeyNode) -> list[KeyNode]:
    opener = text[node.ref : node.ref + 1]
    if opener == "{":
        return _json_members(text, node)
    if opener == "[":
        return _json_elements(text, node)
    return []


def _json_members(text: str, parent: KeyNode) -> list[KeyNode]:
    members: list[KeyNode] = []
    index = _skip(text, parent.ref + 1)
    while index < len(text) and text[index] != "}":
        key_start = index
        key, index = _DECODER.raw_decode(text, index)
        index = _skip(text, _skip(text, index) + 1)  # past the colon
        value_start = index
        _, index = _DECODER.raw_decode(text, index)
        members.append(KeyNode((*parent.path, str(key)), key_start, index, ref=value_start))
        index = _next_item(text, index)
    return members


def _json_elements(text: str, parent: KeyNode) -> list[KeyNode]:
    elements: list[KeyNode] = []
    index = _skip(text, parent.ref + 1)
    while index < len(text) and text[index] != "]":
        value_start = index
        _, index = _DECODER.raw_decode(text, index)
        path = _indexed(parent.path, len(elements))
        elements.append(KeyNode(path, value_start, index, ref=value_start))
        index = _next_item(text, index)
    return elements


def _next_item(text: str, index: int) -> int:
    index = _skip(text, index)
    return _skip(text, index + 1) if text[index : index + 1] == "," else index


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in _SPACE:
        index += 1
    return index


def _indexed(path: tuple[str, ...], position: int) -> tuple[str, ...]:
    """Element `position` of the list at `path`: ("items", "[3]") reads "items > [3]"."""
    return (*path, f"[{position}]")


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml_source(source: Source) -> ParsedDocument:
    text = source.text()
    try:
        documents = [d for d in yaml.compose_all(text, Loader=_LOADER) if d is not None]
    except (yaml.YAMLError, RecursionError):
        return _fallback(source, "invalid YAML")
    if not documents:
        return _fallback(source, "no YAML content")
    lines = LineIndex(text)
    root = KeyNode((), 0, len(text), ref=documents[0] if len(documents) == 1 else None)
    if len(documents) > 1:
        root.children = [
            _yaml_node(text, lines, (_document_label(doc, number),), doc, doc)
            for number, doc in enumerate(documents, start=1)
        ]
    children = lambda node: _yaml_children(text, lines, node)  # noqa: E731
    return _document(source, text, root, children, lines, keep_gaps=True)


def _yaml_children(text: str, lines: LineIndex, node: KeyNode) -> list[KeyNode]:
    if node.children is not None:
        return node.children
    value = node.ref
    if isinstance(value, yaml.MappingNode):
        return [
            _yaml_node(text, lines, (*node.path, _scalar(key)), key, item)
            for key, item in value.value
        ]
    if isinstance(value, yaml.SequenceNode):
        return [
            _yaml_node(text, lines, _indexed(node.path, position), item, item)
            for position, item in enumerate(value.value)
        ]
    return []


_ITEM_PREFIX = re.compile(r"[ \t]*(-[ \t]+)*")


def _yaml_node(
    text: str, lines: LineIndex, path: tuple[str, ...], first: yaml.Node, value: yaml.Node
) -> KeyNode:
    start = lines.offset(first.start_mark.line, first.start_mark.column)
    end = lines.offset(value.end_mark.line, value.end_mark.column)
    line_start = text.rfind("\n", 0, start) + 1
    if _ITEM_PREFIX.fullmatch(text, line_start, start):
        start = line_start  # a list item keeps its "- "
    return KeyNode(path, start, max(end, start), ref=value)


def _scalar(node: yaml.Node) -> str:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else "(key)"


def _document_label(document: yaml.Node, number: int) -> str:
    """`Deployment web` for a Kubernetes-style document, else `document 2`."""
    if isinstance(document, yaml.MappingNode):
        fields = {_scalar(k): v for k, v in document.value}
        kind = fields.get("kind")
        metadata = fields.get("metadata")
        name = None
        if isinstance(metadata, yaml.MappingNode):
            name = {_scalar(k): v for k, v in metadata.value}.get("name")
        if isinstance(kind, yaml.ScalarNode):
            label = str(kind.value)
            return f"{label} {name.value}" if isinstance(name, yaml.ScalarNode) else label
    return f"document {number}"


# The table's name is stripped later; from a run's start only: linear even when searched.
_TABLE_HEADER = re.compile(r"(?<![ \t])[ \t]*\[(\[)?([^\[\]]+)\]\]?[ \t]*(#.*)?$")
# One greedy class up to "=", from the start of a run of it (the key's spaces stripped by
# `_toml_path`): linear, where a lazy key between two `[ \t]*` backtracked quadratically.
_TOML_KEY = re.compile(r"(?<![A-Za-z0-9_.\-\"' \t])([A-Za-z0-9_.\-\"' \t]+)=")
_TOML_PART = re.compile(r'"((?:\\.|[^"\\])*)"|\'([^\']*)\'|([^.\s]+)')


def parse_toml_source(source: Source) -> ParsedDocument:
    text = source.text()
    try:
        tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return _fallback(source, "invalid TOML")
    lines = LineIndex(text)
    root = KeyNode((), 0, len(text), children=_toml_entries(text, lines))
    return _document(source, text, root, lambda node: node.children or [], lines, keep_gaps=True)


def _toml_entries(text: str, lines: LineIndex) -> list[KeyNode]:
    """Top-level keys, then one node per [table] / [[array]] with its keys as children.

    Keys start on lines outside strings and brackets; a value runs until the next key."""
    entries: list[KeyNode] = []
    table: KeyNode | None = None
    arrays: dict[tuple[str, ...], int] = {}
    state = _TomlState()
    source_lines = text.split("\n")
    for number, line in enumerate(source_lines):
        offset = lines.offset(number)
        if state.at_top():
            header = _TABLE_HEADER.match(line)
            key = None if header else _TOML_KEY.match(line)
            if header:
                path = _toml_path(header.group(2))
                if header.group(1):
                    arrays[path] = arrays.get(path, -1) + 1
                    path = (*path[:-1], f"{path[-1]}[{arrays[path]}]")
                table = KeyNode(path, offset, len(text), children=[])
                _close(entries, offset)
                entries.append(table)
            elif key:
                siblings = table.children if table is not None else entries
                assert siblings is not None
                base = table.path if table is not None else ()
                _close(siblings, offset)
                siblings.append(KeyNode((*base, *_toml_path(key.group(1))), offset, len(text)))
        state.feed(line)
    return entries


def _close(nodes: list[KeyNode], offset: int) -> None:
    """End the previous entry (and its last key) where the next one begins."""
    if nodes:
        nodes[-1].end = offset
        if nodes[-1].children:
            nodes[-1].children[-1].end = offset


class _TomlState:
    """Open brackets and multi-line strings, so that only real key lines start an entry."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote: str | None = None

    def at_top(self) -> bool:
        return self.depth == 0 and self.quote is None

    def feed(self, line: str) -> None:
        index = 0
        while index < len(line):
            if self.quote:
                if line.startswith(self.quote, index):
                    index += len(self.quote)
                    self.quote = None
                    continue
                index += 2 if line[index] == "\\" and self.quote[0] == '"' else 1
                continue
            char = line[index]
            if char == "#":
                return
            if line.startswith(('"""', "'''"), index):
                self.quote = line[index : index + 3]
                index += 3
            elif char in "\"'":
                index = _string_end(line, index)
            elif char in "[{":
                self.depth += 1
                index += 1
            elif char in "]}":
                self.depth = max(0, self.depth - 1)
                index += 1
            else:
                index += 1


def _string_end(line: str, index: int) -> int:
    quote = line[index]
    index += 1
    while index < len(line) and line[index] != quote:
        index += 2 if line[index] == "\\" and quote == '"' else 1
    return index + 1


def _toml_path(key: str) -> tuple[str, ...]:
    return tuple(a or b or c for a, b, c in _TOML_PART.findall(key.strip()))


def _document(
    source: Source,
    text: str,
    root: KeyNode,
    children_of: Callable[[KeyNode], list[KeyNode]],
    lines: LineIndex | None = None,
    keep_gaps: bool = False,
) -> ParsedDocument:
    settings, count = source.settings, source.count
    chunks = chunk_tree(text, root, children_of, settings, count, lines, keep_gaps)
    return ParsedDocument(
        title=source.name.name,
        doc_type="code",
        chunks=chunks,
        language=source.language,
        metadata={"chunking": "keys"},
    )


def _fallback(source: Source, reason: str) -> ParsedDocument:
    document = parse_code_source(source)
    document.metadata = {**document.metadata, "chunking": "lines", "parse_error": reason}
    return document
