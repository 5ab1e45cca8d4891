"""RTF through `striprtf` (pure Python, no dependencies): control words, font and colour
tables, embedded pictures and objects are dropped; `\\'xx` and `\\u` escapes decoded. The
`{\\info}` group gives the title, author, subject and keywords. RTF lines are not text lines,
so chunks carry no line range."""

from __future__ import annotations

import re

from kb_search.formats.registry import Source
from kb_search.formats.text import Section, chunk_sections
from kb_search.parsed import IngestError, ParsedDocument

_INFO_FIELD = re.compile(r"\{\\(title|author|subject|keywords)\s+((?:[^{}\\]|\\.)*)\}")
_BLANK_RUN = re.compile(r"\n[ \t]*(?:\n[ \t]*)+")
_SPACES = re.compile(r"[ \t\u00a0]+")
MAX_TITLE_CHARS = 100


def parse_rtf(source: Source) -> ParsedDocument:
    from striprtf.striprtf import rtf_to_text

    raw = source.text()
    if not raw.lstrip().startswith("{\\rtf"):
        raise IngestError("not an RTF file (no {\\rtf header)")
    try:
        text = rtf_to_text(raw, errors="replace")
    except (RecursionError, IndexError, ValueError) as exc:
        raise IngestError(f"broken RTF file: {type(exc).__name__}") from exc
    info = {name: _decode_info(value) for name, value in _INFO_FIELD.findall(raw)}
    lines = _tidy(text).split("\n")
    cut = chunk_sections(lines, [Section((), 0, 0, len(lines))], source.settings, source.count)
    for chunk in cut.chunks:
        chunk.line_start = chunk.line_end = None
    title = info.pop("title", "") or _first_line(lines) or source.name.stem
    keywords = info.pop("keywords", "")
    return ParsedDocument(
        title=title,
        doc_type="rtf",
        chunks=cut.chunks,
        tags=[k.strip() for k in re.split(r"[,;]", keywords) if k.strip()],
        metadata={k: v for k, v in info.items() if v},
        notes=cut.notes,
    )


def _decode_info(value: str) -> str:
    from striprtf.striprtf import rtf_to_text

    try:
        return _SPACES.sub(" ", rtf_to_text("{\\rtf1 " + value + "}", errors="replace")).strip()
    except (RecursionError, IndexError, ValueError):
        return ""


def _tidy(text: str) -> str:
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return _BLANK_RUN.sub("\n\n", "\n".join(lines)).strip("\n")


def _first_line(lines: list[str]) -> str:
    first = next((line for line in lines if line.strip()), "")
    return first if len(first) <= MAX_TITLE_CHARS else ""


def parse_rtf_source(source: Source) -> ParsedDocument:
    return parse_rtf(source)
