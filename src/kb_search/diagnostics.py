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


def versions(provider: str = "auto") -> dict[str, str]:
    """Versions, and the onnxruntime provider `provider` (the embedding.provider setting) means."""
    from kb_search import __version__
    from kb_search.store.db import sqlite

    return {
        "kb-search": __version__,
        "python": f"{platform.python_implementation()} {sys.version.split()[0]}",
        "sqlite": sqlite.sqlite_version,
        "sqlite-vec": _package("sqlite-vec"),
        "onnxruntime": _package("onnxruntime"),
        "onnxruntime providers": _providers(provider),
        "mcp": _package("mcp"),
        "platform": platform.platform(terse=True),
    }


def _providers(requested: str) -> str:
    """The execution providers this onnxruntime offers, and the one the embedder runs on."""
    from kb_search.embedding.providers import (
        ProviderUnavailable,
        available_providers,
        choose_provider,
        short_name,
    )

    try:
        available = available_providers()
    except ImportError:
        return "onnxruntime not installed"
    offered = ", ".join(short_name(p) for p in available)
    try:
        chosen = short_name(choose_provider(requested, available))
    except ProviderUnavailable as exc:
        return f"{offered}; {exc}"
    return f"{offered} (using {chosen})"
