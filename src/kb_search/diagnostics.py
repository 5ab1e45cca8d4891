"""What kb runs on: its version and the versions of the pieces that decide its behaviour."""

from __future__ import annotations

import platform
import sys
from importlib import metadata


def _package(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def versions() -> dict[str, str]:
    from kb_search import __version__
    from kb_search.store.db import sqlite

    return {
        "kb-search": __version__,
        "python": f"{platform.python_implementation()} {sys.version.split()[0]}",
        "sqlite": sqlite.sqlite_version,
        "sqlite-vec": _package("sqlite-vec"),
        "onnxruntime": _package("onnxruntime"),
        "mcp": _package("mcp"),
        "platform": platform.platform(terse=True),
    }
