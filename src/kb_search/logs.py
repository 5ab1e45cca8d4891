"""Where log lines of the libraries kb uses go: the data directory's log file, never the
terminal (Docling's "Dropping hyperlink with unsafe scheme...", RapidOCR's notices).

Configured once per process by the entry points (the CLI's App, which also starts `kb serve`)
and by parser worker processes, which find the file in the environment they inherit.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

LOG_NAME = "kb.log"
LOG_FILE_ENV = "KB_LOG_FILE"
FORMAT = "%(asctime)s %(process)d %(name)s %(levelname)s: %(message)s"


class _DataDirLog(logging.FileHandler):
    """Opened on the first line (most runs log nothing); a log that cannot be written loses
    the line quietly rather than printing a traceback on the terminal."""

    def __init__(self, path: Path):
        super().__init__(path, encoding="utf-8", delay=True)
        self.setLevel(logging.WARNING)
        self.setFormatter(logging.Formatter(FORMAT))

    def format(self, record: logging.LogRecord) -> str:
        from kb_search.net import redact  # a library may log a URL with its password

        return redact(super().format(record))

    def _open(self):  # type: ignore[no-untyped-def]
        Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        return super()._open()

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        pass


def route_library_logs(path: Path) -> None:
    """Send warnings and errors logged through `logging` to `path` (kb's own also to stderr);
    children inherit it."""
    # kb's own warnings (a Ray worker killed) still reach the person on stderr through the
    # handler that printed them before the root logger had one: logging's last resort (the
    # stderr of the moment, WARNING and up, the message alone)
    own = logging.getLogger("kb_search")
    if logging.lastResort is not None and logging.lastResort not in own.handlers:
        own.addHandler(logging.lastResort)
    root = logging.getLogger()
    target = str(Path(path).absolute())
    if any(isinstance(h, _DataDirLog) and h.baseFilename == target for h in root.handlers):
        return
    for handler in [h for h in root.handlers if isinstance(h, _DataDirLog)]:
        root.removeHandler(handler)  # another data dir in the same process (tests, serve)
        handler.close()
    root.addHandler(_DataDirLog(Path(target)))
    os.environ[LOG_FILE_ENV] = target


def route_inherited_logs() -> None:
    """In a worker process: the log file its parent configured, if any."""
    target = os.environ.get(LOG_FILE_ENV)
    if target:
        route_library_logs(Path(target))
