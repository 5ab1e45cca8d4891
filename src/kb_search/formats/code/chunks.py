"""Chunks from a code outline.

- A definition that fits the budget is one chunk (a class with its methods included).
- A class over the budget: a chunk for its header and fields, then one per member, each
  headed by a comment line with the enclosing signatures (`// class Cart extends Base {`).
- A namespace or module is always opened: one chunk per definition inside it.
- A header that is just the signature line joins the first member rather than standing alone.
- A function over the budget: line windows with the same symbol, the signature on top of each.
- Neighbouring definitions below `min_tokens` (getters, one-line types) share a chunk whose
  symbol lists them all, while the pack fits the budget.
- Code between definitions (imports, constants, statements) in line windows.
"""

from __future__ import annotations

from dataclasses import dataclass

from kb_search.chunking.tokens import TokenCounter
from kb_search.formats.code.outline import NAMESPACE, Definition
from kb_search.formats.code.windows import span_chunk, window_chunks
from kb_search.parsed import ChunkSettings, ParsedChunk


@dataclass(frozen=True)
class _Scope:
    """The enclosing signatures of a definition, outermost first, with their lines."""

    signatures: tuple[tuple[int, str], ...] = ()

    def inside(self, definition: Definition) -> _Scope:
        return _Scope((*self.signatures, (definition.head, definition.signature)))

    def context(self, comment: str, start: int) -> str | None:
        """Comment lines for the signatures above `start` (those below are in the chunk)."""
        shown = [f"{comment} {signature}" for head, signature in self.signatures if head < start]
        return "\n".join(shown) or None


class CodeChunker:
    def __init__(
        self, lines: list[str], comment: str, settings: ChunkSettings, count: TokenCounter
    ) -> None:
        self.lines = lines
        self.comment = comment
        self.settings = settings
        self.count = count

    def chunks(self, definitions: list[Definition]) -> list[ParsedChunk]:
        return self.region(0, len(self.lines), definitions, None, _Scope())

    def region(
        self,
        start: int,
        end: int,
        definitions: list[Definition],
        symbol: str | None,
        scope: _Scope,
    ) -> list[ParsedChunk]:
        """Definitions in [start, end) and the code between them."""
        chunks: list[ParsedChunk] = []
        pack: list[tuple[Definition, ParsedChunk]] = []
        cursor = start
        for definition in definitions:
            if self._has_code(cursor, definition.start):
                chunks += self._pack(pack, scope)
                pack = []
                chunks += self.gap(cursor, definition.start, symbol, scope)
            cursor = definition.end
            whole = self.whole(definition, scope)
            if whole is not None and whole.token_count < self.settings.min_tokens:
                # Counts add up (each errs high), so the sum bounds the pack's own count.
                packed = sum(chunk.token_count for _, chunk in pack) + whole.token_count
                if packed > self.settings.max_tokens:
                    chunks += self._pack(pack, scope)
                    pack = []
                pack.append((definition, whole))
                continue
            chunks += self._pack(pack, scope)
            pack = []
            chunks += self.definition(definition, scope, whole)
        chunks += self._pack(pack, scope)
        if self._has_code(cursor, end):
            chunks += self.gap(cursor, end, symbol, scope)
        return chunks

    def whole(self, definition: Definition, scope: _Scope) -> ParsedChunk | None:
        """The definition as one chunk, or None for a namespace (always opened)."""
        if definition.kind == NAMESPACE and definition.children:
            return None
        context = scope.context(self.comment, definition.start)
        return span_chunk(
            self.lines, definition.start, definition.end, definition.symbol, self.count, context
        )

    def definition(
        self, definition: Definition, scope: _Scope, whole: ParsedChunk | None
    ) -> list[ParsedChunk]:
        if whole is not None and whole.token_count <= self.settings.max_tokens:
            return [whole]
        if definition.children:
            return self.members(definition, scope)
        return window_chunks(
            self.lines,
            definition.start,
            definition.end,
            definition.symbol,
            self.settings,
            self.count,
            scope.context(self.comment, definition.start),
            f"{self.comment} {definition.signature}",
        )

    def members(self, definition: Definition, scope: _Scope) -> list[ParsedChunk]:
        """A class's or namespace's header (with its fields) and its members apart; a header
        below `min_tokens` (just the signature) joins the first member instead."""
        children = definition.children
        if not self._big_gap(definition.start, children[0].start):
            children[0].start = definition.start
        return self.region(
            definition.start, definition.end, children, definition.symbol, scope.inside(definition)
        )

    def gap(self, start: int, end: int, symbol: str | None, scope: _Scope) -> list[ParsedChunk]:
        context = scope.context(self.comment, start)
        return window_chunks(self.lines, start, end, symbol, self.settings, self.count, context)

    def _pack(
        self, pack: list[tuple[Definition, ParsedChunk]], scope: _Scope
    ) -> list[ParsedChunk]:
        if len(pack) < 2:
            return [chunk for _, chunk in pack]
        first, last = pack[0][0], pack[-1][0]
        symbols = ", ".join(dict.fromkeys(definition.symbol for definition, _ in pack))
        context = scope.context(self.comment, first.start)
        chunk = span_chunk(self.lines, first.start, last.end, symbols, self.count, context)
        return [chunk] if chunk else []

    def _has_code(self, start: int, end: int) -> bool:
        return any(line.strip() for line in self.lines[start:end])

    def _big_gap(self, start: int, end: int) -> bool:
        text = "\n".join(self.lines[start:end])
        return self.count(text) >= self.settings.min_tokens
