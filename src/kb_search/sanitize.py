"""Text made valid once at every boundary: arguments, file names, log lines, ids.

SQLite, the tokenizer and JSON all need valid UTF-8; a Python str from a broken file, an
undecodable file name (os.fsdecode's surrogateescape) or a JSON "\\ud800" escape may hold
lone surrogates. Everything that enters from outside passes through here once.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import PurePath

from kb_search.errors import UserInputError

SQLITE_MAX_INT = 2**63 - 1
_SURROGATE = re.compile("[\ud800-\udfff]")
# C0, DEL and C1: a terminal acts on them (ESC starts colours, titles, hyperlinks, screen
# clears; U+009B is CSI on its own); a log line or a table cell must not. The bidirectional
# embeddings, overrides and isolates (U+202A-E, U+2066-9) reorder what follows them: a name
# like "invoice<U+202E>fdp.exe" shows as "invoiceexe.pdf" (the "Trojan Source" characters).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\\\u202a-\u202e\u2066-\u2069]")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def json_text(data: object) -> str:
    """kb's JSON output: compact (agents pay per token), UTF-8 as it is, always valid."""
    return valid_text(json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str))


def valid_text(text: str) -> str:
    """Lone surrogates replaced with U+FFFD (in a Python str every surrogate is a lone one)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)


def path_text(path: PurePath | str) -> str:
    """A path as valid text that is the same for the same file every time: bytes that are
    not UTF-8 (kept by os.fsdecode as surrogates) become `\\xNN`. Used as the stored key and
    shown in citations; the file itself is always opened through its real name."""
    text = os.fspath(path)
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", errors="backslashreplace")


def log_field(text: str) -> str:
    """One field of a one-line log entry: newlines, tabs, control characters and backslashes
    escaped, so a crafted file name can neither split an entry nor forge one."""
    return escape_controls(text, backslashes=True)


def printable(text: object, keep: str = "") -> str:
    """Text from outside (file names, content, messages) as a terminal may show it: control
    characters escaped as in the error log (ESC is `\\x1b`), so none of them acts on the
    terminal; `keep` names the ones layout needs ("\\n\\t" for a block of text)."""
    return escape_controls(str(text), keep=keep)


def escape_controls(text: str, keep: str = "", backslashes: bool = False) -> str:
    """`text`, valid, with C0/DEL/C1 control characters (except those in `keep`) written as
    `\\n`, `\\t`, `\\r` or `\\xNN` and bidirectional overrides as `\\uNNNN`; backslashes
    doubled too when asked (a log entry that must read back unambiguously)."""
    text = valid_text(text)

    def escaped(match: re.Match[str]) -> str:
        char = match.group(0)
        if char in keep or (char == "\\" and not backslashes):
            return char
        code = ord(char)
        return _ESCAPES.get(char, f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")

    return _CONTROL.sub(escaped, text)


def parse_id(value: str | int, what: str = "id") -> int:
    """A document or chunk id: ASCII decimal digits within SQLite's integer range."""
    text = str(value).strip()
    if not (text.isascii() and text.isdigit()):
        raise UserInputError(f"{what} must be a number like 42, not {_shown(text)}")
    if len(text.lstrip("0")) > 19 or int(text) > SQLITE_MAX_INT:
        raise UserInputError(f"no {what} {_shown(text)}: ids are at most {SQLITE_MAX_INT}")
    return int(text)


def _shown(text: str) -> str:
    text = valid_text(text)
    return repr(text if len(text) <= 40 else text[:37] + "...")
