"""Hybrid query latency on an existing kb database, warm (in-process) and cold (fresh process).

    python -m bench hybrid DB_PATH QUERIES.jsonl [--n 100]

DB_PATH is any kb database with vectors, e.g. the SciFact index that
`kb eval ../shared/data/scifact` leaves in <data_dir>/eval/. QUERIES.jsonl is BEIR-style
({"text": ...} per line). Prints one table; lexical-only and the two vector paths
(sqlite-vec KNN vs an in-memory numpy matrix) are measured in the same run as baselines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench import harness
from kb_search.evaluate import percentile
from kb_search.models.embedders import load_embedder
from kb_search.search.pipeline import SearchOptions, search
from kb_search.store import db
from kb_search.store.vectors import table_for
from kb_search.vectors.exact import SqliteVecIndex
from kb_search.vectors.index import VectorSearch
from kb_search.vectors.matrix import MatrixIndex


def warm(conn, queries, mode, vector=None) -> list[float]:
    out = []
    for q in queries:
        t0 = time.perf_counter()
        search(conn, q, SearchOptions(mode=mode), vector=vector)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def cold(db_path: Path, queries: list[str], mode: str, env: dict) -> list[float]:
    out = []
    for q in queries:
        t0 = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "kb_search",
                "--db",
                str(db_path),
                "search",
                q,
                "--mode",
                mode,
                "--format",
                "json",
            ],
            env=env,
            capture_output=True,
        )
        out.append((time.perf_counter() - t0) * 1000)
        if done.returncode != 0:
            raise SystemExit(done.stderr.decode())
    return out


def import_cost(env: dict) -> dict[str, float]:
    code = (
        "import time; t=time.perf_counter(); import kb_search.cli; a=time.perf_counter();"
        "import onnxruntime, tokenizers, numpy; b=time.perf_counter();"
        "print(a-t, b-a)"
    )
    runs = [
        [
            float(x)
            for x in subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True
            ).stdout.split()
        ]
        for _ in range(5)
    ]
    return {
        "kb_search.cli": sorted(r[0] for r in runs)[2] * 1000,
        "onnxruntime+tokenizers+numpy": sorted(r[1] for r in runs)[2] * 1000,
    }


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("db", type=Path)
    parser.add_argument("queries", type=Path)
    parser.add_argument("--n", type=int, default=100, help="queries for warm runs")
    parser.add_argument("--cold", type=int, default=15, help="queries for cold runs")
    parser.add_argument("--model-cache", type=Path, default=None)
    args = harness.parse(parser, argv)
    queries = [json.loads(line)["text"] for line in args.queries.open() if line.strip()][: args.n]

    from kb_search.config import load_config

    env = dict(os.environ)
    if args.model_cache:
        env["KB_MODEL_CACHE"] = str(args.model_cache)
    config = load_config(env=env)
    conn = db.connect(args.db, readonly=True)
    model = db.get_meta(conn, "model_name")
    table = table_for(conn, model)
    dim = table.dim
    chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    t0 = time.perf_counter()
    embedder = load_embedder(config, model)
    load_ms = (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    matrix = MatrixIndex.open(conn, table)
    matrix_ms = (time.perf_counter() - t0) * 1000
    sqlite_vec = VectorSearch(embedder, SqliteVecIndex(table))
    in_memory = VectorSearch(embedder, matrix)
    warm(conn, queries[:5], "hybrid", sqlite_vec)  # first touch

    rows = []

    def add(name: str, values: list[float]) -> None:
        rows.append((name, f"{percentile(values, 50):.1f}", f"{percentile(values, 95):.1f}"))

    add("lexical warm", warm(conn, queries, "lexical"))
    add("vector warm (sqlite-vec KNN)", warm(conn, queries, "vector", sqlite_vec))
    add("vector warm (numpy matrix)", warm(conn, queries, "vector", in_memory))
    add("hybrid warm (sqlite-vec KNN)", warm(conn, queries, "hybrid", sqlite_vec))
    add("hybrid warm (numpy matrix)", warm(conn, queries, "hybrid", in_memory))
    conn.close()
    add("kb search --mode lexical cold", cold(args.db, queries[: args.cold], "lexical", env))
    add("kb search (hybrid) cold", cold(args.db, queries[: args.cold], "hybrid", env))
    costs = import_cost(env)

    print(f"DB: {args.db} ({chunks} chunks, model {model}, {dim} dims)")
    print(f"{'path':<34} {'p50 ms':>8} {'p95 ms':>8}")
    for name, p50, p95 in rows:
        print(f"{name:<34} {p50:>8} {p95:>8}")
    print(f"\nembedder load {load_ms:.0f} ms; matrix load {matrix_ms:.0f} ms")
    for name, ms in costs.items():
        print(f"import {name}: {ms:.0f} ms (median of 5)")
