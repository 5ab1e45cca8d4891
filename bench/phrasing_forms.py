"""Phrasing forms study: plain vs typed phrasings, and how a typed phrasing should weigh in
its other leg, measured on question sets.

Each question's legs (depth 100) are run once through kb's own code: the question's, and every
variant's in *both* legs (its `lex:`/`vec:` prefix stripped). The fusion is then replayed
offline with kb's own `fuse_rankings` and `promote_definitions` under each setting, and scored
at file level like `kb eval` (hit@1, MRR@10, nDCG@10, hit@5):

- `alone`: the question only (hybrid);
- `typed`: each variant in the leg its prefix names (as written in the question files);
- `plain`: each variant, prefix stripped, in both legs;
- `cross=C`: typed, and the variant in its other leg at C of its weight (kb's default is
  `search.fusion.CROSS_SHARE`).

    python -m bench phrasing_forms eval/questions/docs-qa-md.jsonl:KBDIR ... [--cross 0.2 0.35]

Legs are cached in `--cache DIR` (default /tmp/kb-phrasing-forms) per questions file and index.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import pickle
import statistics
from pathlib import Path

from kb_search.config import load_config
from kb_search.knowledge_base import KnowledgeBase
from kb_search.search import fusion
from kb_search.search.fusion import Ranking
from kb_search.search.legs import lexical_leg, vector_leg
from kb_search.search.query import parse_query, parse_variants


def collect(kb: KnowledgeBase, questions, k: int = 100) -> dict:
    from kb_search.evaluate.questions import Indexed
    from kb_search.search.pipeline import identifier_terms, prepare, retrieve

    conn = kb.reader()
    leg = kb.vector_leg()
    indexed = Indexed.load(conn, questions)
    out = {}
    for q in questions:
        options = kb.search_options(mode="hybrid", top=10, snippets=False, variants=q.variants)
        query = prepare(conn, q.text, options)
        legs = retrieve(conn, query, options, leg.search, leg.unavailable, {})
        variants = []
        for phrasing in parse_variants(q.variants):
            parsed = parse_query(phrasing.text)
            found = {
                "lexical": lexical_leg(conn, parsed, query.filters, k, query.excluded),
                "vector": vector_leg(
                    conn, parsed, query.filters, k, leg.search, leg.unavailable, {},
                    query.excluded,
                ),
            }  # fmt: skip
            variants.append((phrasing.use, found))
        grades: dict[int, int] = {}
        for t in q.targets:
            for doc in indexed.documents.get(t.path, ()):
                grades[doc] = max(grades.get(doc, 0), t.grade)
        out[q.id] = {
            "legs": legs,
            "variants": variants,
            "grades": grades,
            "idents": identifier_terms(query),
            "plain_idents": identifier_terms(query),  # refined below when scoring
        }
    return out


def rankings(ev: dict, form: str, cross: float = 0.0) -> list[Ranking]:
    found = fusion.rankings_of(ev["legs"], 0)
    for number, (use, legs) in enumerate(ev["variants"], start=1):
        weight = fusion.VARIANT_WEIGHT
        for name, result in legs.items():
            share = fusion.LEG_WEIGHTS[name]
            if form == "plain" or use in ("both", name):
                found.append(Ranking(number, name, result, weight * share))
            elif form == "cross" and cross > 0:
                found.append(Ranking(number, name, result, weight * share * cross))
            elif form in ("lexcross", "veccross") and cross > 0:
                # lexcross: only a lex: phrasing enters the vector leg; veccross: the reverse
                crossing = {"lexcross": "lexical", "veccross": "vector"}[form]
                share *= cross if use == crossing else 0.0
                found.append(Ranking(number, name, result, weight * share))
    return found


def score(conn, data: dict, form: str, cross: float = 0.0) -> dict[str, float]:
    from kb_search.search.shaping import promote_definitions

    sums = {"hit@1": [], "mrr@10": [], "ndcg@10": [], "hit@5": []}
    for ev in data.values():
        chosen = fusion.rankings_of(ev["legs"], 0) if form == "alone" else rankings(ev, form, cross)
        fused = fusion.fuse_rankings(chosen)
        fused = adjust(conn, fused, 1 + len(ev["variants"]))
        fused = promote_definitions(conn, fused, ev["idents"])
        docs = list(dict.fromkeys(_doc(conn, c.chunk_id) for c in fused[:60]))
        grades = ev["grades"]
        gains = [grades.get(d, 0) for d in docs[:10]]
        first = next((i for i, g in enumerate(gains) if g > 0), None)
        ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:10]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
        sums["hit@1"].append(float(first == 0))
        sums["hit@5"].append(float(first is not None and first < 5))
        sums["mrr@10"].append(0.0 if first is None else 1 / (first + 1))
        sums["ndcg@10"].append(dcg / idcg if idcg else 0.0)
    return {k: statistics.fmean(v) for k, v in sums.items()}


AGREE = 0.0  # experimental: bonus per share of phrasings ranking a chunk in their top 10
FILE = 0.0  # experimental: a file's best chunk gains this share of its second best


def adjust(conn, fused, phrasings: int):
    if not AGREE and not FILE:
        return fused
    for c in fused:
        if AGREE:
            agree = {p for p, _, rank in c.found_by if rank <= 10}
            c.score += AGREE * len(agree) / phrasings
    if FILE:
        seen: dict[int, list] = {}
        for c in fused:
            seen.setdefault(_doc(conn, c.chunk_id), []).append(c)
        for chunks in seen.values():
            chunks.sort(key=lambda c: -c.score)
            if len(chunks) > 1:
                chunks[0].score += FILE * chunks[1].score
    fused.sort(key=lambda c: (-c.score, c.chunk_id))
    return fused


_DOCS: dict[tuple[int, int], int] = {}


def _doc(conn, chunk_id: int) -> int:
    key = (id(conn), chunk_id)
    if key not in _DOCS:
        from kb_search.store.retrieval import chunk_owners

        _DOCS[key] = chunk_owners(conn, [chunk_id]).get(chunk_id, -chunk_id)
    return _DOCS[key]


def load(spec: str, cache: Path):
    from kb_search.evaluate.questions import load_questions

    path, _, kb_dir = spec.partition(":")
    digest = hashlib.sha256(f"{Path(path).resolve()}:{Path(kb_dir).resolve()}".encode())
    cached = cache / f"{Path(path).stem}-{digest.hexdigest()[:8]}.pkl"
    kb = KnowledgeBase(load_config(env={**os.environ, "KB_DATA_DIR": kb_dir}))
    if cached.exists():
        return Path(path).stem, kb, pickle.loads(cached.read_bytes())
    data = collect(kb, load_questions(Path(path)))
    cache.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(pickle.dumps(data))
    return Path(path).stem, kb, data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("questions", nargs="+", help="FILE:KB_DATA_DIR")
    parser.add_argument("--cross", nargs="*", type=float, default=[0.1, 0.2, 0.35, 0.5])
    parser.add_argument("--variant-weight", nargs="*", type=float, default=[fusion.VARIANT_WEIGHT])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/kb-phrasing-forms"))
    parser.add_argument("--agree", nargs="*", type=float, default=[0.0])
    parser.add_argument("--file", nargs="*", type=float, default=[0.0])
    args = parser.parse_args(argv)
    sets = [load(spec, args.cache) for spec in args.questions]
    print(f"{'setting':<34}" + "".join(f"{name[:30]:>34}" for name, _, _ in sets))
    print(f"{'':<34}" + "".join(f"{'hit@1  mrr10  ndcg10  hit@5':>34}" for _ in sets))
    import itertools

    global AGREE, FILE
    for weight, AGREE, FILE in itertools.product(args.variant_weight, args.agree, args.file):
        fusion.VARIANT_WEIGHT = weight
        forms = [("alone", 0.0), ("typed", 0.0), ("plain", 0.0)]
        forms += [(f, c) for f in ("cross", "lexcross", "veccross") for c in args.cross]
        for form, cross in forms:
            label = f"{form}{'=' + str(cross) if 'cross' in form else ''} w={weight}"
            label += f" a={AGREE} f={FILE}"
            cells = []
            for _, kb, data in sets:
                s = score(kb.reader(), data, form, cross)
                keys = ("hit@1", "mrr@10", "ndcg@10", "hit@5")
                cells.append("  ".join(f"{s[k]:.3f}" for k in keys))
            print(f"{label:<34}" + "".join(f"{c:>34}" for c in cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
