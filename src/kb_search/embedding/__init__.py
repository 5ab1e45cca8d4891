"""Embedding models: provisioning (safetensors -> ONNX, cached) and a torch-free embedder.

Attributes are imported lazily so `import kb_search.embedding` stays cheap: onnxruntime and
tokenizers load only when an Embedder is built, onnx only when a model is converted.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kb_search.embedding.embedder import Embedder
    from kb_search.embedding.provision import (
        DEFAULT_MODEL,
        ModelInfo,
        ModelNotAvailableError,
        provision_model,
    )

__all__ = [
    "DEFAULT_MODEL",
    "Embedder",
    "ModelInfo",
    "ModelNotAvailableError",
    "load_embedder",
    "provision_model",
]

_LAZY = {
    "Embedder": "kb_search.embedding.embedder",
    "DEFAULT_MODEL": "kb_search.embedding.provision",
    "ModelInfo": "kb_search.embedding.provision",
    "ModelNotAvailableError": "kb_search.embedding.provision",
    "provision_model": "kb_search.embedding.provision",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_embedder(
    name: str,
    cache_dir: Path,
    source: Path | None = None,
    *,
    threads: int | None = None,
    prepack: bool = True,
) -> Embedder:
    """Provision (or reuse) a model and return an Embedder for it."""
    from kb_search.embedding.embedder import Embedder
    from kb_search.embedding.provision import provision_model

    return Embedder(provision_model(name, cache_dir, source), threads=threads, prepack=prepack)
