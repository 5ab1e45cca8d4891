"""Turn one file into a ParsedDocument: route by extension, then by content."""

from __future__ import annotations

import re
from pathlib import Path

from kb_search.ingest import docling_convert
from kb_search.ingest.code import CODE_EXTENSIONS, CODE_FILENAMES, language_for, parse_code
from kb_search.ingest.docling_convert import pdf_path_report
from kb_search.ingest.html import HTML_EXTENSIONS, parse_html
from kb_search.ingest.markdown import parse_markdown
from kb_search.ingest.python_code import parse_python
from kb_search.ingest.reader import (
    SNIFF_BYTES,
    decode_bytes,
    looks_binary,
    read_text_file,
    scrub_document,
)
from kb_search.ingest.text import parse_text
from kb_search.ingest.tokens import TokenCounter, count_tokens
from kb_search.models import ChunkSettings, EmptyFile, IngestError, ParsedDocument

MARKDOWN_EXTENSIONS = frozenset({".md", ".markdown", ".mdown", ".mkd", ".mdx"})
TEXT_EXTENSIONS = frozenset({".txt", ".text", ".rst", ".org", ".adoc", ".asciidoc", ".tex"})
PYTHON_EXTENSIONS = frozenset({".py", ".pyi", ".pyw"})
PDF_EXTENSIONS = frozenset({".pdf"})
# Docling-only formats: always recognised, so that without Docling they fail with a hint.
OFFICE_EXTENSIONS = {".docx": "docx", ".pptx": "pptx", ".xlsx": "xlsx"}
SUPPORTED_EXTENSIONS = frozenset(
    MARKDOWN_EXTENSIONS
    | TEXT_EXTENSIONS
    | PYTHON_EXTENSIONS
    | PDF_EXTENSIONS
    | HTML_EXTENSIONS
    | set(OFFICE_EXTENSIONS)
    | set(CODE_EXTENSIONS)
)

_SHEBANG = re.compile(r"^#!\s*(?:\S*/)?(?:env\s+(?:-\S+\s+)*)?(?P<prog>[\w.+-]+)")
_SHEBANG_LANGUAGES = {
    "python": "python",
    "sh": "bash",
    "bash": "bash",
    "dash": "bash",
    "ksh": "bash",
    "zsh": "zsh",
    "node": "javascript",
    "deno": "typescript",
    "ruby": "ruby",
    "php": "php",
    "lua": "lua",
}


def detect_type(path: Path, sniff: bool = True) -> str | None:
    """doc_type for a path (markdown | text | code | pdf | html | docx | pptx | xlsx), or None.

    By extension; a file without an extension is recognised by name (Makefile) or, when
    `sniff` is true, by a shebang line in its first bytes.
    """
    suffix = path.suffix.lower()
    if suffix in MARKDOWN_EXTENSIONS:
        return "markdown"
    if suffix in TEXT_EXTENSIONS:
        return "text"
    if suffix in PDF_EXTENSIONS:
        return "pdf"
    if suffix in HTML_EXTENSIONS:
        return "html"
    if suffix in OFFICE_EXTENSIONS:
        return OFFICE_EXTENSIONS[suffix]
    if suffix in PYTHON_EXTENSIONS or language_for(path):
        return "code"
    if not suffix and sniff and _shebang_language(_head(path)):
        return "code"
    return None


def parse_file(
    path: Path,
    settings: ChunkSettings,
    count: TokenCounter = count_tokens,
    max_bytes: int = 20_000_000,
    ocr: str = "auto",
) -> ParsedDocument:
    """Parse one file; raises IngestError with a one-line reason when it cannot be ingested."""
    return scrub_document(_parse(Path(path), settings, count, max_bytes, ocr))


def _parse(
    path: Path, settings: ChunkSettings, count: TokenCounter, max_bytes: int, ocr: str
) -> ParsedDocument:
    suffix = path.suffix.lower()
    if suffix in PDF_EXTENSIONS:
        return _parse_pdf(path, settings, count, ocr)
    if suffix in OFFICE_EXTENSIONS:
        return _parse_office(path, OFFICE_EXTENSIONS[suffix], settings, count, max_bytes)
    text = read_text_file(path, max_bytes)
    if suffix in HTML_EXTENSIONS:
        return _parse_html(text, path, settings, count)
    document = _parse_text_file(text, path, settings, count)
    if not document.chunks:
        raise EmptyFile("no indexable text")
    return document


def _parse_pdf(
    path: Path, settings: ChunkSettings, count: TokenCounter, ocr: str
) -> ParsedDocument:
    from kb_search.ingest.pdf import parse_pdf

    if docling_convert.docling_available("pdf") is None:
        try:
            return docling_convert.convert_with_docling(path, settings, count, ocr=ocr)
        except IngestError:
            pass  # the text-layer path gives the clearer error (encrypted, truncated, ...)
    return parse_pdf(path, settings, count=count, ocr=ocr)


def _parse_office(
    path: Path, doc_type: str, settings: ChunkSettings, count: TokenCounter, max_bytes: int
) -> ParsedDocument:
    if docling_convert.docling_available(doc_type) is not None:
        raise IngestError(docling_convert.docling_hint(doc_type))
    _check_size(path, max_bytes)
    return docling_convert.convert_with_docling(path, settings, count)


def _parse_html(
    text: str, path: Path, settings: ChunkSettings, count: TokenCounter
) -> ParsedDocument:
    if docling_convert.docling_available("html") is None:
        try:
            return docling_convert.convert_with_docling(path, settings, count)
        except IngestError:
            pass  # the stdlib converter copes with what Docling's backend rejects
    document = parse_html(text, path, settings, count)
    if not document.chunks:
        raise EmptyFile("no indexable text")
    return document


def _check_size(path: Path, max_bytes: int) -> None:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise IngestError(f"cannot read file: {exc.strerror or exc}") from exc
    if size > max_bytes:
        raise IngestError(f"file too large: {size / 1e6:.1f} MB > cap {max_bytes / 1e6:g} MB")


def _parse_text_file(
    text: str, path: Path, settings: ChunkSettings, count: TokenCounter
) -> ParsedDocument:
    suffix = path.suffix.lower()
    if suffix in MARKDOWN_EXTENSIONS:
        return parse_markdown(text, path, settings, count)
    if suffix in TEXT_EXTENSIONS:
        return parse_text(text, path, settings, count)
    language = (
        "python" if suffix in PYTHON_EXTENSIONS else language_for(path)
    ) or _shebang_language(text[:SNIFF_BYTES])
    if language == "python":
        return parse_python(text, path, settings, count)
    if language:
        return parse_code(text, path, settings, count, language=language)
    return parse_text(text, path, settings, count)


def _shebang_language(head: str) -> str | None:
    match = _SHEBANG.match(head)
    if not match:
        return None
    program = re.sub(r"[\d.]+$", "", match.group("prog"))
    return _SHEBANG_LANGUAGES.get(program)


def _head(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            data = handle.read(SNIFF_BYTES)
    except OSError:
        return ""
    return "" if looks_binary(data) else decode_bytes(data)


__all__ = [
    "CODE_EXTENSIONS",
    "CODE_FILENAMES",
    "SUPPORTED_EXTENSIONS",
    "detect_type",
    "parse_file",
    "pdf_path_report",
]
