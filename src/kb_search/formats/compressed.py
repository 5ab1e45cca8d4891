"""Documents stored compressed (`README.gz`, `changelog.Debian.gz`, `manual.html.gz`,
`notes.md.bz2`, `paper.pdf.xz`): read as the file inside, named by the name without the suffix.

Debian and many Unix trees keep their documentation gzipped. A compressed file is no
promise about its size: it is inflated into an anonymous temp file through the decompressor,
at most `INFLATE_LIMIT` bytes (or the caller's cap), so a bomb costs that much and no more.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

INFLATE_LIMIT = 200_000_000
# Compressed bytes a sniff reads: output is capped by its size, but a stream can consume input
# without giving any (a gzip name field without its NUL, empty members), so the input is too.
HEAD_INPUT = 1 << 20
_STEP = 1 << 20
# Each opens a decompressing stream over a handle; callers close it with a `with`.
_OPENERS: dict[str, Callable[[BinaryIO], BinaryIO]] = {
    ".gz": lambda handle: gzip.GzipFile(fileobj=handle, mode="rb"),
    ".bz2": lambda handle: bz2.BZ2File(handle, mode="rb"),
    ".xz": lambda handle: lzma.LZMAFile(handle, mode="rb"),  # noqa: SIM115
}
# The suffixes of the compressions kb reads through (`notes.rst.gz` is read as `notes.rst`).
SUFFIXES = tuple(_OPENERS)
_BROKEN = (EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile, ValueError)


class BadCompressedFile(OSError):
    """Not a readable compressed stream, or one that inflates past the limit."""


def is_compressed(path: Path) -> bool:
    return path.suffix.lower() in _OPENERS


def inner_path(path: Path) -> Path:
    """The name the file has inside its compression: `README.gz` -> `README`."""
    return path.with_suffix("") if is_compressed(path) else path


def _inflated_steps(handle: BinaryIO, path: Path, limit: int) -> Iterator[bytes]:
    """The inflated content of `handle` a step at a time; `handle` is closed at the end.
    BadCompressedFile when it is broken or holds more than `limit` bytes."""
    try:
        with handle, _OPENERS[path.suffix.lower()](handle) as stream:
            written = 0
            while chunk := stream.read(_STEP):
                written += len(chunk)
                if written > limit:
                    raise BadCompressedFile(
                        f"compressed file inflates to more than {limit / 1e6:g} MB"
                    )
                yield chunk
    except _BROKEN as exc:
        raise BadCompressedFile(f"broken compressed file ({exc})") from exc


def inflate(handle: BinaryIO, path: Path, limit: int = INFLATE_LIMIT) -> BinaryIO:
    """The inflated content of `handle` (a compressed file) in a temp file, rewound, for
    parsers that seek; `handle` is closed. BadCompressedFile as `_inflated_steps`."""
    out = tempfile.TemporaryFile()  # noqa: SIM115 - returned open, the caller closes it
    try:
        for chunk in _inflated_steps(handle, path, limit):
            out.write(chunk)
        out.seek(0)
        return out  # type: ignore[return-value]
    except BaseException:
        out.close()
        raise


def inflated(handle: BinaryIO, path: Path, limit: int = INFLATE_LIMIT) -> bytes:
    """The inflated content of `handle` in memory (a text document is read whole anyway);
    `handle` is closed. BadCompressedFile as `_inflated_steps`."""
    return b"".join(_inflated_steps(handle, path, limit))


def inflated_head(handle: BinaryIO, path: Path, size: int) -> bytes:
    """The first `size` inflated bytes, from at most HEAD_INPUT compressed ones; `handle` is
    closed. BadCompressedFile when they do not inflate."""
    with handle:
        data = handle.read(HEAD_INPUT)
    out = b""
    try:
        with _OPENERS[path.suffix.lower()](io.BytesIO(data)) as stream:  # type: ignore[arg-type]
            while len(out) < size and (chunk := stream.read(size - len(out))):
                out += chunk
    except EOFError as exc:
        if not out and len(data) < HEAD_INPUT:  # the whole file, and it ends before any text
            raise BadCompressedFile("broken compressed file (truncated)") from exc
        # else the prefix ends mid-stream: what came out of it is the head
    except (*_BROKEN, OSError) as exc:  # in memory: an OSError is bz2's "Invalid data stream"
        raise BadCompressedFile(f"broken compressed file ({exc})") from exc
    return out


def broken(path: Path, handle: BinaryIO) -> bool:
    """Whether a compressed file does not inflate (a truncated download, a wrong suffix);
    `handle` is closed."""
    try:
        inflated_head(handle, path, 1)
    except BadCompressedFile:
        return True
    return False
