"""`kb get`: exact reads of cited passages, only from indexed documents.

A citation (`/abs/a.md#L10-L24`, `a.md#page=3`, `a.md#anchor`, `a.py#Class.method`,
`a.md:10`, a plain indexed path, or `chunk:ID`) resolves to an indexed document, never to an
arbitrary file (`locating`). A read serves the text that was indexed: the file's own lines
for the formats whose chunks are its lines (Markdown, text, code, CSV) when it is a regular
file whose bytes still hash to what was indexed; the stored chunks otherwise (the clean text of
a converted format: HTML, EPUB, office, PDF, ..., located by their source lines or pages; or
a file that changed). Each passage says which (`from_`); `raw` reads a text file's own lines
whatever its format. Every read runs inside the request's budget (`should_stop`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb_search.errors import NotFound, SearchError, UserInputError
from kb_search.formats.reader import SNIFF_BYTES, decode_bytes, looks_binary
from kb_search.formats.registry import SOURCE_LINE_TYPES, format_for
from kb_search.locating import IndexedDocument, indexed_document
from kb_search.regular import read_regular
from kb_search.sanitize import SQLITE_MAX_INT, valid_text
from kb_search.store.db import Connection
from kb_search.store.records import (
    StoredChunk,
    chunk_ids_over_lines,
    chunks_by_id,
    citation,
    document_chunks,
)

MAX_CITATIONS = 50
MAX_CONTEXT = 200
# A file larger than this is never read from disk (its stored chunks are served instead).
MAX_DISK_BYTES = 64 * 1024 * 1024
CUT_MARKER = "\n[… cut at the byte budget]"

_LINES = re.compile(r"L(\d+)(?:-L?(\d+))?")
_PAGES = re.compile(r"page=(\d+)(?:-(\d+))?")
_CHUNK = re.compile(r"chunk:(\d+)")
_SLUG_DROP = re.compile(r"[^\w\- ]")
# How many lines a scan reads between two looks at the request's budget.
BUDGET_LINES = 4096


@dataclass
class Fragment:
    """What a citation points at inside its document (all None: the whole document)."""

    lines: tuple[int, int] | None = None
    pages: tuple[int, int] | None = None
    anchor: str | None = None


@dataclass
class Passage:
    """One cited passage as served: its own citation (the range actually returned)."""

    requested: str
    citation: str
    document_id: int
    path: str
    from_: str  # "disk" or "index"
    text: str
    lines: list[int] | None = None
    pages: list[int] | None = None
    chunk_ids: list[int] = field(default_factory=list)
    truncated: bool = False
    note: str | None = None  # why the index was read instead of the file

    def to_dict(self) -> dict[str, Any]:
        data = {
            "requested": self.requested,
            "citation": self.citation,
            "document_id": self.document_id,
            "path": self.path,
            "from": self.from_,
            "lines": self.lines,
            "pages": self.pages,
            "chunk_ids": self.chunk_ids,
            "truncated": self.truncated,
            "text": self.text,
        }
        if self.note:
            data["note"] = self.note
        return data


@dataclass
class Reading:
    """What `kb get` returns: the passages in the order asked, cut to the byte budget."""

    passages: list[Passage]
    max_bytes: int | None
    bytes: int
    omitted: list[str] = field(default_factory=list)  # citations left out by the budget

    def to_dict(self) -> dict[str, Any]:
        return {
            "passages": [p.to_dict() for p in self.passages],
            "bytes": self.bytes,
            "max_bytes": self.max_bytes,
            "truncated": [p.citation for p in self.passages if p.truncated],
            "omitted": self.omitted,
        }


if TYPE_CHECKING:
    from kb_search.formats.code.symbols import Symbol

Stop = Callable[[], bool]


@dataclass
class ReadRequest:
    """How a call reads: `context` lines (or chunks) around each citation; `cwd` the caller's
    directory (None: paths are relative to the added folders, as over MCP); `raw` the file's own
    lines whatever its format; `symbol` a line widened to the function or class around it;
    `should_stop` the request's budget, looked at between citations and while scanning."""

    context: int = 0
    cwd: Path | None = None
    raw: bool = False
    symbol: bool = False
    should_stop: Stop | None = None
    disk: dict[int, tuple[str | None, str | None]] = field(default_factory=dict)

    def check(self) -> None:
        if self.should_stop is not None and self.should_stop():
            raise SearchError("the read ran past its time budget (search.timeout_s): stopped")


def read_citations(
    conn: Connection,
    citations: list[str],
    context: int = 0,
    max_bytes: int | None = None,
    cwd: Path | None = None,
    *,
    raw: bool = False,
    symbol: bool = False,
    should_stop: Stop | None = None,
) -> Reading:
    """Each citation's passage with `context` lines around it (neighbouring chunks for a
    page, an anchor or a chunk that has no lines), cut to `max_bytes` of text in all: whole
    passages first, the first that does not fit truncated with a marker, the rest omitted."""
    if not citations:
        raise UserInputError("give at least one citation: path#L10-L24, path#page=3 or chunk:ID")
    if len(citations) > MAX_CITATIONS:
        raise UserInputError(f"at most {MAX_CITATIONS} citations in one call")
    if not 0 <= context <= MAX_CONTEXT:
        raise UserInputError(f"context must be 0..{MAX_CONTEXT}")
    if max_bytes is not None and max_bytes < 1:
        raise UserInputError("the byte budget must be at least 1")
    request = ReadRequest(context, cwd, raw, symbol, should_stop)
    passages = []
    for given in citations:
        request.check()
        passages.append(read_one(conn, given, request))
    return within_budget(passages, max_bytes)


def read_one(conn: Connection, given: str, request: ReadRequest) -> Passage:
    """One citation's passage (`request.disk` caches each document's file text in a call)."""
    text = valid_text(given).strip()
    if not text or "\x00" in text:
        raise UserInputError("an empty citation: give path#L10-L24, path#page=3 or chunk:ID")
    if match := _CHUNK.fullmatch(text):
        return _chunk_passage(conn, given, int(match[1]), request)
    document, fragment = resolve_citation(conn, text, request.cwd)
    file_text, why = _file_text(document, request)
    if document.doc_type == "code" and (fragment.anchor or request.symbol):
        fragment = _symbol_fragment(conn, document, fragment, file_text, request.symbol)
    elif request.symbol:
        raise UserInputError("--symbol needs a line of a code file: path.py:120 or path.py#L120")
    if fragment.anchor and file_text is not None:
        section = heading_section(file_text, fragment.anchor, request)
        if section is not None:
            fragment = Fragment(lines=section)
    if fragment.pages or fragment.anchor:
        chunks = _section_chunks(conn, document, fragment, request.context)
        return _index_passage(given, document, chunks, fragment, None)
    if file_text is not None:
        passage = _disk_passage(given, document, file_text, fragment.lines, request.context)
        passage.chunk_ids = _chunk_ids_over(conn, document.document_id, passage.lines)
        return passage
    chunks = _chunks_over_lines(conn, document, fragment.lines, request.context)
    return _index_passage(given, document, chunks, fragment, why)


def _symbol_fragment(
    conn: Connection,
    document: IndexedDocument,
    fragment: Fragment,
    file_text: str | None,
    around: bool,
) -> Fragment:
    """`path.py#Class.method`, or with `around` (`--symbol`) a line widened to its function."""
    symbols = code_symbols(conn, document, file_text)
    if fragment.anchor:
        return Fragment(lines=symbol_lines(symbols, fragment.anchor, document.path))
    if not fragment.lines:
        raise UserInputError("--symbol needs a line: path.py:120 or path.py#L120")
    return Fragment(lines=enclosing_symbol(symbols, fragment.lines[0], document.path))


def _file_text(document: IndexedDocument, request: ReadRequest) -> tuple[str | None, str | None]:
    """The file's text when a read serves it (its own lines are what was indexed, or `raw`),
    else (None, why the index is read instead, or None when it always is)."""
    if not request.raw and document.doc_type not in SOURCE_LINE_TYPES:
        return None, None
    if document.document_id not in request.disk:
        request.disk[document.document_id] = current_text(document, request.raw)
    file_text, why = request.disk[document.document_id]
    if request.raw and file_text is None:
        raise UserInputError(
            f"{document.path}: no source text to read raw"
            f" ({why or f'a {document.doc_type} file is read as the text indexed from it'});"
            " read it without --raw"
        )
    return file_text, why


# ---- citations -> documents ---------------------------------------------------------------


def parse_fragment(fragment: str) -> Fragment:
    """`L10-L24` / `L10-24` / `L7`, `page=3` / `page=3-5`, anything else an anchor."""
    if match := _LINES.fullmatch(fragment):
        return Fragment(lines=_ordered(int(match[1]), int(match[2] or match[1])))
    if match := _PAGES.fullmatch(fragment):
        return Fragment(pages=_ordered(int(match[1]), int(match[2] or match[1])))
    return Fragment(anchor=fragment or None)


def colon_lines(text: str) -> tuple[str, int, int] | None:
    """`path:10` or `path:10-20` as (path, first, last); None for anything else. String
    parsing, not a regex: `(.+):(\\d+)` backtracks quadratically on a long run of colons."""
    path, colon, tail = text.rpartition(":")
    first, dash, last = tail.partition("-")
    if not (path and colon and first.isdecimal()) or (dash and not last.isdecimal()):
        return None
    return path, int(first), int(last or first)


def _ordered(first: int, last: int) -> tuple[int, int]:
    if first < 1 or last < first or last > SQLITE_MAX_INT:
        raise UserInputError(f"a bad range {first}-{last}: give first-last, from 1")
    return first, last


def resolve_citation(
    conn: Connection, text: str, cwd: Path | None
) -> tuple[IndexedDocument, Fragment]:
    """The indexed document a citation names, and the fragment. A `#` may be part of a file
    name, so the whole text is tried as a path first."""
    document = indexed_document(conn, text, cwd)
    if document is not None:
        return document, Fragment()
    if "#" in text:
        path, fragment = text.rsplit("#", 1)
        document = indexed_document(conn, path, cwd)
        if document is not None:
            return document, parse_fragment(fragment)
    elif place := colon_lines(text):  # `path:10` as the human output prints it
        document = indexed_document(conn, place[0], cwd)
        if document is not None:
            return document, Fragment(lines=_ordered(place[1], place[2]))
    shown = text if len(text) <= 120 else text[:117] + "..."
    raise NotFound(
        f"not in the index: {shown!r} names no indexed document (only indexed files are read;"
        " give a citation from `kb search`)"
    )


# ---- code symbols -------------------------------------------------------------------------


def code_symbols(
    conn: Connection, document: IndexedDocument, file_text: str | None
) -> list[Symbol]:
    """The file's definitions read from its text when it is unchanged (every method, also in a
    class that fit one chunk); else the symbols its stored chunks carry."""
    from kb_search.formats.code.symbols import Symbol, file_symbols

    if file_text is not None:
        found = format_for(Path(document.path), sniff=False)
        symbols = file_symbols(file_text, Path(document.path), found.language if found else None)
        if symbols:
            return symbols
    spans: dict[str, tuple[int, int]] = {}
    for chunk in document_chunks(conn, document.document_id):
        if chunk.line_start is None:
            continue
        for name in (s.strip() for s in (chunk.symbol or "").split(",")):
            if name:
                first, last = spans.get(name, (chunk.line_start, _end(chunk)))
                spans[name] = (min(first, chunk.line_start), max(last, _end(chunk)))
    return [Symbol(name, first, last) for name, (first, last) in spans.items()]


def symbol_lines(symbols: list[Symbol], wanted: str, path: str) -> tuple[int, int]:
    """The lines of the definition named `wanted` (`Class.method`, `function`, `Class` with
    its members); a name that ends one definition's qualified name (`method` for
    `Class.method`) when it ends only one."""
    exact = [s for s in symbols if s.name == wanted or s.name.startswith(wanted + ".")]
    if exact:
        return min(s.first for s in exact), max(s.last for s in exact)
    tails = sorted({s.name for s in symbols if s.name.endswith("." + wanted)})
    if len(tails) == 1:
        return symbol_lines(symbols, tails[0], path)
    if tails:
        raise NotFound(f"{path}: {wanted!r} ends {', '.join(tails)}; give the whole name")
    known = sorted({s.name for s in symbols})
    shown = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")
    raise NotFound(
        f"{path} has no definition {wanted!r}: "
        + (f"it defines {shown}" if known else "it has no symbols")
    )


def enclosing_symbol(symbols: list[Symbol], line: int, path: str) -> tuple[int, int]:
    """The lines of the innermost definition around `line` (`--symbol`)."""
    around = [s for s in symbols if s.first <= line <= s.last]
    if not around:
        raise NotFound(f"line {line} of {path} is outside every function and class")
    innermost = min(around, key=lambda s: (s.last - s.first, -s.first))
    return innermost.first, innermost.last


# ---- the file on disk ---------------------------------------------------------------------


def current_text(document: IndexedDocument, raw: bool = False) -> tuple[str | None, str | None]:
    """(the file's text, None) when it is a regular text file that still hashes to what was
    indexed; else (None, why not). Documents located by pages only (PDF, slides) or nothing
    are served from the index, unless `raw` asks for the file's text whatever it is."""
    from kb_search.store.documents import content_hash

    if not document.has_lines and not raw:
        return None, None
    if document.size > MAX_DISK_BYTES:
        return None, None
    try:  # no symlink followed, a FIFO or device never opened for reading; one byte more than
        # was indexed tells a grown file
        data = read_regular(document.path, document.size + 1, follow_symlinks=False)
    except FileNotFoundError:
        return None, "the file is not found here"
    except OSError as exc:
        return None, f"the file cannot be read ({exc.strerror or exc})"
    if content_hash(data) != document.content_hash:
        return None, "the file changed since it was indexed"
    if looks_binary(data[:SNIFF_BYTES]):
        return None, None
    return decode_bytes(data), None


def _disk_passage(
    given: str, document: IndexedDocument, text: str, lines: tuple[int, int] | None, context: int
) -> Passage:
    all_lines = text.split("\n")
    if all_lines and all_lines[-1] == "":
        all_lines.pop()
    total = max(1, len(all_lines))
    first, last = lines or (1, total)
    if first > total:
        raise NotFound(f"{given!r}: the file has {total} lines")
    first, last = max(1, first - context), min(total, last + context)
    body = "\n".join(all_lines[first - 1 : last])
    return Passage(
        requested=given,
        citation=citation(document.path, None, [first, last]) if lines else document.path,
        document_id=document.document_id,
        path=document.path,
        from_="disk",
        text=body,
        lines=[first, last],
    )


# ---- the stored chunks --------------------------------------------------------------------


def _chunks_over_lines(
    conn: Connection, document: IndexedDocument, lines: tuple[int, int] | None, context: int
) -> list[StoredChunk]:
    """The chunks that hold the lines: the chunk a search cited by exactly these lines; else
    those inside the range, and those reaching into it with a line no chunk inside holds (the
    chunks of a converted page may share source lines: one HTML paragraph split in two)."""
    chunks = document_chunks(conn, document.document_id)
    if lines is None:
        return chunks
    first, last = lines[0] - context, lines[1] + context
    meeting = [
        c for c in chunks
        if c.line_start is not None and c.line_start <= last and (c.line_end or 0) >= first
    ]  # fmt: skip
    if not meeting:
        raise NotFound(f"no indexed chunk of {document.path} covers lines {lines[0]}-{lines[1]}")
    exact = [c for c in meeting if (c.line_start, _end(c)) == (first, last)]
    if exact:
        return exact
    inside = [c for c in meeting if first <= c.line_start and _end(c) <= last]
    hits = [
        c for c in meeting
        if c in inside or not any(
            i.line_start <= max(c.line_start, first) and min(_end(c), last) <= _end(i)
            for i in inside
        )
    ]  # fmt: skip
    return hits


def _end(chunk: StoredChunk) -> int:
    return chunk.line_end or chunk.line_start or 0


def _chunk_ids_over(conn: Connection, document_id: int, lines: list[int] | None) -> list[int]:
    """The chunks whose lines meet the passage's, in document order."""
    first, last = lines or (1, SQLITE_MAX_INT)
    return chunk_ids_over_lines(conn, document_id, first, last)


def _section_chunks(
    conn: Connection, document: IndexedDocument, fragment: Fragment, context: int
) -> list[StoredChunk]:
    """The chunks of the cited pages or the anchored section, plus `context` neighbouring
    chunks on each side."""
    chunks = document_chunks(conn, document.document_id)
    if fragment.pages:
        first, last = fragment.pages
        hits = [i for i, c in enumerate(chunks) if _on_pages(c, first, last)]
        what = f"page {first}" if first == last else f"pages {first}-{last}"
    else:
        hits = _anchored(chunks, fragment.anchor or "")
        what = f"a section #{fragment.anchor}"
    if not hits:
        raise NotFound(f"{document.path} has no indexed text on {what}")
    start, end = max(0, hits[0] - context), min(len(chunks), hits[-1] + context + 1)
    return chunks[start:end]


def _on_pages(chunk: StoredChunk, first: int, last: int) -> bool:
    if chunk.page is None:
        return False
    return chunk.page <= last and (chunk.page_end or chunk.page) >= first


def slug(heading: str) -> str:
    """A heading as Markdown renderers anchor it: lower case, punctuation out, spaces as -."""
    return _SLUG_DROP.sub("", heading.strip().lower()).replace(" ", "-")


def heading_section(
    text: str, anchor: str, request: ReadRequest | None = None
) -> tuple[int, int] | None:
    """The lines of the Markdown section whose heading's slug is the anchor: from the heading
    to the line before the next heading of the same or a higher level. Linear in the text,
    and stopped by the request's budget."""
    wanted, start, level, fenced = slug(anchor), None, 0, False
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if request is not None and number % BUDGET_LINES == 0:
            request.check()
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        heading = None if fenced else markdown_heading(line)
        if heading is None:
            continue
        depth, title = heading
        if start is not None and depth <= level:
            return start, number - 1
        if start is None and slug(title) == wanted:
            start, level = number, depth
    if start is None:
        return None
    last = len(lines) - (1 if lines[-1] == "" else 0)
    return start, max(start, last)


def markdown_heading(line: str) -> tuple[int, str] | None:
    """(level, title) of an ATX heading line (up to 3 spaces, 1-6 `#`, a space, the title, an
    optional closing run of `#`), else None. String operations only: a regex with two lazy
    and greedy runs of spaces backtracked cubically on a long run of spaces."""
    body = line.lstrip(" ")
    if len(line) - len(body) > 3:
        return None
    hashes = len(body) - len(body.lstrip("#"))
    rest = body[hashes:]
    if not 1 <= hashes <= 6 or not rest[:1].isspace():
        return None
    title = rest.strip()
    closed = title.rstrip("#")
    if closed != title and (not closed or closed[-1].isspace()):
        title = closed.rstrip()
    return hashes, title


def _anchored(chunks: list[StoredChunk], anchor: str) -> list[int]:
    """Indexes of the consecutive chunks under the first heading whose slug is the anchor."""
    wanted = slug(anchor)
    hits: list[int] = []
    for i, chunk in enumerate(chunks):
        last = (chunk.heading or "").split(" > ")[-1]
        if last and slug(last) == wanted:
            if hits and hits[-1] != i - 1:
                break
            hits.append(i)
    return hits


def _index_passage(
    given: str,
    document: IndexedDocument,
    chunks: list[StoredChunk],
    fragment: Fragment | None,
    why: str | None,
) -> Passage:
    """Stored chunks as one passage, cited by their lines or pages (`fragment` None: by the
    first chunk's own citation)."""
    line_starts = [c.line_start for c in chunks if c.line_start is not None]
    line_ends = [c.line_end or c.line_start for c in chunks if c.line_start is not None]
    lines = [min(line_starts), max(line_ends)] if line_starts and line_ends else None
    page_list = [p for c in chunks for p in (c.page, c.page_end) if p is not None]
    pages = [min(page_list), max(page_list)] if page_list else None
    if fragment == Fragment():
        cited = document.path
    elif fragment is not None and fragment.anchor:
        cited = citation(document.path, None, None, fragment.anchor)
    elif fragment is None and len(chunks) == 1:
        cited = chunks[0].citation  # a chunk over a page break opens its cited page
    elif lines or pages:
        cited = citation(document.path, pages[0] if pages else None, lines)
    else:
        cited = chunks[0].citation
    return Passage(
        requested=given,
        citation=cited,
        document_id=document.document_id,
        path=document.path,
        from_="index",
        text=joined(chunks),
        lines=lines,
        pages=pages,
        chunk_ids=[c.chunk_id for c in chunks],
        note=why,
    )


def joined(chunks: list[StoredChunk]) -> str:
    """Consecutive chunks as one text, each heading line once: a chunk that starts inside a
    section repeats the section's heading line on top (it must stand alone in search), which a
    read of its neighbours shows already."""
    parts: list[str] = []
    seen: set[str] = set()
    for chunk in chunks:
        text = chunk.text
        first, _, rest = text.partition("\n")
        heading = markdown_heading(first)
        title = heading[1] if heading else first.strip()
        own = (chunk.heading or "").split(" > ")[-1]
        if parts and own and title == own and first in seen:
            text = rest.lstrip("\n")
        parts.append(text)
        seen.update(text.split("\n"))
    return "\n\n".join(part for part in parts if part)


def _chunk_passage(conn: Connection, given: str, chunk_id: int, request: ReadRequest) -> Passage:
    """`chunk:ID`: read by its lines when it has them, else the chunk and `context`
    neighbouring chunks."""
    chunk = chunks_by_id(conn, [chunk_id]).get(chunk_id) if chunk_id <= SQLITE_MAX_INT else None
    if chunk is None:
        raise NotFound(f"no chunk with id {chunk_id}: take chunk ids from search results")
    if chunk.lines and chunk.page is None:
        passage = read_one(conn, chunk.citation, request)
    else:
        document = indexed_document(conn, chunk.path, None)
        assert document is not None  # the chunk's own document
        context = request.context
        neighbours = document_chunks(
            conn, chunk.document_id, chunk.chunk_index - context, chunk.chunk_index + context
        )
        passage = _index_passage(given, document, neighbours, None, None)
    passage.requested = given
    return passage


# ---- the byte budget ----------------------------------------------------------------------


def within_budget(passages: list[Passage], max_bytes: int | None) -> Reading:
    """Whole passages while they fit; the first that does not is cut (at a line end when one
    is in reach) and marked; the ones after it are omitted."""
    if max_bytes is None:
        return Reading(passages, None, _size(passages))
    kept: list[Passage] = []
    for i, passage in enumerate(passages):
        room = max_bytes - _size(kept)
        if len(passage.text.encode()) <= room:
            kept.append(passage)
            continue
        room -= len(CUT_MARKER.encode())
        if room > 0:
            passage.text = _cut(passage.text, room) + CUT_MARKER
            passage.truncated = True
            kept.append(passage)
        omitted = [p.requested for p in passages[len(kept) if room > 0 else i :]]
        return Reading(kept, max_bytes, _size(kept), omitted)
    return Reading(kept, max_bytes, _size(kept))


def _size(passages: list[Passage]) -> int:
    return sum(len(p.text.encode()) for p in passages)


def _cut(text: str, room: int) -> str:
    head = text.encode()[:room].decode(errors="ignore")
    newline = head.rfind("\n")
    return head[:newline] if newline > len(head) // 2 else head
