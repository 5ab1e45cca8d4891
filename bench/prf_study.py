"""Pseudo-relevance feedback on the vector leg: does it pay on top of convex fusion?

For every query of each set: kb's own lexical leg (depth 100), the query vector and every chunk
vector of the index; then, offline, plain convex fusion against "vector PRF": the query vector
plus beta x the mean vector of the top-k fused chunks, the vector leg run again with it, and the
legs fused again. Prints nDCG@10 / MRR@10 per set (document level for BEIR, file level for
question sets), like bench/fusion_study.py, whose loaders and scoring it shares.

    python bench/prf_study.py --cache DIR --beir ../shared/data/scifact=INDEX_DB ... \\
        --questions eval/questions/docs-qa.jsonl:KB_DATA_DIR ...

BEIR sets are read from indexes `kb eval` built before (DIR=INDEX_DB, with KB_DATA_DIR set to
their data dir); the evidence is cached under --cache, so trying other k/beta costs seconds.
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from fusion_study import (  # noqa: E402
    Dataset,
    convex_floor0,
    doc_ranking,
    legs_for,
    mrr10,
    ndcg10,
    question_grades,
    rrf,
)

from kb_search.config import load_config  # noqa: E402
from kb_search.knowledge_base import KnowledgeBase  # noqa: E402
from kb_search.store.vectors import all_vectors, db_model, table_for  # noqa: E402


def gather(kb: KnowledgeBase, dataset: Dataset, key: str) -> dict:
    conn = kb.reader()
    ids, matrix = all_vectors(conn, table_for(conn, db_model(conn)).name)
    column = "d.rel_path" if key == "rel_path" else "d.id"
    rows = conn.execute(
        f"SELECT c.id, {column} FROM chunks c JOIN documents d ON d.id = c.document_id"
    )
    queries = {}
    for qid, text in dataset.queries:
        lexical, vector = legs_for(kb, conn, text)
        qvec = np.asarray(kb.vector_leg().search.embed_query(text), dtype=np.float32)
        queries[qid] = {"lexical": lexical, "vector": vector, "qvec": qvec}
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return {
        "name": dataset.name,
        "queries": dataset.queries,
        "relevant": dataset.relevant,
        "ids": np.array(ids),
        "matrix": matrix / np.maximum(norms, 1e-12),
        "doc": {cid: str(d) for cid, d in rows},
        "q": queries,
    }


def load(spec: str, cache: Path, questions: bool, data_dir: str = "") -> dict:
    name = Path(spec.partition("=" if not questions else ":")[0]).stem
    cached = cache / f"{name}.pkl"
    if cached.exists():
        return pickle.loads(cached.read_bytes())
    if questions:
        from kb_search.evaluate.questions import Indexed, load_questions

        path, _, kb_dir = spec.partition(":")
        items = load_questions(Path(path))
        config = load_config(env={**os.environ, "KB_DATA_DIR": kb_dir})
        with KnowledgeBase(config, long_lived=True) as kb:
            relevant = question_grades(Indexed.load(kb.reader(), items), items)
            dataset = Dataset(name, [(q.id, q.text) for q in items], relevant)
            data = gather(kb, dataset, "id")
    else:
        from kb_search.evaluate.beir import load_dataset

        directory, _, index = spec.partition("=")
        beir = load_dataset(Path(directory))
        config = load_config(env={**os.environ, "KB_DATA_DIR": data_dir, "KB_DB": index})
        with KnowledgeBase(config, long_lived=True) as kb:
            dataset = Dataset(name, list(beir.queries.items()), beir.qrels)
            data = gather(kb, dataset, "rel_path")
    cache.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(pickle.dumps(data))
    return data


def nearest(data: dict, vector: np.ndarray, k: int = 100) -> list[tuple[int, float]]:
    scores = data["matrix"] @ (vector / np.linalg.norm(vector))
    k = min(k, len(scores))
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.argsort(-scores[top], kind="stable")]
    return [(int(data["ids"][i]), float(scores[i])) for i in top]


def vector_prf(k: int, beta: float, source: str = "fused", fuse=None):
    fuse = fuse or convex_floor0(0.5)

    def run(data: dict, q: dict) -> list[int]:
        evidence = {"lexical": q["lexical"], "vector": q["vector"], "doc": data["doc"]}
        first = fuse(evidence) if source == "fused" else [h[0] for h in evidence[source]]
        rows = [data["ids"].searchsorted(c) for c in first[:k]]
        vector = q["qvec"] / np.linalg.norm(q["qvec"]) + beta * data["matrix"][rows].mean(axis=0)
        return fuse({**evidence, "vector": nearest(data, vector)})

    return run


def plain(fuse):
    def run(data: dict, q: dict) -> list[int]:
        return fuse({"lexical": q["lexical"], "vector": q["vector"], "doc": data["doc"]})

    return run


METHODS = {
    "convex (kb's default)": plain(convex_floor0(0.5)),
    "rrf60": plain(rrf(60)),
    **{f"prf fused k{k} b{b}": vector_prf(k, b) for k in (3, 5, 10) for b in (0.3, 0.6, 1.0)},
    **{f"prf lexical k{k} b0.6": vector_prf(k, 0.6, "lexical") for k in (3, 5)},
    **{f"prf rrf k{k} b0.6": vector_prf(k, 0.6, fuse=rrf(60)) for k in (3, 5)},
}


def score(data: dict, rank: Callable[[str, str], list[int]]) -> tuple[float, float]:
    """Mean nDCG@10 and MRR@10 of `rank(query id, text)`, a chunk ranking, at document level
    (BEIR) or file level (question sets)."""
    n, m = [], []
    for qid, text in data["queries"]:
        ranking = doc_ranking(rank(qid, text), data["doc"])
        grades = data["relevant"].get(qid, {})
        n.append(ndcg10(ranking, grades))
        m.append(mrr10(ranking, grades))
    return statistics.fmean(n), statistics.fmean(m)


def set_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every study over cached sets takes."""
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--data-dir", default="", help="data dir of the BEIR indexes (models)")
    parser.add_argument("--beir", nargs="*", default=[], help="DIR=INDEX_DB")
    parser.add_argument("--questions", nargs="*", default=[], help="FILE:KB_DATA_DIR")


def print_head(sets: list[dict], width: int = 24) -> None:
    print(f"{'method':<{width}}" + "".join(f"{d['name'][:12]:>15}" for d in sets) + "   mean")


def print_row(label: str, values: list[tuple[float, float]], width: int = 24) -> None:
    cells = "".join(f"{n:7.4f}/{m:.3f}" for n, m in values)
    mean_n = statistics.fmean(v[0] for v in values)
    mean_m = statistics.fmean(v[1] for v in values)
    print(f"{label:<{width}}{cells} {mean_n:.4f}/{mean_m:.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    set_arguments(parser)
    args = parser.parse_args()
    sets = [load(s, args.cache, False, args.data_dir) for s in args.beir]
    sets += [load(s, args.cache, True) for s in args.questions]
    print_head(sets)
    for name, method in METHODS.items():
        print_row(name, [score(d, lambda qid, _, d=d, f=method: f(d, d["q"][qid])) for d in sets])


if __name__ == "__main__":
    main()
