"""Which parser reads which file: extension (or file name, or content) -> format -> parser.

This is the one place that maps file names to formats. A format names its parser, one entry
of PARSERS (a `kb_search.registry.Registry`), imported on first use, so optional libraries
(Docling, OCR) cost nothing until a file needs them. Every parser has the same signature:
`parse(source: Source) -> ParsedDocument`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kb_search.chunking.tokens import TokenCounter, count_tokens
from kb_search.errors import UserInputError
from kb_search.formats import compressed, generated, secrets, sniff
from kb_search.formats.reader import (
    SNIFF_BYTES,
    decode_bytes,
    looks_binary,
    open_user_file,
    read_document,
    read_text_file,
)
from kb_search.parsed import ChunkSettings, ParsedDocument
from kb_search.registry import Registry


@dataclass
class Source:
    """One file to parse and how: what every parser receives."""

    path: Path
    settings: ChunkSettings = field(default_factory=ChunkSettings)
    count: TokenCounter = count_tokens
    max_bytes: int = 20_000_000
    ocr: str = "auto"  # auto | always | never
    ocr_later: bool = False  # queue the pages that need OCR instead of reading them now
    language: str | None = None  # programming language, for code
    doc_type: str = "text"
    _text: str | None = None

    @property
    def name(self) -> Path:
        """The path as a document is named by it (titles, suffix rules): a compressed file's
        name inside (`notes.rst.gz` -> `notes.rst`); `path` is what is read."""
        return compressed.inner_path(self.path)

    def text(self) -> str:
        """The file decoded (UTF-8, UTF-16 by BOM, cp1252 fallback); refuses binary files."""
        if self._text is None:
            self._text = read_text_file(self.path, self.max_bytes)
        return self._text


Parser = Callable[[Source], ParsedDocument]

# Parsers by the name a Format gives, each imported when a file needs it.
PARSERS: Registry[Parser] = Registry(
    "parser",
    {
        "markdown": "kb_search.formats.markdown:parse_markdown_source",
        "text": "kb_search.formats.text:parse_text_source",
        "org": "kb_search.formats.org:parse_org_source",
        "asciidoc": "kb_search.formats.asciidoc:parse_asciidoc_source",
        "texinfo": "kb_search.formats.texinfo:parse_texinfo_source",
        "latex": "kb_search.formats.latex:parse_latex_source",
        "rtf": "kb_search.formats.rtf:parse_rtf_source",
        "epub": "kb_search.formats.epub:parse_epub_source",
        "odf": "kb_search.formats.odf:parse_odf_source",
        "notebook": "kb_search.formats.notebook:parse_notebook_source",
        "eml": "kb_search.formats.mail:parse_eml_source",
        "mbox": "kb_search.formats.mail:parse_mbox_source",
        "delimited": "kb_search.formats.delimited:parse_delimited_source",
        "python": "kb_search.formats.code.python:parse_python_source",
        "code": "kb_search.formats.code.parse:parse_code_source",
        "pdf": "kb_search.formats.pdf.parse:parse_pdf_source",
        "html": "kb_search.formats.html:parse_html_source",
        "office": "kb_search.formats.docling:parse_office_source",
        "json": "kb_search.formats.config_files:parse_json_source",
        "yaml": "kb_search.formats.config_files:parse_yaml_source",
        "toml": "kb_search.formats.config_files:parse_toml_source",
    },
    UserInputError,
)


@dataclass(frozen=True)
class Format:
    doc_type: str  # stored as documents.doc_type: markdown | text | code | pdf | html | ...
    parser: str  # a name in PARSERS
    extensions: frozenset[str] = frozenset()
    filenames: frozenset[str] = frozenset()
    language: str | None = None  # for code formats

    def load_parser(self) -> Parser:
        return PARSERS.load(self.parser)


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
    ".gitconfig": "ini",
    ".hgrc": "ini",
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
        Format("code", "code", frozenset(exts), frozenset(names), language)
        for language, (exts, names) in sorted(by_language.items())
    ]


FORMATS: list[Format] = [
    Format("markdown", "markdown", frozenset({".md", ".markdown", ".mdown", ".mkd", ".mdx"})),
    Format("text", "text", frozenset({".txt", ".text", ".rst"})),
    Format("org", "org", frozenset({".org"})),
    Format("asciidoc", "asciidoc", frozenset({".adoc", ".asciidoc"})),
    Format("texinfo", "texinfo", frozenset({".texi", ".texinfo", ".txi"})),
    Format("latex", "latex", frozenset({".tex", ".ltx", ".latex"})),
    Format("rtf", "rtf", frozenset({".rtf"})),
    Format("epub", "epub", frozenset({".epub"})),
    Format("odt", "odf", frozenset({".odt", ".ott"})),
    Format("ods", "odf", frozenset({".ods", ".ots"})),
    Format("odp", "odf", frozenset({".odp", ".otp"})),
    Format("notebook", "notebook", frozenset({".ipynb"})),
    Format("email", "eml", frozenset({".eml"})),
    Format("email", "mbox", frozenset({".mbox", ".mbx"})),
    Format("csv", "delimited", frozenset({".csv", ".tsv", ".tab"})),
    Format("code", "python", frozenset({".py", ".pyi", ".pyw"}), language="python"),
    Format("pdf", "pdf", frozenset({".pdf"})),
    Format("html", "html", frozenset({".html", ".htm", ".xhtml"})),
    # Docling-only formats: always recognised, so that without Docling they fail with a hint.
    Format("docx", "office", frozenset({".docx"})),
    Format("pptx", "office", frozenset({".pptx"})),
    Format("xlsx", "office", frozenset({".xlsx"})),
    *_code_formats(),
    # Config files stay "code" in the language of their syntax (`lang:yaml` keeps working) but
    # are chunked by key path; registered after the code formats, so these win the extension.
    Format("code", "json", frozenset({".json"}), language="json"),
    Format("code", "yaml", frozenset({".yaml", ".yml"}), language="yaml"),
    Format("code", "toml", frozenset({".toml"}), language="toml"),
]  # fmt: skip

# Types whose chunks are the file's own lines: a read of their lines from the file is the text
# that was indexed. Every other type is converted (HTML, EPUB, office, notebooks, e-mail, PDF,
# ...): a read serves the clean text of its chunks, located by the source lines they came from.
SOURCE_LINE_TYPES = frozenset({"markdown", "text", "code", "csv"})

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
PLAIN_TEXT = _BY_EXTENSION[".txt"]


def format_for_extension(ext: str) -> Format:
    """The format kb reads files of a supported extension (`.rst`) as; KeyError for others."""
    return _BY_EXTENSION[ext.lower()]


_SHEBANG = re.compile(r"^#!\s*(?:\S*/)?(?:env\s+(?:-\S+\s+)*)?(?P<prog>[\w.+-]+)")


# Names people give a language besides kb's own, an extension or a `#!` interpreter
# (`--lang golang`, `lang:c++`): kb's name for it.
LANGUAGE_ALIASES = {
    "py": "python", "python3": "python", "py3": "python", "golang": "go",
    "c++": "cpp", "cplusplus": "cpp", "c#": "csharp", "nodejs": "javascript",
    "ecmascript": "javascript", "makefile": "make", "docker": "dockerfile",
}  # fmt: skip


def canonical_language(name: str) -> str:
    """kb's name for a programming language as a person writes it: kb's own (`javascript`),
    a common alias (`golang`, `c++`), an extension (`js`, `.yml`, `ts`) or an interpreter
    (`sh`, `node`); any other name as given, lower-cased."""
    key = name.strip().lower()
    if key in _BY_LANGUAGE:
        return key
    return (
        LANGUAGE_ALIASES.get(key)
        or CODE_LANGUAGES.get("." + key.lstrip("."))
        or SHEBANG_LANGUAGES.get(key)
        or key
    )


# Names that stand for several of kb's languages: a person's "shell" scripts are bash and zsh.
LANGUAGE_FAMILIES = {"shell": ("bash", "zsh")}


def languages_meant(name: str) -> tuple[str, ...]:
    """kb's languages a `--lang` value stands for: a family's members, else its one name."""
    key = name.strip().lower()
    return LANGUAGE_FAMILIES.get(key) or (canonical_language(key),)


def code_languages() -> set[str]:
    """Every programming language kb reads, by kb's name for it."""
    return set(_BY_LANGUAGE)


def shebang_language(head: str) -> str | None:
    match = _SHEBANG.match(head)
    if not match:
        return None
    program = match.group("prog").rstrip("0123456789.")
    return SHEBANG_LANGUAGES.get(program)


# Content sniffing: only for files whose name and extension say nothing, first bytes only.
_ZIP_MIMETYPES = {  # EPUB and ODF store their mimetype first, uncompressed, at byte 38
    b"application/epub+zip": ".epub",
    b"application/vnd.oasis.opendocument.text": ".odt",
    b"application/vnd.oasis.opendocument.spreadsheet": ".ods",
    b"application/vnd.oasis.opendocument.presentation": ".odp",
}
_MBOX_FROM = re.compile(r"From \S+ +\w{3} \w{3} +\d")
# Sniffing patterns start only where a run of their first class starts (`(?<!...)`): linear
# even when searched, on any head.
_HEADER_LINE = re.compile(r"(?<![A-Za-z0-9-])([A-Za-z][A-Za-z0-9-]*):[ \t]")
_MAIL_HEADERS = frozenset({
    "from", "to", "cc", "subject", "date", "message-id", "received", "return-path",
    "mime-version", "delivered-to", "reply-to", "in-reply-to", "x-mailer", "sender",
})  # fmt: skip
_JSON_START = re.compile(r'(?<!\s)\s*(\{\s*["}]|\[\s*([\[{"\]\d-]|true|false|null))')
_JSON_CONTAINER = re.compile(r'(?<!\s)\s*(\{\s*"|\[\s*[\[{"])')
_LATEX_START = re.compile(r"\\(documentclass|documentstyle)\b")
_ORG_START = re.compile(r"#\+(title|author|filetags|startup|options|setupfile):", re.I)
# Emacs's mode line on the first line: `# HACKING  -*- org -*-`, `-*- mode: org; -*-` (GnuPG's
# DETAILS, HACKING and TODO are Org files without the extension)
_ORG_MODE_LINE = re.compile(r"-\*-[ \t]*(?:mode:[ \t]*)?org[ \t]*(?:;[^\n]{0,200}?)?-\*-", re.I)
_HTML_START = re.compile(r"(?<!\s)\s*(<!doctype html|<html[\s>])", re.I)

MODE_LINE_CHARS = 400  # how much of a first line is searched for a mode line
_PLAIN_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9_+-]{0,11}")


def _extension_says_nothing(path: Path) -> bool:
    """No extension, or a suffix that is not one (a date, a version, a Maildir flag)."""
    return _PLAIN_EXTENSION.fullmatch(path.suffix) is None


def _head_bytes(path: Path) -> bytes:
    try:
        return read_document(path, SNIFF_BYTES)
    except OSError:
        return b""


def sniff_extension(head: bytes) -> str | None:
    """The extension a file's first bytes say it should have (".pdf", ".eml", ...), or None."""
    if head.startswith(b"%PDF-"):
        return ".pdf"
    if head.startswith(b"PK\x03\x04") and head[30:38] == b"mimetype":
        return next((ext for mime, ext in _ZIP_MIMETYPES.items() if head[38:].startswith(mime)),
                    None)
    if head.startswith(b"{\\rtf"):
        return ".rtf"
    if looks_binary(head):
        return None
    return _sniff_text(decode_bytes(head).lstrip("\ufeff"), complete=len(head) < SNIFF_BYTES)


def _sniff_text(text: str, complete: bool) -> str | None:
    if _MBOX_FROM.match(text):
        return ".mbox"
    if _is_mail_header(text):
        return ".eml"
    if _looks_like_json(text, complete):
        return ".json"
    if _HTML_START.match(text):
        return ".html"
    if sniff.declares_docbook(text):  # read as HTML is: its text is prose, not tags
        return ".html"
    body = [line for line in text.split("\n") if line.strip() and not line.startswith("%")]
    if body and _LATEX_START.match(body[0].lstrip()):
        return ".tex"
    if body and (_ORG_START.match(body[0]) or _ORG_MODE_LINE.search(body[0][:MODE_LINE_CHARS])):
        return ".org"
    return None


def _looks_like_json(text: str, complete: bool) -> bool:
    """A whole small file must parse; the head of a big one must open an object or a list
    of objects, lists or strings (`[1] Smith, J.` is a reference list, not JSON)."""
    if not _JSON_START.match(text):
        return False
    if complete:
        try:
            json.loads(text)
        except (ValueError, RecursionError):
            return False
        return True
    return _JSON_CONTAINER.match(text) is not None


def _is_mail_header(text: str) -> bool:
    """RFC 822: the file opens with header lines, two or more of them ones that mail has."""
    known = 0
    for line in text.split("\n"):
        if not line.strip():
            break
        if line[:1] in " \t":
            continue  # a folded header's continuation
        match = _HEADER_LINE.match(line)
        if not match:
            return False
        known += match.group(1).lower() in _MAIL_HEADERS
    return known >= 2


def format_for(path: Path, sniff: bool = True) -> Format | None:
    """The format of a file: by file name, then extension; when those say nothing and
    `sniff`, by its name and first bytes (the rule is `formats/sniff.py`'s)."""
    fmt = _named_format(path)
    if fmt is None and sniff:
        fmt = _unknown_format(path, _head_bytes)
    return _readable_inflated(path, fmt)


def _named_format(path: Path) -> Format | None:
    """The format the file's name or extension says; a compressed file's by the name inside."""
    name = compressed.inner_path(path)
    return _BY_FILENAME.get(name.name) or _BY_EXTENSION.get(name.suffix.lower())


# Parsers that read a file only through `reader` (so a compressed file is read inflated);
# the others (zip containers, mailboxes, Docling) open the file themselves.
_INFLATABLE = frozenset({
    "markdown", "text", "org", "asciidoc", "texinfo", "latex", "rtf", "notebook", "eml",
    "delimited", "python", "code", "pdf", "html", "json", "yaml", "toml",
})  # fmt: skip


def _readable_inflated(path: Path, fmt: Format | None, head: bytes = b"") -> Format | None:
    """A compressed file is read only by a parser that reads through `reader`, and only when
    it inflates (a broken one is of no type kb reads, not a failure). `head`: its inflated
    first bytes when already read (then it inflates: it is not inflated again to see)."""
    if fmt is None or not compressed.is_compressed(path):
        return fmt
    if fmt.parser not in _INFLATABLE:
        return None
    if head:
        return fmt
    try:
        return None if compressed.broken(path, open_user_file(path)) else fmt
    except OSError:
        return fmt  # unreadable: the parser gives the one-line reason


def _unknown_format(
    path: Path, head_of: Callable[[Path], bytes], named: bool = False
) -> Format | None:
    """A file no name or extension of the registry names: well-known names, then content
    (magic numbers, mail, JSON, LaTeX, a `#!` line, shell functions, any text). `named`: the
    user named the file, so any text is read (a hidden note, a `.key` that is really prose)."""
    name = compressed.inner_path(path)
    kind = sniff.name_kind(name)
    if kind == "bash":
        return _BY_LANGUAGE["bash"]
    if sniff.not_a_document(name) and not named:
        return None
    # a settings dotfile in a folder is read only when its content announces a format
    text_fallback = named or kind != "hidden"
    head = head_of(path)
    if not head.strip() and text_fallback and (not head or _extension_says_nothing(name)):
        # an empty `TODO` or PEP 561's zero-byte `py.typed` marker is an empty text file
        # (counted so), not a binary file of no known type
        return PLAIN_TEXT if path.is_file() else None
    return format_by_content(head, text_fallback)


def format_by_content(head: bytes, text_fallback: bool = False) -> Format | None:
    """The format that a file's first bytes announce, or None. `text_fallback`: text that
    announces nothing is bash code when it defines shell functions, else plain text."""
    extension = sniff_extension(head)
    if extension:
        return _BY_EXTENSION[extension]
    if not head.strip() or looks_binary(head) or head.startswith(sniff.POSTSCRIPT):
        return None
    text = decode_bytes(head)
    language = shebang_language(text)
    if language:
        return _BY_LANGUAGE.get(language)
    if not text_fallback:
        return None
    return _BY_LANGUAGE["bash"] if sniff.defines_shell_functions(text) else PLAIN_TEXT


UNSUPPORTED = "unsupported"  # a verdict's reason: binary, or text that is no document
# Why a file is unsupported, for the summary's count by kind (JSON `unsupported_kinds`).
BINARY = "binary"  # a program, an image, a font, an archive, a compiled catalogue
HIDDEN = "hidden"  # a tool's hidden settings file whose content announces no format
NO_DOCUMENT = "no document"  # text that is never a document: a style sheet, a drawing, a key
SECRET = "secret"  # a settings file that holds a password or token (`formats/secrets.py`)
# Languages (None: plain text) whose files are judged minified or not by their content.
_MINIFIABLE = frozenset({None, "javascript", "typescript", "json"})


@dataclass(frozen=True)
class Verdict:
    """What to do with a file: its format, and why it is left out (None: index it)."""

    format: Format | None
    left_out: str | None = None  # UNSUPPORTED, or one of `generated.REASONS`
    kind: str | None = None  # when UNSUPPORTED: BINARY, HIDDEN, NO_DOCUMENT or SECRET


def classify(
    path: Path, include_generated: bool = False, named: bool = False, root: Path | None = None
) -> Verdict:
    """The one decision for a file found in a folder or named on the command line: its format
    (name, extension, then content), or why it is left out: no format kb reads, or written by
    a tool (`formats/generated.py`) unless `include_generated`. A file the user `named` is
    read whenever it is text (hidden, a style sheet, generated), never when it is binary.
    `root`: the folder the person added it from (only folders below it say "vendored")."""
    heads: dict[Path, bytes] = {}

    def head_of(file: Path) -> bytes:
        if file not in heads:
            heads[file] = _head_bytes(file)
        return heads[file]

    fmt = _named_format(path) or _unknown_format(path, head_of, named)
    # one inflated head serves every look at a compressed file (sniff, broken, minified)
    compressed_head = head_of(path) if fmt and compressed.is_compressed(path) else b""
    fmt = _readable_inflated(path, fmt, compressed_head)
    if fmt is None:
        return Verdict(None, UNSUPPORTED, _unsupported_kind(path, named))
    if not named and secrets.is_settings_file(path) and _holds_secret(path):
        return Verdict(None, UNSUPPORTED, SECRET)  # whatever --include-generated says
    if include_generated or named:
        return Verdict(fmt)
    inner = compressed.inner_path(path)
    reason = generated.reason_by_name(inner) or generated.translation_catalog(inner)
    if reason is None and fmt.doc_type in ("code", "text") and fmt.language in _MINIFIABLE:
        dump = generated.is_minified(head_of(path), data=fmt.language == "json")
        reason = generated.MINIFIED if dump else None
    if reason is None and fmt.doc_type in ("html", "text") and _redirect_stub(path, fmt, head_of):
        reason = generated.REDIRECT
    if reason is None and fmt.doc_type == "html" and inner.name.lower() == generated.PRINT_COPY:
        reason = generated.BUILD_ASSET if generated.is_print_copy(inner, head_of(path)) else None
    if reason is None and fmt.doc_type == "text" and generated.is_compiled_lock(head_of(path)):
        reason = generated.LOCK_FILE
    if reason is None and fmt.doc_type == "text" and generated.is_log_text(head_of(path)):
        reason = generated.LOG
    if reason is None and fmt.doc_type == "code" and _vendored(path, head_of, root):
        reason = generated.VENDORED
    if reason is None and fmt.doc_type == "code" and _data_table(path, fmt):
        reason = generated.DATA_TABLE
    return Verdict(fmt, reason)


# Data files are tables of literals by nature: a JSON fixture is read as its keys and values.
_DATA_LANGUAGES = frozenset({"json", "yaml", "toml", "ini", "xml"})


def _data_table(path: Path, fmt: Format) -> bool:
    """Source code that is a tool's table of literals (`generated.is_data_table`); a compressed
    file is not judged (its size says nothing of its text)."""
    if fmt.language in _DATA_LANGUAGES or compressed.is_compressed(path):
        return False
    return generated.is_data_table(path)


def _redirect_stub(path: Path, fmt: Format, head_of: Callable[[Path], bytes]) -> bool:
    """An HTML page, or a reST source, that sends the reader on (`generated.is_redirect_page`,
    `is_rst_redirect`). Only a small file can be a stub: a bigger one is judged by its size
    alone (no read)."""
    try:
        if path.stat().st_size >= SNIFF_BYTES:
            return False
    except OSError:
        return False
    head = head_of(path)
    whole = len(head) < SNIFF_BYTES
    if fmt.doc_type == "html":
        return generated.is_redirect_page(head, whole)
    return generated.is_rst_redirect(head, whole)


def _holds_secret(path: Path) -> bool:
    if secrets.is_credential_store(path):
        return True
    try:
        return secrets.holds_secret(decode_bytes(read_document(path, secrets.SCAN_BYTES)))
    except OSError:
        return False  # unreadable: the parser gives the one-line reason


def _vendored(path: Path, head_of: Callable[[Path], bytes], root: Path | None) -> bool:
    inner = compressed.inner_path(path)
    if generated.in_vendor_folder(inner, root):
        return True
    return generated.is_vendored_script(inner, lambda: head_of(path))


def _unsupported_kind(path: Path, named: bool) -> str:
    name = compressed.inner_path(path)
    if named:
        return BINARY  # a named file is read whenever it is text
    if sniff.not_a_document(name):
        return NO_DOCUMENT
    return HIDDEN if sniff.name_kind(name) == "hidden" else BINARY


def language_for(path: Path) -> str | None:
    """The programming language of a code file by its name or extension."""
    fmt = _named_format(path)
    return fmt.language if fmt else None


def detect_type(path: Path, sniff: bool = True) -> str | None:
    """doc_type for a path (markdown | text | code | pdf | html | docx | email | ...), or None."""
    fmt = format_for(path, sniff)
    return fmt.doc_type if fmt else None
