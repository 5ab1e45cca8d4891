"""Helpers shared by test modules in different folders (importable: tests/ is on sys.path)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING

from kb_search.store import db

if TYPE_CHECKING:
    from kb_search.knowledge_base import KnowledgeBase


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
    from kb_search.models.embedders import register_embedder

    register_embedder(HashEmbedder.name, HashEmbedder)


def db_signature(path: Path | str) -> tuple[dict, dict]:
    """What two indexes of the same files must share, by citation path: per document (content
    hash, title, type, chunk count); per (rel_path, chunk_index) the chunk's text, heading,
    lines, pages, content hash and vector."""
    import numpy as np

    conn = db.connect(path, readonly=True)
    try:
        docs = {
            rel: (digest, title, doc_type, count)
            for rel, digest, title, doc_type, count in conn.execute(
                "SELECT rel_path, content_hash, title, doc_type, chunk_count FROM documents"
            )
        }
        (table,) = conn.execute("SELECT table_name FROM vector_tables").fetchone()
        chunks = {
            (rel, index): (text, heading, lines, pages, digest, np.frombuffer(blob, np.float32))
            for rel, index, text, heading, lines, pages, digest, blob in conn.execute(
                "SELECT d.rel_path, c.chunk_index, c.text, c.heading,"
                " c.line_start || '-' || c.line_end, c.page_start || '-' || c.page_end,"
                f" c.content_hash, v.embedding FROM chunks c JOIN documents d"
                f" ON d.id = c.document_id LEFT JOIN {table} v ON v.rowid = c.id"
            )
        }
    finally:
        conn.close()
    return docs, chunks


def compare_dbs(got: Path | str, want: Path | str, min_cosine: float = 0.999) -> list[str]:
    """Every difference between two indexes of the same files, chunk for chunk (vectors equal
    within `min_cosine`); [] when they are the same."""
    import numpy as np

    got_docs, got_chunks = db_signature(got)
    want_docs, want_chunks = db_signature(want)
    problems = [
        f"document {k}: {got_docs.get(k)} != {want_docs.get(k)}"
        for k in sorted(set(got_docs) | set(want_docs))
        if got_docs.get(k) != want_docs.get(k)
    ]
    for key in sorted(set(got_chunks) | set(want_chunks)):
        a, b = got_chunks.get(key), want_chunks.get(key)
        if a is None or b is None:
            problems.append(f"chunk {key}: only in {'the other' if a is None else 'this'} index")
        elif a[:5] != b[:5]:
            problems.append(f"chunk {key}: text/heading/location/hash differ")
        elif (
            len(a[5]) != len(b[5])
            or float(np.dot(a[5], b[5]) / (np.linalg.norm(a[5]) * np.linalg.norm(b[5]) or 1.0))
            < min_cosine
        ):
            problems.append(f"chunk {key}: vectors differ")
    return problems


def kb_over_files(root: Path, files: dict[str, str]) -> KnowledgeBase:
    """A KnowledgeBase with the hash embedder over `files` (name -> text) written to root/docs."""
    from kb_search.config import load_config
    from kb_search.knowledge_base import KnowledgeBase

    docs = root / "docs"
    docs.mkdir(parents=True, exist_ok=True)  # a test may put other files there first
    for name, text in files.items():
        (docs / name).write_text(text, encoding="utf-8")
    config = load_config(env={"KB_DATA_DIR": str(root / "data"), "KB_WORKERS": "0"})
    kb = KnowledgeBase(config, embedder=HashEmbedder(), cwd=root)
    kb.add([docs])
    return kb
