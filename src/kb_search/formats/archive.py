"""Reading members of zip-based documents (EPUB, ODF) without trusting the archive.

A zip bomb declares small sizes and inflates to gigabytes: members are read through the
decompressor with a budget for the whole archive, so a hostile file costs at most the budget.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from types import TracebackType
from xml.etree import ElementTree

from kb_search.formats.reader import open_user_file
from kb_search.parsed import IngestError

# Uncompressed bytes read from one archive, as a multiple of the file-size cap.
EXPANSION_FACTOR = 10
MAX_MEMBERS = 20_000
_READ_STEP = 1 << 20


class SafeZip:
    """A zip archive whose members are read under one uncompressed-size budget."""

    def __init__(self, path: Path, max_bytes: int, kind: str) -> None:
        self.kind = kind
        self.budget = max_bytes * EXPANSION_FACTOR
        self.cap = self.budget
        try:
            self.handle = open_user_file(path)
        except OSError as exc:
            raise IngestError(f"cannot read file: {exc.strerror or exc}") from exc
        try:
            self.archive = self._open(max_bytes)
        except BaseException:
            self.handle.close()
            raise
        if len(self.archive.infolist()) > MAX_MEMBERS:
            self.close()
            raise IngestError(f"broken {kind} file: more than {MAX_MEMBERS} archive members")
        self.names = set(self.archive.namelist())

    def _open(self, max_bytes: int) -> zipfile.ZipFile:
        kind = self.kind
        try:
            size = os.fstat(self.handle.fileno()).st_size
            if size > max_bytes:
                too_large = f"{size / 1e6:.1f} MB > cap {max_bytes / 1e6:g} MB"
                raise IngestError(f"file too large: {too_large}")
            return zipfile.ZipFile(self.handle)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as exc:
            raise IngestError(f"broken {kind} file: not a readable zip archive ({exc})") from exc
        except OSError as exc:
            raise IngestError(f"cannot read file: {exc.strerror or exc}") from exc

    def close(self) -> None:
        self.archive.close()
        self.handle.close()

    def __enter__(self) -> SafeZip:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def has(self, name: str) -> bool:
        return name in self.names

    def read(self, name: str) -> bytes:
        """A member's bytes; IngestError when missing, corrupt or past the budget."""
        if name not in self.names:
            raise IngestError(f"broken {self.kind} file: {name} is missing")
        parts: list[bytes] = []
        try:
            with self.archive.open(name) as member:
                while True:
                    part = member.read(min(_READ_STEP, self.budget + 1))
                    if not part:
                        break
                    self.budget -= len(part)
                    if self.budget < 0:
                        raise IngestError(
                            f"{self.kind} expands past {self.cap / 1e6:g} MB when unpacked "
                            "(zip bomb?); not read"
                        )
                    parts.append(part)
        except IngestError:
            raise
        except Exception as exc:  # noqa: BLE001 - zlib errors, encrypted or truncated members
            raise IngestError(f"broken {self.kind} file: cannot unpack {name} ({exc})") from exc
        return b"".join(parts)

    def xml(self, name: str) -> ElementTree.Element:
        """A member parsed as XML (expat: no external entities, bounded entity expansion)."""
        data = self.read(name)
        try:
            return ElementTree.fromstring(data)
        except ElementTree.ParseError as exc:
            raise IngestError(f"broken {self.kind} file: {name} is not valid XML ({exc})") from exc
