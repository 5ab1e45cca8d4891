"""Turning files into documents: the pipeline that walks the added folders, parses files in
worker processes or on an executor and writes them (`pipeline`, `walk`, `workers`,
`executor`, `batch_writer`), and `sync`, `watch`, `remove` over what was added. The parsers
and their registry are `formats/`."""

from __future__ import annotations

import importlib
from typing import Any

# Loaded on first use, so importing one ingest module does not load the format registry.
_WHERE = {
    "SUPPORTED_EXTENSIONS": "kb_search.formats.registry",
    "Source": "kb_search.formats.registry",
    "detect_type": "kb_search.formats.registry",
    "format_for": "kb_search.formats.registry",
}

__all__ = ["SUPPORTED_EXTENSIONS", "Source", "detect_type", "format_for"]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'kb_search.ingest' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)
