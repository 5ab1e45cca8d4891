"""Opening files kb did not write (documents, `.kbignore` files, the database path) so that
nothing ever waits on them.

A plain `open()` of a FIFO blocks until a writer comes, and a read of one (or of a device)
may never end; a check made first ("is it a regular file?") and an open by path after it can
be raced by a swap. Here the open itself cannot block (O_NONBLOCK: a FIFO opens at once), the
descriptor is checked with fstat, and only a regular file is read, from that same descriptor.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

NOT_REGULAR = "not a regular file (FIFO, socket or device)"
BECAME_SYMLINK = "is a symlink now (not followed)"
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class NotRegularFile(OSError):
    """The path names a FIFO, socket, device or directory (or a symlink where none may be)."""


def open_regular(path: Path | str, *, follow_symlinks: bool = True) -> BinaryIO:
    """The file opened for binary reading; NotRegularFile for anything but a regular file.
    `follow_symlinks=False` refuses a symlink as the last component (O_NOFOLLOW)."""
    flags = _FLAGS if follow_symlinks else _FLAGS | _NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if not follow_symlinks and exc.errno in (errno.ELOOP, errno.EMLINK):
            raise NotRegularFile(errno.ELOOP, BECAME_SYMLINK, str(path)) from exc
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, _what(mode), str(path))
        if _FLAGS & getattr(os, "O_NONBLOCK", 0):
            os.set_blocking(fd, True)  # reads of the regular file behave as usual from here
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(
    path: Path | str, limit: int | None = None, *, follow_symlinks: bool = True
) -> bytes:
    """The file's bytes (at most `limit`); NotRegularFile as for `open_regular`."""
    with open_regular(path, follow_symlinks=follow_symlinks) as handle:
        return handle.read() if limit is None else handle.read(limit)


def check_regular(path: Path | str) -> None:
    """NotRegularFile when `path` exists and is not a regular file (symlinks followed): for a
    file another library opens by path (SQLite). A stat never blocks, and opens nothing (a
    device opened only to be checked could act on it)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise NotRegularFile(errno.EINVAL, _what(mode), str(path))


def _what(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    if stat.S_ISFIFO(mode):
        return "not a regular file (a FIFO)"
    if stat.S_ISSOCK(mode):
        return "not a regular file (a socket)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "not a regular file (a device)"
    return NOT_REGULAR
