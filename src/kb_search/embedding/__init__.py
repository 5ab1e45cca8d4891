"""How an embedding model runs: provisioning (safetensors -> ONNX, cached), a torch-free
embedder, a cross-encoder, remote models' clients, and the `TextEmbedder` protocol they share.
Which model is used, and when it is loaded, is `models/`.

Attributes are imported lazily so `import kb_search.embedding` stays cheap: onnxruntime and
tokenizers load only when an Embedder is built, onnx only when a model is converted.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np  # annotations only

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
    "TextEmbedder",
]


class TextEmbedder(Protocol):
    """What kb needs of an embedding model (`Embedder` is the real one; a
    remote model's client and a test's in-process model are others)."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    @property
    def max_tokens(self) -> int: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def embed_passages(self, texts: list[str]) -> np.ndarray: ...


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
    provider: str = "auto",
) -> Embedder:
    """Provision (or reuse) a model and return an Embedder for it, run by onnxruntime's
    `provider` ("auto": the best this machine has; see providers.py)."""
    from kb_search.embedding.embedder import Embedder
    from kb_search.embedding.provision import provision_model

    info = provision_model(name, cache_dir, source)
    return Embedder(info, threads=threads, prepack=prepack, provider=provider)


# Models behind an HTTP endpoint (remote.py): `openai:NAME` (the OpenAI embeddings API, which
# most servers speak) and `ollama:NAME` (Ollama's native /api/embed).
REMOTE_SCHEMES = ("openai", "ollama")


def is_remote(name: str) -> bool:
    scheme, sep, model = name.partition(":")
    return bool(sep and model) and scheme in REMOTE_SCHEMES


def split_remote(name: str) -> tuple[str, str]:
    """`openai:text-embedding-3-small` -> ("openai", "text-embedding-3-small")."""
    scheme, _, model = name.partition(":")
    return scheme, model
