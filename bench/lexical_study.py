"""Lexical study: does the keyword leg rank better with proximity evidence or other field
weights, once fused with the vector leg?

For every query of each set: the vector leg and each chunk's document from bench/prf_study.py's
cache, then the lexical leg computed here, straight on the index's FTS5 table, several ways:

- terms: kb's leg (an OR of the query's words, BM25 with kb's column weights)
- pairs W: BM25 of the terms plus W x BM25 of the query's adjacent word pairs as phrases
  (a chunk holding "rate limit" beats one with "rate" here and "limit" there), scored over the
  terms' best candidates
- near W: the same with NEAR(a b, 4) groups instead of exact phrases
- weights T/P/H: other title/path/heading weights (body 1)

Each is fused with the vector leg by kb's convex fusion. Prints nDCG@10 / MRR@10 per set
(document level for BEIR, file level for question sets).

    python bench/lexical_study.py --cache DIR --data-dir BEIR_DATA_DIR \\
        --beir ../shared/data/scifact=INDEX_DB ... --questions eval/questions/docs-qa.jsonl:KB_DIR
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from fusion_study import convex_floor0  # noqa: E402
from prf_study import load, print_head, print_row, score, set_arguments  # noqa: E402

from kb_search.search.legs import BM25_WEIGHTS  # noqa: E402
from kb_search.search.query import STOPWORDS, parse_query  # noqa: E402
from kb_search.store.db import connect  # noqa: E402

DEPTH = 100
POOL = 300  # the terms' candidates the pair evidence may lift into the top DEPTH


def match(conn, expr: str, weights: tuple, limit: int) -> list[tuple[int, float]]:
    """(chunk id, -bm25) best first."""
    w = ",".join(str(x) for x in weights)
    rows = conn.execute(
        f"SELECT rowid, -bm25(chunks_fts,{w}) AS s FROM chunks_fts WHERE chunks_fts MATCH ?"
        " ORDER BY s DESC, rowid LIMIT ?",
        (expr, limit),
    ).fetchall()
    return [(int(c), float(s)) for c, s in rows]


def pairs(text: str, near: bool) -> str | None:
    words = [t.rstrip("*") for t in parse_query(text).terms]
    words = [w for w in words if w.lower() not in STOPWORDS and w]
    groups = []
    for a, b in zip(words, words[1:]):
        a, b = a.replace('"', '""'), b.replace('"', '""')
        groups.append(f'NEAR("{a}" "{b}", 4)' if near else f'"{a} {b}"')
    return " OR ".join(dict.fromkeys(groups)) or None


def lexical(conn, text: str, how: str) -> list[tuple[int, float, float]]:
    """kb's lexical evidence shape: (cid, squashed score, -bm25)."""
    expr = parse_query(text).fts_expression()
    if expr is None:
        return []
    weights = BM25_WEIGHTS
    if how.startswith("weights"):
        t, p, h = (float(x) for x in how.split()[1].split("/"))
        weights = (t, p, h, 1.0)
    if how.startswith(("pairs", "near")):
        terms = match(conn, expr, weights, POOL)
        extra_expr = pairs(text, how.startswith("near"))
        w = float(how.split()[1])
        scores = dict(terms)
        if extra_expr:
            ids = ",".join(str(c) for c, _ in terms)
            try:
                rows = conn.execute(
                    f"SELECT rowid, -bm25(chunks_fts,{','.join(map(str, weights))})"
                    f" FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid IN ({ids})",
                    (extra_expr,),
                ).fetchall()
            except Exception:  # noqa: BLE001 - a query FTS5 cannot parse as pairs
                rows = []
            for cid, s in rows:
                scores[cid] += w * s
        hits = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:DEPTH]
    else:
        hits = match(conn, expr, weights, DEPTH)
    return [(c, x / (1 + x), x) for c, x in hits]


METHODS = (
    "terms",
    "pairs 0.1",
    "pairs 0.25",
    "pairs 0.5",
    "near 0.1",
    "near 0.25",
    "weights 1/1/1",
    "weights 2/1/1.5",
    "weights 5/1.5/3",
)


def ranker(data: dict, conn, how: str, leg_only: bool):
    fuse = convex_floor0(0.5)

    def rank(qid: str, text: str) -> list[int]:
        lex = lexical(conn, text, how)
        if leg_only:
            return [c for c, *_ in lex]
        return fuse({"lexical": lex, "vector": data["q"][qid]["vector"], "doc": data["doc"]})

    return rank


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    set_arguments(parser)
    parser.add_argument("--only", nargs="*", help="methods to score (default: all)")
    args = parser.parse_args()
    sets = []
    for spec in args.beir:
        sets.append((load(spec, args.cache, False, args.data_dir), spec.partition("=")[2]))
    for spec in args.questions:
        db = str(Path(spec.partition(":")[2]) / "kb.db")
        sets.append((load(spec, args.cache, True), db))
    conns = [connect(db, readonly=True) for _, db in sets]
    print_head([d for d, _ in sets], 22)
    for leg_only in (True, False):
        for how in args.only or METHODS:
            values = [score(d, ranker(d, c, how, leg_only)) for (d, _), c in zip(sets, conns)]
            print_row(f"{'lexical' if leg_only else 'hybrid'} {how}", values, 22)


if __name__ == "__main__":
    main()
