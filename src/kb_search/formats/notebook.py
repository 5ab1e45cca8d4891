"""Jupyter notebooks (nbformat 4, and 3's worksheets and heading cells) read as plain JSON:
Markdown cells as Markdown, code cells as fenced code, their text outputs trimmed to a few
lines, and images, HTML, widgets, attachments and inline `data:` URIs dropped. Chunks cite
cell numbers (as pages: `page_unit` is "cell"); `nbformat` would add jsonschema and
traitlets to validate what plain JSON reads as well."""

from __future__ import annotations

import json
import re
from typing import Any

from kb_search.formats.converted import MarkdownBuilder, Origin
from kb_search.formats.registry import Source
from kb_search.parsed import IngestError, ParsedDocument

MAX_OUTPUT_LINES = 12
MAX_OUTPUT_CHARS = 1200
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Scans stop at the next "[" or "!", which neither alt text nor a data URI holds: linear time.
_DATA_URI = re.compile(
    r"!\[[^\[\]]*\]\(\s*data:[^)\[!]*\)|data:[\w/+.-]+;base64,[A-Za-z0-9+/=\s]{16,}"
)
_TEXT_OUTPUTS = ("text/markdown", "text/plain")


def parse_notebook(source: Source) -> ParsedDocument:
    try:
        notebook = json.loads(source.text())
    except (ValueError, RecursionError) as exc:
        raise IngestError(f"broken notebook: not JSON ({_first_line(exc)})") from exc
    if not isinstance(notebook, dict):
        raise IngestError("broken notebook: not a JSON object")
    cells = _cells(notebook)
    language = _language(notebook)
    # Before nbformat 3 a multi-line string was saved as its lines without their newlines.
    version = notebook.get("nbformat")
    joiner = "\n" if isinstance(version, int) and version < 3 else ""
    builder = MarkdownBuilder()
    for number, cell in enumerate(cells, start=1):
        if isinstance(cell, dict):
            _add_cell(builder, cell, number, language, joiner)
    document = builder.parse(source.name, source.settings, source.count)
    metadata = notebook.get("metadata") if isinstance(notebook.get("metadata"), dict) else {}
    title = metadata.get("title") if isinstance(metadata.get("title"), str) else None
    document.title = title or document.title
    document.doc_type = "notebook"
    document.language = language
    document.page_count = len(cells) or None
    document.metadata = {"page_unit": "cell", "cells": len(cells)}
    kernelspec = metadata.get("kernelspec")
    kernel = kernelspec.get("name") if isinstance(kernelspec, dict) else None
    if isinstance(kernel, str):
        document.metadata["kernel"] = kernel
    return document


def _cells(notebook: dict[str, Any]) -> list[Any]:
    if isinstance(notebook.get("cells"), list):
        return notebook["cells"]
    worksheets = notebook.get("worksheets")  # nbformat 3
    if isinstance(worksheets, list):
        return [c for w in worksheets if isinstance(w, dict) for c in w.get("cells") or []]
    if isinstance(notebook.get("nbformat"), int) and "worksheets" not in notebook:
        return []  # nbformat 3 saved a notebook with nothing in it without worksheets: empty
    raise IngestError("broken notebook: no cells")


def _language(notebook: dict[str, Any]) -> str | None:
    metadata = notebook.get("metadata")
    if not isinstance(metadata, dict):
        return None
    info = metadata.get("language_info") or {}
    kernel = metadata.get("kernelspec") or {}
    name = (info.get("name") if isinstance(info, dict) else None) or (
        kernel.get("language") if isinstance(kernel, dict) else None
    )
    return name.lower() if isinstance(name, str) else None


def _add_cell(
    builder: MarkdownBuilder,
    cell: dict[str, Any],
    number: int,
    language: str | None,
    joiner: str,
) -> None:
    origin = Origin(page=number)
    kind = cell.get("cell_type")
    text = _joined(cell.get("source", cell.get("input", "")), joiner)
    if kind == "markdown":
        builder.block(_DATA_URI.sub("", text), origin)
    elif kind == "heading":  # nbformat 3: its own cell type, with a level
        line = " ".join(text.split())
        if line:
            builder.block(f"{'#' * _heading_level(cell.get('level'))} {line}", origin)
    elif kind == "code":
        if text.strip():
            fence = "~~~" if "```" in text else "```"
            builder.block(f"{fence}{language or ''}\n{text.strip(chr(10))}\n{fence}", origin)
        output = _outputs(cell.get("outputs"), joiner)
        if output:
            builder.block(f"```output\n{output}\n```", origin)
    elif kind == "raw" and text.strip():
        builder.block(text, origin)


def _heading_level(level: Any) -> int:
    return min(max(level, 1), 6) if isinstance(level, int) else 1


def _outputs(outputs: Any, joiner: str) -> str:
    """The text a code cell printed or returned, trimmed; rich outputs are left out."""
    parts: list[str] = []
    for output in outputs if isinstance(outputs, list) else []:
        if not isinstance(output, dict):
            continue
        kind = output.get("output_type")
        if kind == "stream":
            parts.append(_joined(output.get("text", ""), joiner))
        elif kind in ("execute_result", "display_data", "pyout"):
            data = output.get("data") if isinstance(output.get("data"), dict) else output
            text = next((data[m] for m in _TEXT_OUTPUTS if m in data), None)
            text = text if text is not None else data.get("text")
            if text is not None:
                parts.append(_joined(text, joiner))
        elif kind in ("error", "pyerr"):
            parts.append(f"{output.get('ename', 'Error')}: {output.get('evalue', '')}")
    return _trim(_ANSI.sub("", "\n".join(p.rstrip("\n") for p in parts if p.strip())))


def _trim(text: str) -> str:
    lines = text.split("\n")
    kept = lines[:MAX_OUTPUT_LINES]
    joined = "\n".join(kept)
    if len(joined) > MAX_OUTPUT_CHARS:
        joined = joined[:MAX_OUTPUT_CHARS].rsplit(" ", 1)[0]
    if len(lines) > MAX_OUTPUT_LINES or len(joined) < len("\n".join(kept)):
        joined += "\n… (output trimmed)"
    return joined.replace("```", "'''")


def _joined(value: Any, joiner: str) -> str:
    if isinstance(value, list):
        return joiner.join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def parse_notebook_source(source: Source) -> ParsedDocument:
    return parse_notebook(source)
