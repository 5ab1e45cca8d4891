"""Helpers shared by test modules in different folders (importable: tests/ is on sys.path)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from kb_search.store import db


def document_count(path: Path | str) -> int:
    """Documents in a DB another process may be creating or writing; 0 until it is ready."""
    try:
        conn = db.connect(path, readonly=True)
    except db.DBError:
        return 0
    try:
        return conn.execute("SELECT count(*) FROM documents").fetchone()[0]
    except db.DatabaseError:
        return 0
    finally:
        conn.close()


class HashEmbedder:
    """A small deterministic embedder for fast tests: signed feature hashing of lower-cased
    words and their 3-letter prefixes into 64 dimensions, L2-normalised. Texts that share
    words are near; it knows nothing of meaning (the real model is tested end to end)."""

    name = "kb-test/hash-64"
    dim = 64
    max_tokens = 256

    def _vector(self, text: str):
        import numpy as np

        vec = np.zeros(self.dim, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            for feature in (word, word[:3]):
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                slot = int.from_bytes(digest[:4], "little") % self.dim
                vec[slot] += 1.0 if digest[4] & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm else vec

    def embed_query(self, text: str):
        return self._vector(text)

    def embed_passages(self, texts):
        import numpy as np

        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self.dim))

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def register_test_embedder() -> None:
    from kb_search.vectors.model import register_embedder

    register_embedder(HashEmbedder.name, HashEmbedder)
