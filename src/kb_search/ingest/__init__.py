"""Turning files into documents. `kb add` is `pipeline`: `walk` the paths, skip what is
unchanged (`changes`), parse the rest on an `executor` (worker processes: `workers`, `parse`;
or `ray_executor`) and write each document as it comes (`batch_writer`: text first, vectors
after); `summary` and `ocr_notice` report the run. `sync`, `watch` and `remove` work over the
folders `roots` remembers. What is parsed and how is `formats/`. Ingest never picks a model:
the writing model (a `LazyVectors`) and its tokenizer are handed in by `models/` (Ray's actors
load the one shipped to them).

The format registry's names are re-exported here for older callers, loaded on first use."""

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
