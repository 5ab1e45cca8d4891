"""Human-readable output for the terminal (JSON output is each object's to_dict())."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from typing import Any

from kb_search.search.results import HL_CLOSE as _HL_CLOSE
from kb_search.search.results import HL_OPEN as _HL_OPEN
from kb_search.search.results import SearchResponse


def _highlight(snippet: str, color: bool) -> str:
    if color:
        return snippet.replace(_HL_OPEN, "\x1b[1m").replace(_HL_CLOSE, "\x1b[0m")
    return snippet.replace(_HL_OPEN, "").replace(_HL_CLOSE, "")


def _where(source: Any) -> str:
    if source.page is not None:
        if source.page_end and source.page_end != source.page:
            return f" (pp.{source.page}-{source.page_end})"
        return f" (p.{source.page})"
    if source.lines:
        return f" (L{source.lines[0]}-{source.lines[1]})"
    return ""


def search_human(response: SearchResponse, color: bool = False) -> str:
    shown = len(response.results)
    lines = [
        f'Search: "{response.query}" ({response.total_matches} matches, showing top {shown})',
    ]
    bad_legs = [
        f"{leg}: {state}" for leg, state in response.legs.items() if state not in ("ok", "empty")
    ]
    if bad_legs:
        lines.append("Note: " + "; ".join(bad_legs))
    for i, result in enumerate(response.results, start=1):
        s = result.source
        tags = f" [{', '.join(s.tags)}]" if s.tags else ""
        where = " > ".join(x for x in (s.heading, s.symbol) if x)
        lines.append("")
        lines.append(f"{i}. [{result.score:.2f}] {s.title}{_where(s)} [{s.type}]{tags}")
        if where:
            lines.append(f"   {where}")
        body = " ".join(_highlight(result.snippet, color).split())
        lines.extend(textwrap.wrap(body, width=96, initial_indent="   ", subsequent_indent="   "))
        lines.append(f"   {result.citation}  (chunk {result.chunk_id})")
    if not response.results:
        lines.append("")
        lines.append("No results.")
    return "\n".join(lines)


def document_human(doc: Any) -> str:
    tags = f"  tags: {', '.join(doc.tags)}" if doc.tags else ""
    lines = [
        f"[{doc.document_id}] {doc.title}",
        f"  {doc.path}",
        f"  type: {doc.type}  language: {doc.language or '-'}  chunks: {doc.chunk_count}{tags}",
    ]
    for chunk in doc.chunks or []:
        lines.append("")
        lines.append(chunk_header(chunk))
        lines.append(textwrap.indent(chunk.text, "    "))
    return "\n".join(lines)


def chunk_header(chunk: Any) -> str:
    label = " > ".join(x for x in (chunk.heading, chunk.symbol) if x)
    return f"--- chunk {chunk.chunk_id} (#{chunk.chunk_index}) {chunk.citation}" + (
        f"  {label}" if label else ""
    )


def table(rows: Iterable[Iterable[Any]], headers: list[str]) -> str:
    rows = [[("" if v is None else str(v)) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(v)) for w, v in zip(widths, row)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*headers), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*row) for row in rows]
    return "\n".join(out)
