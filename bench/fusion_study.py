"""Fusion study: how should the lexical and vector legs be combined?

Runs every query of each dataset once through kb's own legs (the real pipeline stages, depth
100), keeps the evidence (each leg's chunk ids, scores and ranks, the document of each chunk),
then scores many fusion functions on that evidence offline. Prints, per dataset and overall,
nDCG@10 and MRR@10 (document level for BEIR sets; file level for question sets) for each
function, with lexical and vector alone for reference.

    python bench/fusion_study.py --data-dir DIR --beir ../shared/data/scifact ... \
        --questions eval/questions/docs-qa.jsonl:KBDIR ...

BEIR sets are indexed (once) with `kb eval`'s own index under DIR/eval; a questions file is
run against the KB in KBDIR (index the corpora there first with `kb add`). The evidence is
cached under DIR/fusion-cache, so trying another function costs seconds.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kb_search.config import load_config
from kb_search.knowledge_base import KnowledgeBase

# {"lexical": [(cid, score, -bm25)], "vector": [(cid, cosine)], "doc": {cid: document key}}
Evidence = dict


@dataclass
class Dataset:
    name: str
    queries: list[tuple[str, str]]  # (id, text)
    relevant: dict[str, dict[str, int]]  # query id -> {document key: grade}
    evidence: dict[str, Evidence] = field(default_factory=dict)


# ---- collecting evidence -------------------------------------------------------------------


def legs_for(kb: KnowledgeBase, conn, text: str) -> tuple[list, list]:
    from kb_search.search.pipeline import prepare, retrieve

    options = kb.search_options(mode="hybrid", top=10, snippets=False)
    query = prepare(conn, text, options)
    leg = kb.vector_leg()
    legs = retrieve(conn, query, options, leg.search, leg.unavailable, {})
    # The lexical score is x / (1 + x) with x = -bm25: keep x as well.
    lexical = [(cid, s, s / (1 - s) if s < 1 else 1e9) for cid, s in legs["lexical"].hits]
    vector = [(cid, s) for cid, s in legs["vector"].hits]
    return lexical, vector


def doc_keys(conn, ids: set[int], key: str) -> tuple[dict[int, str], dict[str, int]]:
    """Each chunk's document key, and each of those documents' chunk count."""
    if not ids:
        return {}, {}
    marks = ",".join("?" * len(ids))
    column = "d.rel_path" if key == "rel_path" else "d.id"
    rows = conn.execute(
        f"SELECT c.id, {column}, (SELECT count(*) FROM chunks x WHERE x.document_id = d.id)"
        f" FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.id IN ({marks})",
        list(ids),
    ).fetchall()
    return {cid: str(doc) for cid, doc, _ in rows}, {str(doc): n for _, doc, n in rows}


def collect(kb: KnowledgeBase, conn, dataset: Dataset, key: str) -> None:
    for qid, text in dataset.queries:
        lexical, vector = legs_for(kb, conn, text)
        ids = {c for c, *_ in lexical} | {c for c, _ in vector}
        doc, size = doc_keys(conn, ids, key)
        dataset.evidence[qid] = {"lexical": lexical, "vector": vector, "doc": doc, "size": size}


def load_beir(data_dir: Path, spec: str, cache: Path) -> Dataset:
    """spec: a BEIR directory, indexed with `kb eval` under data_dir, or DIR=DB to read an
    index built before (read only)."""
    from kb_search.evaluate.beir import load_dataset

    directory, _, index = spec.partition("=")
    path = Path(directory)
    cached = cache / f"beir-{path.name}.pkl"
    if cached.exists():
        return pickle.loads(cached.read_bytes())
    data = load_dataset(path)
    if not index:
        config = load_config(env={**os.environ, "KB_DATA_DIR": str(data_dir)})
        with KnowledgeBase(config, long_lived=True) as kb:
            index = kb.eval(path, ["vector"])["index"]  # builds (or reuses) the eval index
    eval_config = load_config(env={**os.environ, "KB_DATA_DIR": str(data_dir), "KB_DB": index})
    dataset = Dataset(path.name, list(data.queries.items()), data.qrels)
    with KnowledgeBase(eval_config, long_lived=True) as eval_kb:
        collect(eval_kb, eval_kb.reader(), dataset, "rel_path")
    cache.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(pickle.dumps(dataset))
    return dataset


def load_questions(spec: str, cache: Path) -> Dataset:
    from kb_search.evaluate.questions import Indexed
    from kb_search.evaluate.questions import load_questions as load

    path, _, kb_dir = spec.partition(":")
    cached = cache / f"questions-{Path(path).stem}.pkl"
    if cached.exists():
        return pickle.loads(cached.read_bytes())
    questions = load(Path(path))
    config = load_config(env={**os.environ, "KB_DATA_DIR": kb_dir})
    with KnowledgeBase(config, long_lived=True) as kb:
        conn = kb.reader()
        relevant = question_grades(Indexed.load(conn, questions), questions)
        dataset = Dataset(Path(path).stem, [(q.id, q.text) for q in questions], relevant)
        collect(kb, conn, dataset, "id")
    cache.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(pickle.dumps(dataset))
    return dataset


def question_grades(indexed, questions) -> dict[str, dict[str, int]]:
    """question id -> {document id: grade} for the documents each question's targets name."""
    relevant = {}
    for q in questions:
        grades: dict[str, int] = {}
        for t in q.targets:
            for doc_id in indexed.documents.get(t.path, ()):
                grades[str(doc_id)] = max(grades.get(str(doc_id), 0), t.grade)
        relevant[q.id] = grades
    return relevant


# ---- fusion functions (evidence -> chunk ranking) ------------------------------------------

Fusion = Callable[[Evidence], list[int]]


def ranked(scores: dict[int, float]) -> list[int]:
    return [c for c, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))]


def only(leg: str) -> Fusion:
    return lambda ev: [h[0] for h in ev[leg]]


def rrf(k: float = 60, w_lex: float = 1.0, w_vec: float = 1.0) -> Fusion:
    def fuse(ev: Evidence) -> list[int]:
        scores: dict[int, float] = {}
        for leg, weight in (("lexical", w_lex), ("vector", w_vec)):
            for rank, hit in enumerate(ev[leg], start=1):
                scores[hit[0]] = scores.get(hit[0], 0.0) + weight / (k + rank)
        return ranked(scores)

    return fuse


def _minmax(values: dict[int, float]) -> dict[int, float]:
    if not values:
        return {}
    lo, hi = min(values.values()), max(values.values())
    span = hi - lo
    return {c: (v - lo) / span if span else 1.0 for c, v in values.items()}


def convex(alpha: float, norm: str = "minmax") -> Fusion:
    """alpha * lexical + (1 - alpha) * vector, each normalised per query."""

    def fuse(ev: Evidence) -> list[int]:
        bm25 = {c: x for c, _, x in ev["lexical"]}
        cos = {c: s for c, s in ev["vector"]}
        if norm == "minmax":
            lex, vec = _minmax(bm25), _minmax(cos)
        elif norm == "max":  # scale by the best only (0 stays 0)
            top_l = max(bm25.values(), default=1.0) or 1.0
            lex = {c: v / top_l for c, v in bm25.items()}
            vec = _minmax(cos)
        else:  # "z": z-scores
            lex, vec = _z(bm25), _z(cos)
        missing_l = min(lex.values(), default=0.0) if norm == "z" else 0.0
        missing_v = min(vec.values(), default=0.0) if norm == "z" else 0.0
        ids = set(lex) | set(vec)
        return ranked(
            {c: alpha * lex.get(c, missing_l) + (1 - alpha) * vec.get(c, missing_v) for c in ids}
        )

    return fuse


def _z(values: dict[int, float]) -> dict[int, float]:
    if len(values) < 2:
        return {c: 0.0 for c in values}
    mean = statistics.fmean(values.values())
    sd = statistics.pstdev(values.values()) or 1.0
    return {c: (v - mean) / sd for c, v in values.items()}


def doc_rrf(k: float = 60, lam: float = 1.0, w_vec: float = 1.0) -> Fusion:
    """RRF over chunk ranks plus RRF over each chunk's document rank in each leg (a document
    that both legs find, through different chunks, counts as agreement)."""

    def fuse(ev: Evidence) -> list[int]:
        scores: dict[int, float] = {}
        doc = ev["doc"]
        for leg, weight in (("lexical", 1.0), ("vector", w_vec)):
            doc_rank: dict[str, int] = {}
            for hit in ev[leg]:
                doc_rank.setdefault(doc.get(hit[0], f"?{hit[0]}"), len(doc_rank) + 1)
            for rank, hit in enumerate(ev[leg], start=1):
                cid = hit[0]
                scores[cid] = scores.get(cid, 0.0) + weight / (k + rank)
            for cid in doc:
                d_rank = doc_rank.get(doc[cid])
                if d_rank is not None:
                    scores[cid] = scores.get(cid, 0.0) + lam * weight / (k + d_rank)
        return ranked(scores)

    return fuse


def cc_doc(alpha: float, lam: float) -> Fusion:
    """Convex (min-max) at chunk level plus lam x the document's best normalised score per leg."""

    def fuse(ev: Evidence) -> list[int]:
        doc = ev["doc"]
        lex = _minmax({c: x for c, _, x in ev["lexical"]})
        vec = _minmax({c: s for c, s in ev["vector"]})
        best_l: dict[str, float] = {}
        best_v: dict[str, float] = {}
        for c, v in lex.items():
            best_l[doc.get(c, "")] = max(best_l.get(doc.get(c, ""), 0.0), v)
        for c, v in vec.items():
            best_v[doc.get(c, "")] = max(best_v.get(doc.get(c, ""), 0.0), v)
        ids = set(lex) | set(vec)
        return ranked(
            {
                c: alpha * (lex.get(c, 0.0) + lam * best_l.get(doc.get(c, ""), 0.0))
                + (1 - alpha) * (vec.get(c, 0.0) + lam * best_v.get(doc.get(c, ""), 0.0))
                for c in ids
            }
        )

    return fuse


def cc_size(alpha: float, beta: float) -> Fusion:
    """Convex min-max with the lexical part damped for documents with many chunks: a long
    manual matches common words in many chunks and its best one tends to rank high."""

    def fuse(ev: Evidence) -> list[int]:
        doc, size = ev["doc"], ev.get("size", {})
        lex = _minmax({c: x for c, _, x in ev["lexical"]})
        vec = _minmax({c: s for c, s in ev["vector"]})
        def damp(c: int) -> float:
            n = size.get(doc.get(c, ""), 1)
            return 1.0 / (1.0 + beta * math.log(n))
        ids = set(lex) | set(vec)
        return ranked(
            {c: alpha * lex.get(c, 0.0) * damp(c) + (1 - alpha) * vec.get(c, 0.0) for c in ids}
        )

    return fuse


def cc_conf(alpha: float, gap: float) -> Fusion:
    """Convex min-max where the lexical weight follows the leg's confidence: how far its best
    score stands above its tenth (a flat OR-match of common words gets less say)."""

    def fuse(ev: Evidence) -> list[int]:
        bm25 = [x for _, _, x in ev["lexical"]]
        lex = _minmax({c: x for c, _, x in ev["lexical"]})
        vec = _minmax({c: s for c, s in ev["vector"]})
        a = alpha
        if len(bm25) >= 10 and bm25[0] > 0:
            steep = 1 - bm25[9] / bm25[0]  # 0 = flat head, 1 = one clear winner
            a = alpha * min(1.0, steep / gap)
        ids = set(lex) | set(vec)
        return ranked({c: a * lex.get(c, 0.0) + (1 - a) * vec.get(c, 0.0) for c in ids})

    return fuse


def cc_rank(alpha: float, k: float = 60) -> Fusion:
    """Convex combination of min-max normalised scores and of rank (RRF-like) evidence."""

    def fuse(ev: Evidence) -> list[int]:
        lex = _minmax({c: x for c, _, x in ev["lexical"]})
        vec = _minmax({c: s for c, s in ev["vector"]})
        ids = set(lex) | set(vec)
        base = {c: alpha * lex.get(c, 0.0) + (1 - alpha) * vec.get(c, 0.0) for c in ids}
        for leg in ("lexical", "vector"):
            for rank, hit in enumerate(ev[leg], start=1):
                base[hit[0]] += (k + 1) / (k + rank) * 0.5
        return ranked(base)

    return fuse


def cc_raw(alpha: float) -> Fusion:
    """Convex combination of the legs' own [0, 1] scores (no per-query normalisation)."""

    def fuse(ev: Evidence) -> list[int]:
        lex = {c: s for c, s, _ in ev["lexical"]}
        vec = {c: s for c, s in ev["vector"]}
        ids = set(lex) | set(vec)
        return ranked({c: alpha * lex.get(c, 0.0) + (1 - alpha) * vec.get(c, 0.0) for c in ids})

    return fuse


def _rrf_norm(ev: Evidence, k: float) -> dict[int, float]:
    scores: dict[int, float] = {}
    for leg in ("lexical", "vector"):
        for rank, hit in enumerate(ev[leg], start=1):
            scores[hit[0]] = scores.get(hit[0], 0.0) + (k + 1) / (k + rank) / 2
    return scores


def _floor_minmax(values: dict[int, float], depth: int) -> dict[int, float]:
    """Min-max where the floor is the score at rank `depth` (below it: 0)."""
    if not values:
        return {}
    ordered_values = sorted(values.values(), reverse=True)
    hi, lo = ordered_values[0], ordered_values[min(depth, len(ordered_values)) - 1]
    span = hi - lo
    return {c: max(0.0, (v - lo) / span) if span else 1.0 for c, v in values.items()}


def mix(weight: float, alpha: float, k: float = 60) -> Fusion:
    """weight x RRF (normalised, 1 = first in both) + (1 - weight) x convex min-max."""

    def fuse(ev: Evidence) -> list[int]:
        rank = _rrf_norm(ev, k)
        lex = _minmax({c: x for c, _, x in ev["lexical"]})
        vec = _minmax({c: s for c, s in ev["vector"]})
        return ranked(
            {
                c: weight * rank[c]
                + (1 - weight) * (alpha * lex.get(c, 0.0) + (1 - alpha) * vec.get(c, 0.0))
                for c in rank
            }
        )

    return fuse


def cc_floor(alpha: float, depth: int) -> Fusion:
    def fuse(ev: Evidence) -> list[int]:
        lex = _floor_minmax({c: x for c, _, x in ev["lexical"]}, depth)
        vec = _floor_minmax({c: s for c, s in ev["vector"]}, depth)
        ids = set(lex) | set(vec)
        return ranked({c: alpha * lex.get(c, 0.0) + (1 - alpha) * vec.get(c, 0.0) for c in ids})

    return fuse


def borda(alpha: float, depth: int = 100) -> Fusion:
    def fuse(ev: Evidence) -> list[int]:
        scores: dict[int, float] = {}
        for leg, w in (("lexical", alpha), ("vector", 1 - alpha)):
            for rank, hit in enumerate(ev[leg], start=1):
                scores[hit[0]] = scores.get(hit[0], 0.0) + w * (1 - (rank - 1) / depth)
        return ranked(scores)

    return fuse


def convex_floor0(alpha: float, depth: int = 100) -> Fusion:
    """Convex min-max, but when the lexical leg returned all its matches (fewer than the
    depth) its floor is 0, the BM25 of a chunk without the words: its last match keeps
    credit over chunks that do not match at all. (kb's default fusion.)"""

    def fuse(ev: Evidence) -> list[int]:
        bm25 = {c: x for c, _, x in ev["lexical"]}
        lex = _minmax(bm25)
        if bm25 and len(bm25) < depth:
            top = max(bm25.values())
            lex = {c: v / top if top > 0 else 1.0 for c, v in bm25.items()}
        vec = _minmax({c: s for c, s in ev["vector"]})
        ids = set(lex) | set(vec)
        return ranked({c: alpha * lex.get(c, 0.0) + (1 - alpha) * vec.get(c, 0.0) for c in ids})

    return fuse


FUSIONS: dict[str, Fusion] = {
    "lexical": only("lexical"),
    "vector": only("vector"),
    "rrf60": rrf(60),
    "rrf20": rrf(20),
    "rrf60 v1.5": rrf(60, 1.0, 1.5),
    "rrf60 v2": rrf(60, 1.0, 2.0),
    **{f"cc mm a{a}": convex(a) for a in (0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7)},
    **{f"cc mm0 a{a}": convex_floor0(a) for a in (0.4, 0.45, 0.5, 0.55, 0.6)},
    **{f"cc max a{a}": convex(a, "max") for a in (0.3, 0.5)},
    **{f"cc z a{a}": convex(a, "z") for a in (0.3, 0.4, 0.5, 0.6)},
    **{f"cc raw a{a}": cc_raw(a) for a in (0.3, 0.5)},
    **{f"ccsize a{a} b{b}": cc_size(a, b) for a in (0.4, 0.5) for b in (0.1, 0.3)},
    **{f"ccconf a{a} g{g}": cc_conf(a, g) for a in (0.5, 0.6) for g in (0.3, 0.5)},
    **{f"ccrank a{a}": cc_rank(a) for a in (0.4, 0.5)},
    **{f"mix w{w} a{a}": mix(w, a) for w in (0.3, 0.5, 0.7) for a in (0.4, 0.5, 0.6)},
    **{f"mix w{w} a0.5 k{k}": mix(w, 0.5, k) for w in (0.5,) for k in (20, 100)},
    **{f"ccfloor a{a} d{d}": cc_floor(a, d) for a in (0.5,) for d in (20, 50)},
    **{f"borda a{a}": borda(a) for a in (0.4, 0.5)},
    **{f"docrrf l{lam}": doc_rrf(60, lam) for lam in (0.5, 1.0)},
    "docrrf l1 v1.5": doc_rrf(60, 1.0, 1.5),
    **{f"ccdoc a{a} l{lam}": cc_doc(a, lam) for a in (0.4, 0.5) for lam in (0.5, 1.0)},
}


# ---- scoring -------------------------------------------------------------------------------


def doc_ranking(chunks: list[int], doc: dict[int, str]) -> list[str]:
    return list(dict.fromkeys(doc.get(c, f"?{c}") for c in chunks))


def ndcg10(ranking: list[str], grades: dict[str, int]) -> float:
    dcg = sum(grades.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranking[:10]))
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def mrr10(ranking: list[str], grades: dict[str, int]) -> float:
    for i, d in enumerate(ranking[:10]):
        if grades.get(d, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def score(dataset: Dataset, fusion: Fusion) -> tuple[float, float]:
    n, m = [], []
    for qid, _ in dataset.queries:
        ev = dataset.evidence[qid]
        ranking = doc_ranking(fusion(ev), ev["doc"])
        n.append(ndcg10(ranking, dataset.relevant.get(qid, {})))
        m.append(mrr10(ranking, dataset.relevant.get(qid, {})))
    return statistics.fmean(n), statistics.fmean(m)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--beir", nargs="*", default=[], help="DIR or DIR=INDEX_DB")
    parser.add_argument("--questions", nargs="*", default=[], help="FILE:KB_DATA_DIR")
    parser.add_argument("--only", nargs="*", help="fusion names to score (default: all)")
    args = parser.parse_args()
    cache = args.data_dir / "fusion-cache"
    datasets = []
    for path in args.beir:
        t0 = time.perf_counter()
        datasets.append(load_beir(args.data_dir, path, cache))
        print(f"{path}: evidence in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    for spec in args.questions:
        datasets.append(load_questions(spec, cache))
    names = args.only or list(FUSIONS)
    table = {name: [score(d, FUSIONS[name]) for d in datasets] for name in names}
    head = f"{'fusion':<18}" + "".join(f"{d.name[:14]:>16}" for d in datasets) + f"{'mean':>14}"
    print("nDCG@10 / MRR@10")
    print(head)
    for name, values in table.items():
        cells = "".join(f"{n:>8.4f}/{m:.3f}" for n, m in values)
        mean_n = statistics.fmean(n for n, _ in values)
        mean_m = statistics.fmean(m for _, m in values)
        print(f"{name:<18}{cells}{mean_n:>8.4f}/{mean_m:.3f}")
    json.dump({k: v for k, v in table.items()}, sys.stderr)


if __name__ == "__main__":
    main()
