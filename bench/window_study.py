"""Window study: does the vector leg find more when a long chunk is also embedded in windows
the model was trained on (all-MiniLM saw at most 128 word pieces)?

For every query of each set: kb's own lexical leg and query vector, every chunk vector of the
index (bench/prf_study.py's cache), and, computed here once and cached, vectors of each long
chunk's windows: its body cut into spans of `--window` word pieces (context line included),
each window carrying the chunk's title/heading line. Then, offline, the vector leg scored
several ways and fused with the lexical leg by kb's convex fusion:

- chunk: the chunk's vector (kb today)
- max: the best of the chunk's windows (a short chunk is its own window)
- chunk+max: the mean of the two
- mean-vec: the chunk vector replaced by the normalised mean of its window vectors

Prints nDCG@10 / MRR@10 per set (document level for BEIR, file level for question sets).

    python bench/window_study.py --cache DIR --data-dir BEIR_DATA_DIR \\
        --beir ../shared/data/scifact=INDEX_DB ... --questions eval/questions/docs-qa.jsonl:KB_DIR
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from fusion_study import convex_floor0  # noqa: E402
from prf_study import load, print_head, print_row, score, set_arguments  # noqa: E402

from kb_search.config import load_config  # noqa: E402
from kb_search.knowledge_base import KnowledgeBase  # noqa: E402
from kb_search.store.vectors import db_model  # noqa: E402


def windows_of(tokenizer, context: str, body: str, size: int, stride: int) -> list[str]:
    """The body cut into spans of at most `size` word pieces (after the context line), each
    with the context in front; one span (the whole text) when it fits."""
    head = f"{context}\n" if context else ""
    budget = max(32, size - 2 - len(tokenizer.encode(head, add_special_tokens=False).ids))
    offsets = tokenizer.encode(body, add_special_tokens=False).offsets
    if len(offsets) <= budget:
        return []
    out = []
    for start in range(0, len(offsets), stride if stride else budget):
        end = min(start + budget, len(offsets))
        out.append(head + body[offsets[start][0] : offsets[end - 1][1]])
        if end == len(offsets):
            break
    return out


def window_vectors(spec: str, questions: bool, data_dir: str, size: int, stride: int, cache: Path):
    name = Path(spec.partition("=" if not questions else ":")[0]).stem
    cached = cache / f"{name}-w{size}-s{stride}.npz"
    if cached.exists():
        saved = np.load(cached)
        return saved["ids"], saved["matrix"]
    if questions:
        config = load_config(env={**os.environ, "KB_DATA_DIR": spec.partition(":")[2]})
    else:
        index = spec.partition("=")[2]
        config = load_config(env={**os.environ, "KB_DATA_DIR": data_dir, "KB_DB": index})
    from tokenizers import Tokenizer

    with KnowledgeBase(config, long_lived=True) as kb:
        conn = kb.reader()
        embedder = kb.embedder_for(db_model(conn))
        tokenizer = Tokenizer.from_file(str(embedder.info.tokenizer_path))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        rows = conn.execute(
            "SELECT c.id, d.title, c.heading, c.text FROM chunks c"
            " JOIN documents d ON d.id = c.document_id ORDER BY c.id"
        ).fetchall()
        ids, texts = [], []
        for cid, title, heading, text in rows:
            context = " > ".join(x for x in (title, heading) if x)
            for window in windows_of(tokenizer, context, text, size, stride):
                ids.append(cid)
                texts.append(window)
        t0 = time.perf_counter()
        matrix = embedder.embed_passages(texts) if texts else np.zeros((0, embedder.dim))
        print(
            f"{name}: {len(texts)} windows of {len({*ids})} chunks in"
            f" {time.perf_counter() - t0:.0f} s",
            file=sys.stderr,
        )
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(cached, ids=np.array(ids, dtype=np.int64), matrix=matrix.astype(np.float32))
    return np.array(ids, dtype=np.int64), matrix.astype(np.float32)


def prepare(data: dict, win_ids: np.ndarray, win_matrix: np.ndarray) -> None:
    """Row of each window's chunk in the chunk matrix, and a mean-of-windows matrix."""
    matrix = data["matrix"]
    rows = data["ids"].searchsorted(win_ids)
    data["win_rows"] = rows
    data["win_matrix"] = win_matrix
    mean = matrix.copy()
    if len(rows):
        sums = np.zeros_like(matrix)
        np.add.at(sums, rows, win_matrix)
        has = np.zeros(len(matrix), dtype=bool)
        has[rows] = True
        mean[has] = sums[has] / np.linalg.norm(sums[has], axis=1, keepdims=True)
    data["mean_matrix"] = mean
    # each chunk's document vector: the normalised mean of the document's chunk vectors
    docs = [data["doc"].get(int(c), f"?{c}") for c in data["ids"]]
    keys = {d: i for i, d in enumerate(dict.fromkeys(docs))}
    of_doc = np.array([keys[d] for d in docs])
    sums = np.zeros((len(keys), matrix.shape[1]), dtype=np.float32)
    np.add.at(sums, of_doc, matrix)
    sums /= np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    data["doc_matrix"], data["of_doc"] = sums, of_doc


def top(data: dict, scores: np.ndarray, k: int = 100) -> list[tuple[int, float]]:
    k = min(k, len(scores))
    best = np.argpartition(-scores, k - 1)[:k]
    best = best[np.argsort(-scores[best], kind="stable")]
    return [(int(data["ids"][i]), float(scores[i])) for i in best]


def vector_scores(data: dict, qvec: np.ndarray, how: str) -> np.ndarray:
    q = qvec / np.linalg.norm(qvec)
    if how == "mean-vec":
        return data["mean_matrix"] @ q
    chunk = data["matrix"] @ q
    if how.startswith("doc"):
        return chunk + float(how[3:]) * (data["doc_matrix"] @ q)[data["of_doc"]]
    if how == "chunk" or not len(data["win_rows"]):
        return chunk
    best_window = np.full_like(chunk, -np.inf)
    np.maximum.at(best_window, data["win_rows"], data["win_matrix"] @ q)
    best_window = np.where(np.isfinite(best_window), best_window, chunk)  # short: itself
    if how == "max":
        return best_window
    if how == "maxall":
        return np.maximum(chunk, best_window)
    return (chunk + best_window) / 2


METHODS = ("chunk", "max", "chunk+max", "maxall", "mean-vec", "doc0.25", "doc0.5", "doc1")


def ranker(data: dict, how: str, leg_only: bool):
    fuse = convex_floor0(0.5)

    def rank(qid: str, _text: str) -> list[int]:
        q = data["q"][qid]
        vector = top(data, vector_scores(data, q["qvec"], how))
        if leg_only:
            return [c for c, _ in vector]
        return fuse({"lexical": q["lexical"], "vector": vector, "doc": data["doc"]})

    return rank


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    set_arguments(parser)
    parser.add_argument("--window", type=int, default=128, help="word pieces a window holds")
    parser.add_argument("--stride", type=int, default=0, help="0 = windows do not overlap")
    args = parser.parse_args()
    sets = []
    for spec, questions in [(s, False) for s in args.beir] + [(s, True) for s in args.questions]:
        data = load(spec, args.cache, questions, args.data_dir)
        if "matrix" not in data:
            data["matrix"] = data.pop("mat")
        ids, matrix = window_vectors(
            spec, questions, args.data_dir, args.window, args.stride, args.cache
        )
        prepare(data, ids, matrix)
        sets.append(data)
    print_head(sets, 22)
    for leg_only in (True, False):
        for how in METHODS:
            values = [score(d, ranker(d, how, leg_only)) for d in sets]
            print_row(f"{'vector' if leg_only else 'hybrid'} {how}", values, 22)


if __name__ == "__main__":
    main()
