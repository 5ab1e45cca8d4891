"""CSV and TSV with the standard `csv` module: rows packed into chunks that each repeat the
header, as Markdown tables, with the file lines the rows came from. A row too wide for one
chunk (or a header too wide to repeat) is written as `column: value` lines instead, so a
chunk never holds half a row without knowing its columns."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from kb_search.chunking.tokens import TokenCounter, pack_lines
from kb_search.formats.registry import Source
from kb_search.parsed import IngestError, ParsedChunk, ParsedDocument

MAX_COLUMNS_IN_METADATA = 50
MAX_FIELD_CHARS = 1_000_000
_DELIMITERS = ",;\t|"
_DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}


@dataclass
class _Row:
    cells: list[str]
    line_start: int
    line_end: int


def parse_delimited(source: Source) -> ParsedDocument:
    text = source.text()
    delimiter = _delimiter(text, source.name.suffix.lower())
    header, rows = _read(text, delimiter)
    if not header:
        raise IngestError("no rows")
    settings, count = source.settings, source.count
    header_text = _table_header(header)
    if count(header_text) <= settings.max_tokens // 2:
        chunks = _table_chunks(header, header_text, rows, settings.max_tokens, count)
    else:
        chunks = _record_chunks(header, rows, settings.max_tokens, count)
    if not rows:
        chunks = [ParsedChunk(header_text, None, None, 1, 1, token_count=count(header_text))]
    return ParsedDocument(
        title=source.name.stem,
        doc_type="csv",
        chunks=chunks,
        metadata={
            "columns": header[:MAX_COLUMNS_IN_METADATA],
            "column_count": len(header),
            "rows": len(rows),
            "delimiter": _DELIMITER_NAMES.get(delimiter, delimiter),
        },
    )


def _delimiter(text: str, suffix: str) -> str:
    if suffix in (".tsv", ".tab"):
        return "\t"
    sample = text[:16384]
    try:
        return csv.Sniffer().sniff(sample, delimiters=_DELIMITERS).delimiter
    except csv.Error:
        first = sample.split("\n", 1)[0]
        return max(_DELIMITERS, key=first.count) if any(d in first for d in _DELIMITERS) else ","


def _read(text: str, delimiter: str) -> tuple[list[str], list[_Row]]:
    previous = csv.field_size_limit()
    csv.field_size_limit(MAX_FIELD_CHARS)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header: list[str] = []
    rows: list[_Row] = []
    last_line = 0
    try:
        for cells in reader:
            start, last_line = last_line + 1, reader.line_num
            cells = [_cell(c) for c in cells]
            if not any(cells):
                continue
            if not header:
                header = [c or f"column {i}" for i, c in enumerate(cells, start=1)]
            else:
                rows.append(_Row(cells, start, last_line))
    except csv.Error as exc:
        raise IngestError(f"broken CSV near line {reader.line_num}: {exc}") from exc
    finally:
        csv.field_size_limit(previous)
    return header, rows


def _cell(value: str) -> str:
    return " ".join(value.split()).replace("|", "\\|")


def _table_header(header: list[str]) -> str:
    return _table_row(header) + "\n" + _table_row(["---"] * len(header))


def _table_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table_chunks(
    header: list[str], header_text: str, rows: list[_Row], max_tokens: int, count: TokenCounter
) -> list[ParsedChunk]:
    budget = max_tokens - count(header_text)
    chunks: list[ParsedChunk] = []
    run: list[_Row] = []
    used = 0

    def flush() -> None:
        if run:
            body = "\n".join(_table_row(_fit(r.cells, len(header))) for r in run)
            chunks.append(
                _chunk(f"{header_text}\n{body}", run[0].line_start, run[-1].line_end, count)
            )
            run.clear()

    for row in rows:
        size = count(_table_row(row.cells))
        if size > budget:
            flush()
            used = 0
            chunks.extend(_record_chunks(header, [row], max_tokens, count))
            continue
        if run and used + size > budget:
            flush()
            used = 0
        run.append(row)
        used += size
    flush()
    return chunks


def _record_chunks(
    header: list[str], rows: list[_Row], max_tokens: int, count: TokenCounter
) -> list[ParsedChunk]:
    """Rows as `column: value` lines, several rows per chunk; a huge row split by fields."""
    chunks: list[ParsedChunk] = []
    for row in rows:
        fields = [
            f"{name}: {value}" for name, value in zip(_names(header, row), row.cells) if value
        ]
        record = "\n".join(fields)
        previous = chunks[-1] if chunks else None
        if previous and previous.line_end == row.line_start - 1:
            joined = f"{previous.text}\n\n{record}"
            if count(joined) <= max_tokens:
                chunks[-1] = _chunk(
                    joined, previous.line_start or row.line_start, row.line_end, count
                )
                continue
        if count(record) <= max_tokens:
            chunks.append(_chunk(record, row.line_start, row.line_end, count))
            continue
        for piece in pack_lines(fields, row.line_start, max_tokens, count):
            chunks.append(_chunk(piece.text, row.line_start, row.line_end, count))
    return chunks


def _names(header: list[str], row: _Row) -> list[str]:
    extra = len(row.cells) - len(header)
    return header + [f"column {len(header) + i}" for i in range(1, extra + 1)]


def _fit(cells: list[str], width: int) -> list[str]:
    return cells + [""] * (width - len(cells)) if len(cells) < width else cells


def _chunk(text: str, line_start: int, line_end: int, count: TokenCounter) -> ParsedChunk:
    return ParsedChunk(text, None, None, line_start, line_end, token_count=count(text))


def parse_delimited_source(source: Source) -> ParsedDocument:
    return parse_delimited(source)
