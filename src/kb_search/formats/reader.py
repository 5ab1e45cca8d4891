"""Read a text file into a normalised str, or raise IngestError with a one-line reason."""

from __future__ import annotations

import codecs
import os
from pathlib import Path
from typing import BinaryIO

from kb_search.formats import compressed
from kb_search.parsed import EmptyFile, IngestError, ParsedDocument
from kb_search.regular import open_regular
from kb_search.sanitize import valid_text

SNIFF_BYTES = 8192
_ALLOWED_CONTROL = {0x08, 0x09, 0x0A, 0x0C, 0x0D, 0x1B}
_MAX_CONTROL_RATIO = 0.10
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def read_text_file(path: Path | str, max_bytes: int = 20_000_000) -> str:
    """Return the file's text with newlines normalised to \\n."""
    path = Path(path)
    data = _read_bytes(path, max_bytes)
    if looks_binary(data[:SNIFF_BYTES]):
        raise IngestError("binary file (not text)")
    text = decode_bytes(data)
    if not text.strip():
        raise EmptyFile("empty file")
    return text


def looks_binary(head: bytes) -> bool:
    """NUL bytes or many control characters in the first bytes mean binary (UTF-16 excepted)."""
    if not head or head.startswith(_UTF16_BOMS) or utf16_without_bom(head):
        return False
    if b"\x00" in head:
        return True
    control = sum(1 for b in head if b < 0x20 and b not in _ALLOWED_CONTROL)
    return control / len(head) > _MAX_CONTROL_RATIO


def decode_bytes(data: bytes) -> str:
    """UTF-8 (BOM stripped), UTF-32/UTF-16 with BOM, else cp1252, else latin-1; never fails."""
    if data.startswith(codecs.BOM_UTF8):
        text = data.decode("utf-8-sig", errors="replace")
    elif data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        text = data.decode("utf-32", errors="replace")
    elif data.startswith(_UTF16_BOMS):
        text = data.decode("utf-16", errors="replace")
    elif encoding := utf16_without_bom(data[:SNIFF_BYTES]):
        text = data.decode(encoding, errors="replace")
    else:
        text = _decode_legacy(data)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def utf16_without_bom(head: bytes) -> str | None:
    """"utf-16-le"/"utf-16-be" for text that is mostly ASCII written as UTF-16 without a BOM
    (every other byte NUL, the others printable), which would otherwise pass for binary."""
    if len(head) < 8:
        return None
    even, odd = head[0::2], head[1::2]
    for zeros, chars, encoding in ((odd, even, "utf-16-le"), (even, odd, "utf-16-be")):
        if zeros.count(0) < 0.7 * len(zeros):
            continue
        printable = sum(1 for b in chars if 0x20 <= b < 0x7F or b in (9, 10, 13))
        if printable >= 0.9 * len(chars):
            return encoding
    return None


def _decode_legacy(data: bytes) -> str:
    for encoding in ("utf-8", "cp1252"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


def _read_bytes(path: Path, max_bytes: int) -> bytes:
    try:
        if compressed.is_compressed(path):  # inflated in memory, where it is read anyway
            return compressed.inflated(open_user_file(path), path, max_bytes)
        with open_user_file(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > max_bytes:
                raise IngestError(
                    f"file too large: {_mb(size)} > cap {_mb(max_bytes, exact=True)}"
                )
            return handle.read(max_bytes + 1)
    except FileNotFoundError as exc:
        raise IngestError(f"file not found: {path}") from exc
    except PermissionError as exc:
        raise IngestError(f"permission denied: {path}") from exc
    except OSError as exc:
        raise IngestError(f"cannot read file: {exc.strerror or exc}") from exc


def open_user_file(path: Path | str) -> BinaryIO:
    """A file found by the walk, opened to be read: a regular file only (a FIFO or device
    swapped in since would block the read), and never a symlink (the walk resolved every
    path it found, so a link there now was put in after it). OSError otherwise."""
    return open_regular(path, follow_symlinks=False)


def read_user_file(path: Path | str, limit: int | None = None) -> bytes:
    """The bytes of a file found by the walk (at most `limit`), as `open_user_file` opens it."""
    with open_user_file(path) as handle:
        return handle.read() if limit is None else handle.read(limit)


def open_document(path: Path | str, limit: int = compressed.INFLATE_LIMIT) -> BinaryIO:
    """The document a parser reads: the file as `open_user_file` opens it, or for a compressed
    one (`README.gz`) the file inside, inflated up to `limit` bytes (`formats/compressed.py`)."""
    path = Path(path)
    handle = open_user_file(path)
    return compressed.inflate(handle, path, limit) if compressed.is_compressed(path) else handle


def read_document(path: Path | str, limit: int | None = None) -> bytes:
    """The bytes of the document `open_document` opens (the first `limit` of them)."""
    path = Path(path)
    if compressed.is_compressed(path):
        handle = open_user_file(path)
        if limit is None:
            return compressed.inflated(handle, path)
        return compressed.inflated_head(handle, path, limit)
    with open_document(path) as handle:
        return handle.read() if limit is None else handle.read(limit)


def _mb(size: int, exact: bool = False) -> str:
    megabytes = size / 1_000_000
    return f"{megabytes:g} MB" if exact else f"{megabytes:.1f} MB"


# Lone surrogates (from broken PDFs, JSON "\\ud800" escapes, ...) become U+FFFD: SQLite and
# the tokenizer both need valid UTF-8.
scrub = valid_text


def scrub_document(document: ParsedDocument) -> ParsedDocument:
    """The same document with every stored string valid UTF-8."""
    document.title = scrub(document.title)
    document.tags = [scrub(t) for t in document.tags]
    for chunk in document.chunks:
        chunk.text = scrub(chunk.text)
        chunk.heading = scrub(chunk.heading) if chunk.heading else chunk.heading
        chunk.symbol = scrub(chunk.symbol) if chunk.symbol else chunk.symbol
    document.metadata = {
        k: scrub(v) if isinstance(v, str) else v for k, v in document.metadata.items()
    }
    return document
