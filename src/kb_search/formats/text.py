"""Plain text and reStructuredText notes (sections and chunking rules: `chunking/units.py`)."""

from __future__ import annotations

import re
from pathlib import Path

from kb_search.chunking.tokens import TokenCounter, count_tokens
from kb_search.chunking.units import Section, chunk_sections
from kb_search.formats.asciidoc import looks_like_asciidoc, parse_asciidoc
from kb_search.formats.registry import Source
from kb_search.parsed import ChunkSettings, ParsedDocument

MAX_TITLE_CHARS = 100
_RST_ADORNMENT = re.compile(r"^([=\-`:'\"~^_*+#<>.])\1{2,}\s*$")


def parse_text(
    text: str, path: Path, settings: ChunkSettings, count: TokenCounter = count_tokens
) -> ParsedDocument:
    """Whole note as one chunk when it fits, else paragraph windows (RST: per section)."""
    lines = text.split("\n")
    is_rst = _is_rst(path)
    sections = rst_sections(lines) if is_rst else [Section((), 0, 0, len(lines))]
    cut = chunk_sections(lines, sections, settings, count)
    return ParsedDocument(
        title=_text_title(lines, path),
        doc_type="text",
        chunks=cut.chunks,
        metadata={"format": "rst"} if is_rst else {},
        notes=cut.notes,
    )


def _is_rst(path: Path) -> bool:
    """reStructuredText by its name: `.rst`, or Sphinx's copy of a source, `.rst.txt`."""
    name = path.name.lower()
    return name.endswith(".rst") or name.endswith(".rst.txt")


def rst_sections(lines: list[str]) -> list[Section]:
    """Sections of a reStructuredText file; heading levels follow adornment order of first use."""
    styles: list[tuple[str, str]] = []
    chain: list[str] = []
    sections = [Section((), 0, 0, len(lines))]
    for title_index, style, first in _rst_headings(lines):
        if style not in styles:
            styles.append(style)
        level = styles.index(style) + 1
        title = lines[title_index].strip()
        chain = chain[: level - 1] + [title[:MAX_TITLE_CHARS]]
        sections[-1].end = first
        # The heading is its title and adornment lines; the first body line follows them.
        sections.append(Section(tuple(chain), level, first, len(lines), title, title_index + 2))
    return [s for s in sections if s.end > s.start]


def _rst_headings(lines: list[str]) -> list[tuple[int, tuple[str, str], int]]:
    """(title line index, adornment style, first line index of the heading)."""
    found = []
    for index in range(1, len(lines)):
        match = _RST_ADORNMENT.match(lines[index])
        title = lines[index - 1]
        if not match or not title.strip() or _RST_ADORNMENT.match(title):
            continue
        if len(lines[index].rstrip()) < len(title.rstrip()):
            continue
        over = index >= 2 and lines[index - 2].rstrip() == lines[index].rstrip()
        style = ("over" if over else "under", match.group(1))
        found.append((index - 1, style, index - 2 if over else index - 1))
    return found


# Package metadata (PKG-INFO and METADATA of Python packages, Debian control files, R
# DESCRIPTION files): RFC 822 header lines, named by the package and what it is for.
_FIELD = re.compile(r"(?<![A-Za-z0-9-])([A-Za-z][A-Za-z0-9-]*):[ \t]*(.*)")  # linear searched too
_NAME_FIELDS = ("name", "package", "source")
_SUMMARY_FIELDS = ("summary", "title", "description")
MAX_HEADER_LINES = 200


def _metadata_title(lines: list[str]) -> str | None:
    """"click 8.5.1: Composable command line interface toolkit" for a file that opens with
    header lines naming a package and what it is for; None for any other text."""
    fields: dict[str, str] = {}
    for line in lines[:MAX_HEADER_LINES]:
        if not line.strip():
            break
        if line[:1] in " \t":
            continue  # a folded field's continuation
        match = _FIELD.fullmatch(line.rstrip())
        if match is None:
            return None
        fields.setdefault(match.group(1).lower(), match.group(2).strip())
    name = next((fields[key] for key in _NAME_FIELDS if fields.get(key)), "")
    summary = next((fields[key] for key in _SUMMARY_FIELDS if fields.get(key)), "")
    if not name or not summary or len(fields) < 3:
        return None
    version = fields.get("version", "")
    title = f"{name} {version}".strip() + f": {summary}"
    if len(title) <= MAX_TITLE_CHARS:
        return title
    return title[: MAX_TITLE_CHARS - 1].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"


# Header fields of a note kept as mail (git's howto files: From, Date, Subject, Abstract...)
_NOTE_FIELDS = frozenset({
    "from", "date", "subject", "to", "cc", "message-id", "content-type", "mime-version",
    "abstract", "author", "reply-to", "in-reply-to",
})  # fmt: skip
_ASCIIDOC_TITLE = re.compile(r"={1,5}[ \t]+")


def _after_headers(lines: list[str]) -> int:
    """The line after a mail-like header block that opens the file (two or more fields a
    mail or a note's header has, or a `Content-type`, then a blank line), or 0: the text's
    own title follows it."""
    known = 0
    for index, line in enumerate(lines[:MAX_HEADER_LINES]):
        if not line.strip():
            return index + 1 if known >= 2 else 0
        if line[:1] in " \t":
            continue  # a folded field's continuation
        match = _FIELD.fullmatch(line.rstrip())
        if match is None:
            return 0
        name = match.group(1).lower()
        known += 2 if name == "content-type" else name in _NOTE_FIELDS
    return 0


# Debian's machine-readable copyright file (DEP-5) opens with `Format: <the spec's URL>`: that
# line names no package, so every `/usr/share/doc/*/copyright` had the same title.
_COPYRIGHT_FORMAT = re.compile(r"Format:\s*\S*copyright-format\S*", re.I)
_UPSTREAM_NAME = re.compile(r"Upstream-Name:[ \t]*(\S.*)", re.I)


def _copyright_title(lines: list[str], path: Path) -> str | None:
    """"apt: copyright and licences" for a DEP-5 copyright file, by its `Upstream-Name`, else
    the folder it lies in when that is a package's (`/usr/share/doc/apt/copyright`)."""
    if not lines or not _COPYRIGHT_FORMAT.fullmatch(lines[0].strip()):
        return None
    name = path.parent.name if path.name == "copyright" else ""
    for line in lines[1:MAX_HEADER_LINES]:
        if not line.strip():
            break  # the header paragraph ends
        if match := _UPSTREAM_NAME.fullmatch(line.rstrip()):
            name = match.group(1).strip()
            break
    return f"{name[: MAX_TITLE_CHARS - 30]}: copyright and licences" if name else None


# The first line of a change log is its newest entry's header: a date, two spaces and an
# author with a mail address (GNU's `2022-10-10  Werner Koch  <wk@gnupg.org>`, an older
# `Fri Apr  7 15:14:43 PDT 2017  Phil Nelson <p@x.org>`), a `git log` dump's `commit <hash>`,
# or a release alone or with its date (libjpeg's `2.1.5`, pip's `23.0.1 (2023-02-17)`,
# `v2.1.0 - 2024-05-01`); it names no topic.
_ENTRY_HEADER = re.compile(
    r"(?:\d{4}-\d\d-\d\d|(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)\b[^<>]{8,40}?\d{4})"
    r"[ \t]{2,}[^<>@]+(?:<[^<>@\s]+@[^<>\s]+>|[^<>@\s]+@[^<>@\s]+)"
    r"|commit [0-9a-f]{40}"
    r"|\d{4}-\d\d-\d\d[ \t]{2,}[A-Z][\w.'-]{0,40}(?: [A-Z][\w.'-]{0,40}){0,3}"  # no mail
    r"|v?\d{1,4}(?:\.\d{1,6}){1,4}(?:[\w.+-]{0,20}[ \t]+"
    r"(?:\(\d{4}-\d\d-\d\d\)|[-/][ \t]+\d{4}-\d\d-\d\d))?"
)
# A Debian change log's newest entry: `lsof (4.95.0-1) unstable; urgency=low` (688 packages'
# `changelog.Debian.gz` and `NEWS.Debian.gz` on one machine): named by the package and file.
_DEBIAN_ENTRY = re.compile(
    r"([a-z0-9][a-z0-9.+-]{0,80}) \([^()\s]{1,80}\) [^;\n]{1,200}; urgency=\w+.*"
)


def _log_title(path: Path) -> str:
    """"gnupg changelog": the folder a change log lies in names what it logs."""
    folder = path.parent.name
    return f"{folder} {path.stem}" if folder else path.stem


_MARKUP_PROLOG = ("<?", "<!")  # an XML declaration, a doctype, a comment
# Emacs's file variables (`-*- org -*-`) and a version-control keyword (`$Id$`) name no topic.
_EMACS_MODELINE = re.compile(r"-\*-[^\n]{0,200}?-\*-")
_RCS_KEYWORD = re.compile(r"\$(Id|Header|Revision|Date|Author|Source|Log)(:[^$]*)?\$")
_WORDLESS = re.compile(r"[\W_]*")  # `/*`, `#`, `*/`: a line with no letter or digit
_RST_FIELD = re.compile(r":[\w -]{1,40}:(?:[ \t].*)?")
# Windows command scripts (Sphinx's `make.bat` in every project, titled `@ECHO OFF`)
_SCRIPT_SUFFIXES = frozenset({".bat", ".cmd"})


def _text_title(lines: list[str], path: Path) -> str:
    """Package metadata by its name and summary; a script (`#!`, `.bat`) or a dotfile by its
    file name; else the first line of text, past a mail-like header block, RST directives,
    fields and comments (`.. module:: x` and their indented options, `:orphan:`), heading
    adornments and lines without a word, and without AsciiDoc's `= ` title marker, Emacs's
    `-*- mode -*-` or a `$Id$` keyword."""
    if title := _metadata_title(lines) or _copyright_title(lines, path):
        return title
    if (lines and lines[0].startswith("#!")) or path.suffix.lower() in _SCRIPT_SUFFIXES:
        return path.name  # a script kb has no parser for (Perl, awk, a batch file): as code is
    if path.name.startswith("."):
        return path.name  # a settings dotfile (`.vimrc`: not its first setting, `set number`)
    in_directive = False
    rst = _is_rst(path)
    for line in lines[_after_headers(lines) :]:
        stripped = _RCS_KEYWORD.sub("", _EMACS_MODELINE.sub(" ", line)).strip()
        if stripped.startswith(".. ") or stripped == "..":
            in_directive = True
            continue
        if rst and _RST_FIELD.fullmatch(stripped):
            continue  # the document's fields (`:orphan:`, `:tocdepth: 2`) precede its title
        if in_directive and (not stripped or line[:1] in " \t"):
            continue
        in_directive = False
        if not stripped or _RST_ADORNMENT.match(stripped) or stripped.startswith(_MARKUP_PROLOG):
            continue
        if _WORDLESS.fullmatch(stripped):
            continue
        if stripped.startswith("<") and stripped.endswith(">"):
            return path.stem  # markup read as text (an XML file): its tags are no title
        if len(stripped) < 2 * MAX_TITLE_CHARS and _ENTRY_HEADER.fullmatch(stripped):
            return _log_title(path)
        if len(stripped) < 2 * MAX_TITLE_CHARS and (debian := _DEBIAN_ENTRY.fullmatch(stripped)):
            return f"{debian.group(1)} {path.name}"  # "lsof changelog.Debian"
        title = _ASCIIDOC_TITLE.sub("", stripped, count=1) if stripped.startswith("=") else stripped
        # a line ending in "::" labels what follows (an AsciiDoc list term, a reST literal)
        named = len(title) < MAX_TITLE_CHARS and not title.endswith("::")
        return title if named else path.stem
    return path.stem


def parse_text_source(source: Source) -> ParsedDocument:
    """A text file; one written in AsciiDoc (git's `.txt` manual pages) is read as AsciiDoc
    (sections, listings, no markup) and stays of type text."""
    text = source.text()
    txt = source.name.suffix.lower() == ".txt"
    if txt and not _is_rst(source.name) and looks_like_asciidoc(text):
        document = parse_asciidoc(source)
        document.doc_type = "text"
        document.metadata = {**document.metadata, "format": "asciidoc"}
        return document
    return parse_text(without_terminal_codes(text), source.name, source.settings, source.count)


# What a program wrote for a terminal (grotty's manual saved as text, `man-db-manual.txt`; a
# coloured log): escape sequences (`ESC[1m` bold, `ESC]...BEL` a window title) and overstrikes
# (`_^HX` underlined, `X^HX` bold, `+^Ho` a bullet) draw, they are no text. Kept, they glued
# `[4mWilford` into one word that a search for the name did not find. Columns move, lines do
# not: citations stay right.
_ESCAPE = re.compile(
    r"\x1b(?:\][^\x07\x1b\n]{0,512}(?:\x07|\x1b\\)?"  # a command to the terminal (OSC)
    r"|\[[0-?]*[ -/]*[@-~]"  # a control sequence (CSI): colours, bold, cursor moves
    r"|[@-Z\\-_])"  # any other escape
)
_OVERSTRIKE = re.compile(r"[^\n\x08]\x08")


def without_terminal_codes(text: str) -> str:
    """`text` less the terminal's escape sequences and overstrikes."""
    if "\x1b" not in text and "\x08" not in text:
        return text
    return _OVERSTRIKE.sub("", _ESCAPE.sub("", text))
