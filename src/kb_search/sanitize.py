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
_CONTROL = re.compile(r"[\x00-\x1f\x7f\\]")
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
    text = valid_text(text)
    return _CONTROL.sub(lambda m: _ESCAPES.get(m.group(0), f"\\x{ord(m.group(0)):02x}"), text)


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
