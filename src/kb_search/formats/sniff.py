"""Files whose name says nothing about their format: which of them are text kb should read.

The rule (docs/formats.md, "Files without a known extension"):

1. Shell startup files (`bashrc`, `.bashrc`, `.profile`...) are bash code; a person's own
   settings files (`.gitconfig`, `.inputrc`, `.vimrc`, `.tmux.conf`...) are read as text.
2. Other hidden files (`.coveragerc`, `.gitignore`) are tool settings, not documents: read
   only when their content announces a format (below), as ripgrep leaves hidden files out.
3. Extensions that are text but never a document (style sheets, SVG drawings, keys and
   certificates) are left out.
4. Anything else is read by its first bytes: a format that announces itself (PDF, EPUB/ODF,
   RTF, mail, JSON, HTML, LaTeX, Org, a `#!` line) as that; other text (not binary, in any
   encoding `reader` decodes) as bash code when it defines shell functions (a function file
   has no `#!` line), else as plain text: README, LICENSE, NOTICE, PKG-INFO, MANIFEST.in...
"""

from __future__ import annotations

import re
from pathlib import Path

# Shell startup files, with or without their leading dot (Debian ships `startup-files/bashrc`).
SHELL_NAMES = frozenset({
    "bashrc", "bash_profile", "bash_login", "bash_logout", "bash_aliases", "profile",
    "zshrc", "zprofile", "zshenv", "zlogin", "kshrc", "mkshrc",
})  # fmt: skip
# A person's own settings, kept in a dotfiles folder: searched for the alias, key binding or
# option they hold (never ones that hold secrets: `.netrc`, `.pgpass`, `.pypirc`, `.npmrc`).
PERSONAL_DOTFILES = frozenset({
    ".gitconfig", ".inputrc", ".vimrc", ".gvimrc", ".exrc", ".tmux.conf", ".screenrc",
    ".nanorc", ".xresources", ".xdefaults", ".muttrc", ".gdbinit", ".psqlrc", ".sqliterc",
    ".wgetrc", ".curlrc", ".editrc", ".hgrc", ".lesskey", ".mailcap", ".dir_colors",
})  # fmt: skip
# X session files are shell scripts.
SHELL_DOTFILES = frozenset({".xinitrc", ".xsession", ".xprofile", ".xsessionrc"})
# Text, but never a document a person searches: left out even though they read as text.
NOT_DOCUMENT_EXTENSIONS = frozenset({
    ".css", ".scss", ".sass", ".less", ".svg", ".pem", ".crt", ".cer", ".csr", ".key", ".pub",
    ".asc", ".sig", ".gpg", ".p7s", ".srl", ".ps", ".eps",
})  # fmt: skip
# PostScript is a program that draws pages: its text is drawing commands, not the document's.
POSTSCRIPT = b"%!PS"

# `name() {`, `name() (`, `function name {`, `function name() {`; never `function name(x, y)`:
# awk's function with its parameters (lsof's and mawk's example scripts) is no shell's.
_SHELL_FUNCTION = re.compile(
    r"^(?:function\s+[\w.:-]+(?:\s*\(\s*\)\s*(?:\{|\(|$)|\s*(?:\{|$))"
    r"|[A-Za-z_][\w.:-]*\s*\(\s*\)\s*(?:\{|\(|$))",
    re.M,
)


def name_kind(path: Path) -> str | None:
    """"bash" for a shell startup file; "personal" for a person's own settings file (read as
    text); "hidden" for another dotfile; else None."""
    name = path.name
    if name.lstrip(".").lower() in SHELL_NAMES or name.lower() in SHELL_DOTFILES:
        return "bash"
    if name.lower() in PERSONAL_DOTFILES:
        return "personal"
    if name.startswith("."):
        return "hidden"
    return None


# DocBook XML (a manual's source, often shipped beside its HTML and PDF): DocBook 4's public
# identifier or DocBook 5's namespace, in the prolog before the root element's content.
_DOCBOOK = re.compile(r"-//OASIS//DTD DocBook|xmlns=[\"']http://docbook\.org/ns/docbook", re.I)
DOCBOOK_PROLOG_CHARS = 2048


def declares_docbook(text: str) -> bool:
    """Whether the text is DocBook XML: markup whose prolog names DocBook."""
    return text.lstrip().startswith("<") and bool(_DOCBOOK.search(text, 0, DOCBOOK_PROLOG_CHARS))


def not_a_document(path: Path) -> bool:
    """Text that is no document (a style sheet, a drawing, a key): never indexed."""
    return path.suffix.lower() in NOT_DOCUMENT_EXTENSIONS


def defines_shell_functions(text: str) -> bool:
    """A shell function file (sourced, so without `#!`): a line opens with `name() {` or
    `function name`, and no line looks like C (`;` ending most lines, `#include`)."""
    if "#include" in text or text.startswith("#!") or not _SHELL_FUNCTION.search(text):
        return False  # a `#!` here names a program no shell is (awk, perl): kb reads it as text
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    statements = sum(1 for line in lines if line.endswith(";"))
    return statements * 2 < len(lines)
