"""Which parser reads which file: extension (or file name, or content) -> format -> parser.

This is the one place that maps file names to formats. A format names its parser as
"module:function" under `kb_search.ingest.formats`, imported on first use, so optional
libraries (Docling, OCR) cost nothing until a file needs them. Every parser has the same
signature: `parse(source: Source) -> ParsedDocument`.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kb_search.ingest.reader import SNIFF_BYTES, decode_bytes, looks_binary, read_text_file
from kb_search.ingest.tokens import TokenCounter, count_tokens
from kb_search.models import ChunkSettings, ParsedDocument


@dataclass
class Source:
    """One file to parse and how: what every parser receives."""

    path: Path
    settings: ChunkSettings = field(default_factory=ChunkSettings)
    count: TokenCounter = count_tokens
    max_bytes: int = 20_000_000
    ocr: str = "auto"  # auto | always | never
    language: str | None = None  # programming language, for code
    doc_type: str = "text"
    _text: str | None = None

    def text(self) -> str:
        """The file decoded (UTF-8, UTF-16 by BOM, cp1252 fallback); refuses binary files."""
        if self._text is None:
            self._text = read_text_file(self.path, self.max_bytes)
        return self._text


Parser = Callable[[Source], ParsedDocument]


@dataclass(frozen=True)
class Format:
    doc_type: str  # stored as documents.doc_type: markdown | text | code | pdf | html | ...
    parser: str  # "module:function" in kb_search.ingest.formats
    extensions: frozenset[str] = frozenset()
    filenames: frozenset[str] = frozenset()
    language: str | None = None  # for code formats

    def load_parser(self) -> Parser:
        module, _, name = self.parser.partition(":")
        return getattr(importlib.import_module(f"kb_search.ingest.formats.{module}"), name)


# Programming and config languages by extension; parse_code knows how to split each.
CODE_LANGUAGES: dict[str, str] = {
    ".go": "go",
    ".sh": "bash",
    ".bash": "bash",
    ".zsh": "zsh",
    ".ksh": "bash",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".swift": "swift",
    ".scala": "scala",
    ".lua": "lua",
    ".sql": "sql",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".json": "json",
    ".ini": "ini",
    ".cfg": "ini",
    ".mk": "make",
}
CODE_FILENAMES: dict[str, str] = {
    "Makefile": "make",
    "GNUmakefile": "make",
    "Dockerfile": "dockerfile",
    "Containerfile": "dockerfile",
    ".bashrc": "bash",
    ".bash_profile": "bash",
    ".profile": "bash",
    ".zshrc": "zsh",
}
# Interpreters named on a `#!` line, for scripts without an extension.
SHEBANG_LANGUAGES = {
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


def _code_formats() -> list[Format]:
    by_language: dict[str, tuple[set[str], set[str]]] = {}
    for ext, language in CODE_LANGUAGES.items():
        by_language.setdefault(language, (set(), set()))[0].add(ext)
    for name, language in CODE_FILENAMES.items():
        by_language.setdefault(language, (set(), set()))[1].add(name)
    return [
        Format("code", "code:parse_code_source", frozenset(exts), frozenset(names), language)
        for language, (exts, names) in sorted(by_language.items())
    ]


FORMATS: list[Format] = [
    Format("markdown", "markdown:parse_markdown_source", frozenset(
        {".md", ".markdown", ".mdown", ".mkd", ".mdx"})),
    Format("text", "text:parse_text_source", frozenset(
        {".txt", ".text", ".rst", ".org", ".adoc", ".asciidoc", ".tex"})),
    Format("code", "python_code:parse_python_source", frozenset({".py", ".pyi", ".pyw"}),
           language="python"),
    Format("pdf", "pdf:parse_pdf_source", frozenset({".pdf"})),
    Format("html", "html:parse_html_source", frozenset({".html", ".htm", ".xhtml"})),
    # Docling-only formats: always recognised, so that without Docling they fail with a hint.
    Format("docx", "docling:parse_office_source", frozenset({".docx"})),
    Format("pptx", "docling:parse_office_source", frozenset({".pptx"})),
    Format("xlsx", "docling:parse_office_source", frozenset({".xlsx"})),
    *_code_formats(),
]  # fmt: skip

_BY_EXTENSION: dict[str, Format] = {}
_BY_FILENAME: dict[str, Format] = {}
_BY_LANGUAGE: dict[str, Format] = {}


def register(fmt: Format) -> None:
    """Add a format (a later registration of the same extension wins)."""
    for ext in fmt.extensions:
        _BY_EXTENSION[ext.lower()] = fmt
    for name in fmt.filenames:
        _BY_FILENAME[name] = fmt
    if fmt.language:
        _BY_LANGUAGE.setdefault(fmt.language, fmt)


for _fmt in FORMATS:
    register(_fmt)

SUPPORTED_EXTENSIONS = frozenset(_BY_EXTENSION)

_SHEBANG = re.compile(r"^#!\s*(?:\S*/)?(?:env\s+(?:-\S+\s+)*)?(?P<prog>[\w.+-]+)")


def shebang_language(head: str) -> str | None:
    match = _SHEBANG.match(head)
    if not match:
        return None
    program = re.sub(r"[\d.]+$", "", match.group("prog"))
    return SHEBANG_LANGUAGES.get(program)


def _head(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            data = handle.read(SNIFF_BYTES)
    except OSError:
        return ""
    return "" if looks_binary(data) else decode_bytes(data)


def format_for(path: Path, sniff: bool = True) -> Format | None:
    """The format of a file: by file name, then extension, then (`sniff`) a `#!` line."""
    fmt = _BY_FILENAME.get(path.name) or _BY_EXTENSION.get(path.suffix.lower())
    if fmt is None and not path.suffix and sniff:
        language = shebang_language(_head(path))
        fmt = _BY_LANGUAGE.get(language) if language else None
    return fmt


def language_for(path: Path) -> str | None:
    """The programming language of a code file by its name or extension."""
    fmt = _BY_FILENAME.get(path.name) or _BY_EXTENSION.get(path.suffix.lower())
    return fmt.language if fmt else None


def detect_type(path: Path, sniff: bool = True) -> str | None:
    """doc_type for a path (markdown | text | code | pdf | html | docx | ...), or None."""
    fmt = format_for(path, sniff)
    return fmt.doc_type if fmt else None
