"""Phrasing study: the fusion's constants for single-leg hits and variant phrasings, measured.

Runs every query of each dataset once through kb's own legs (depth 100), and for question
files each question's `variants` too, keeps the legs' results, then fuses them offline with
kb's own `fuse_rankings` under each setting of SOLO_SHARE (a chunk in a leg's top SOLO_DEPTH
keeps that share of its normalised score there) and VARIANT_WEIGHT (a variant's weight next
to the query's 1). Prints nDCG@10 / MRR@10 at document (BEIR) or file (questions) level, and
hit@5 for question files.

    python -m bench phrasing --data-dir DIR --beir ../shared/data/scifact ... \
        --questions eval/questions/docs-qa.jsonl:KBDIR ...

BEIR sets use `kb eval`'s index under DIR/eval (built once by `kb eval`); a questions file
runs against the KB in KBDIR. Evidence is cached under DIR/phrasing-cache.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import pickle
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from kb_search.config import load_config
from kb_search.knowledge_base import KnowledgeBase
from kb_search.profile import Profile
from kb_search.search import fusion


@dataclass
class Dataset:
    name: str
    queries: list[tuple[str, str]]
    relevant: dict[str, dict[str, int]]
    evidence: dict[str, dict] = field(default_factory=dict)  # qid -> legs, variants, doc


def legs_of(kb: KnowledgeBase, conn, text: str, variants: tuple[str, ...] = ()):
    from kb_search.search.pipeline import prepare, retrieve, retrieve_variants

    options = kb.search_options(mode="hybrid", top=10, snippets=False, variants=variants)
    query = prepare(conn, text, options)
    leg = kb.vector_leg()
    legs = retrieve(conn, query, options, leg.search, leg.unavailable, {})
    found = retrieve_variants(conn, query, options, leg.search, leg.unavailable, {})
    return legs, found


def doc_keys(conn, ids: set[int], key: str) -> dict[int, str]:
    """Each chunk's document key: its rel_path (BEIR) or document id (questions)."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    column = "d.rel_path" if key == "rel_path" else "d.id"
    rows = conn.execute(
        f"SELECT c.id, {column} FROM chunks c JOIN documents d ON d.id = c.document_id"
        f" WHERE c.id IN ({marks})",
        list(ids),
    ).fetchall()
    return {cid: str(doc) for cid, doc in rows}


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


def collect(kb, conn, dataset: Dataset, key: str, variants: dict[str, tuple[str, ...]]) -> None:
    for qid, text in dataset.queries:
        legs, found = legs_of(kb, conn, text, variants.get(qid, ()))
        ids = {c for leg in legs.values() for c, _ in leg.hits}
        ids |= {c for v in found for leg in v.values() for c, _ in leg.hits}
        doc = doc_keys(conn, ids, key)
        dataset.evidence[qid] = {"legs": legs, "variants": found, "doc": doc}


def load_beir(data_dir: Path, directory: str, cache: Path) -> Dataset:
    from kb_search.evaluate.beir import load_dataset

    path = Path(directory)
    cached = cache / f"beir-{path.name}.pkl"
    if cached.exists():
        return pickle.loads(cached.read_bytes())
    data = load_dataset(path)
    # the index `kb eval` built with the model (the largest of the set's eval DBs)
    built = sorted((data_dir / "eval").glob(f"{path.name}-*.db"), key=lambda p: p.stat().st_size)
    if not built:
        raise SystemExit(f"index {path.name} first: kb --data-dir {data_dir} eval {path}")
    index = str(built[-1])
    env = {**os.environ, "KB_DATA_DIR": str(data_dir), "KB_DB": index}
    dataset = Dataset(path.name, list(data.queries.items()), data.qrels)
    with KnowledgeBase(load_config(env=env), profile=Profile.SERVE) as eval_kb:
        collect(eval_kb, eval_kb.reader(), dataset, "rel_path", {})
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
    with KnowledgeBase(load_config(env={**os.environ, "KB_DATA_DIR": kb_dir})) as kb:
        conn = kb.reader()
        relevant = question_grades(Indexed.load(conn, questions), questions)
        dataset = Dataset(Path(path).stem, [(q.id, q.text) for q in questions], relevant)
        collect(kb, conn, dataset, "id", {q.id: q.variants for q in questions})
    cache.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(pickle.dumps(dataset))
    return dataset


def ranking(ev: dict, mode: str, with_variants: bool) -> list[int]:
    legs = ev["legs"]
    if mode != "hybrid":
        legs = {mode: legs[mode]}
    rankings = fusion.rankings_of(legs, 0)
    if with_variants:
        for number, found in enumerate(ev["variants"], start=1):
            chosen = found if mode == "hybrid" else {k: v for k, v in found.items() if k == mode}
            rankings += fusion.rankings_of(chosen, number)
    if mode != "hybrid" and len(rankings) == 1:
        return [c for c, _ in legs[mode].hits]
    return [c.chunk_id for c in fusion.fuse_rankings(rankings)]


def score(dataset: Dataset, mode: str, with_variants: bool = False) -> tuple[float, float, float]:
    n, m, h = [], [], []
    for qid, _ in dataset.queries:
        ev = dataset.evidence[qid]
        chunks = ranking(ev, mode, with_variants)
        docs = list(dict.fromkeys(ev["doc"].get(c, f"?{c}") for c in chunks))
        grades = dataset.relevant.get(qid, {})
        n.append(ndcg10(docs, grades))
        m.append(mrr10(docs, grades))
        h.append(float(any(grades.get(d, 0) > 0 for d in docs[:5])))
    return statistics.fmean(n), statistics.fmean(m), statistics.fmean(h)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--beir", nargs="*", default=[])
    parser.add_argument("--questions", nargs="*", default=[], help="FILE:KB_DATA_DIR")
    parser.add_argument("--solo", nargs="*", type=float, default=[0.0, 0.6, 0.7, 0.8])
    parser.add_argument("--solo-depth", nargs="*", type=int, default=[1, 3])
    parser.add_argument("--variant-weight", nargs="*", type=float, default=[0.5])
    args = parser.parse_args(argv)
    cache = args.data_dir / "phrasing-cache"
    datasets = [load_beir(args.data_dir, p, cache) for p in args.beir]
    datasets += [load_questions(spec, cache) for spec in args.questions]
    print(f"{'setting':<26}" + "".join(f"{d.name[:16]:>24}" for d in datasets))
    for mode in ("lexical", "vector"):
        cells = "".join(_cell(score(d, mode)) for d in datasets)
        print(f"{mode:<26}{cells}")
    grid = itertools.product(args.solo, args.solo_depth, args.variant_weight)
    for solo, depth, weight in grid:
        fusion.SOLO_SHARE, fusion.SOLO_DEPTH, fusion.VARIANT_WEIGHT = solo, depth, weight
        label = f"hybrid s={solo} d={depth}"
        print(f"{label:<26}" + "".join(_cell(score(d, "hybrid")) for d in datasets))
        if any(ev["variants"] for d in datasets for ev in d.evidence.values()):
            label = f"  +variants w={weight}"
            print(f"{label:<26}" + "".join(_cell(score(d, "hybrid", True)) for d in datasets))
    return 0


def _cell(values: tuple[float, float, float]) -> str:
    n, m, h = values
    return f"{n:>8.4f}/{m:.3f}/{h:.3f}"


if __name__ == "__main__":
    raise SystemExit(main())
