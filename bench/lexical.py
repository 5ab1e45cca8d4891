"""Ingest + lexical search benchmark, with ripgrep over the same files as the baseline.

    python -m bench lexical ../shared/data/md_argocd_docs ../shared/data/code_scrapy_py

Prints one table: ingest throughput, DB size, warm in-process lexical latency (p50/p95),
cold `kb search --mode lexical` as a fresh process, and `rg -c` for the same queries.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import harness
from kb_search.evaluate import percentile
from kb_search.ingest.executor import AddOptions
from kb_search.ingest.pipeline import add_paths
from kb_search.search.pipeline import SearchOptions, search
from kb_search.store import db

QUERIES = [
    "sync policy automated prune",
    "rbac policy csv default role",
    "sso dex oidc configuration",
    "application health check lua",
    "argocd app diff",
    "helm values file parameters",
    "cluster secret bearer token",
    "webhook github secret",
    "spider middleware process_request",
    "download delay autothrottle",
    "item pipeline process_item",
    "crawl spider rules link extractor",
    "http cache storage policy",
    "robots.txt obey",
    "feed exporter json lines",
    "retry middleware max retry times",
    "cookies middleware",
    "selector xpath css",
    "signal spider_closed",
    "twisted reactor deferred",
]


def run_rg(query: str, paths: list[Path]) -> float:
    # ripgrep has no ranking: the closest baseline is counting lines with any query word.
    pattern = "|".join(w for w in query.split() if len(w) > 2)
    t0 = time.perf_counter()
    subprocess.run(
        ["rg", "-c", "-i", "-e", pattern, *map(str, paths)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return (time.perf_counter() - t0) * 1000


def cold_search(data_dir: Path, query: str) -> float:
    env = dict(os.environ, KB_DATA_DIR=str(data_dir))
    kb = shutil.which("kb") or sys.executable
    args = [kb] if kb != sys.executable else [sys.executable, "-m", "kb_search"]
    t0 = time.perf_counter()
    out = subprocess.run(
        [*args, "search", query, "--mode", "lexical", "--format", "json"],
        env=env,
        capture_output=True,
    )
    elapsed = (time.perf_counter() - t0) * 1000
    if out.returncode != 0:
        raise SystemExit(f"kb search failed: {out.stderr.decode()}")
    return elapsed


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--repeat", type=int, default=20, help="warm runs per query")
    args = harness.parse(parser, argv)
    paths = [p.resolve() for p in args.paths]
    files = [f for p in paths for f in p.rglob("*") if f.is_file()]

    with tempfile.TemporaryDirectory(prefix="kb-bench-") as tmp:
        data_dir = Path(tmp)
        conn = db.connect(data_dir / "kb.db", create=True)
        with harness.timed() as ingest:
            summary = add_paths(conn, paths, AddOptions())
        ingest_s = ingest.seconds
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        db_mb = (data_dir / "kb.db").stat().st_size / 1e6
        docs = summary.added + summary.updated

        conn = db.connect(data_dir / "kb.db", readonly=True)
        warm = []
        for query in QUERIES:
            search(conn, query, SearchOptions(mode="lexical"))  # first touch
            for _ in range(args.repeat):
                warm.append(search(conn, query, SearchOptions(mode="lexical")).timings_ms["total"])
        conn.close()
        cold = [cold_search(data_dir, q) for q in QUERIES]
        rg = [run_rg(q, paths) for q in QUERIES] if shutil.which("rg") else []

    source_mb = sum(f.stat().st_size for f in files) / 1e6
    rows = [
        ("files found / indexed / failed", f"{len(files)} / {docs} / {len(summary.failed)}"),
        ("source size", f"{source_mb:.1f} MB"),
        ("chunks", f"{summary.chunks}"),
        ("ingest time", f"{ingest_s:.2f} s"),
        ("documents/s", f"{docs / ingest_s:.0f}"),
        ("chunks/s", f"{summary.chunks / ingest_s:.0f}"),
        ("DB size", f"{db_mb:.1f} MB ({db_mb / source_mb:.2f}x source)"),
        (
            "lexical warm p50 / p95 (in-process)",
            f"{percentile(warm, 50):.2f} / {percentile(warm, 95):.2f} ms",
        ),
        (
            "kb search cold p50 / p95 (fresh process)",
            f"{percentile(cold, 50):.0f} / {percentile(cold, 95):.0f} ms",
        ),
    ]
    if rg:
        rows.append(
            (
                "rg -c baseline p50 / p95 (fresh process)",
                f"{percentile(rg, 50):.0f} / {percentile(rg, 95):.0f} ms",
            )
        )
        rows.append(
            (
                "cold kb / rg (median ratio)",
                f"{statistics.median(c / r for c, r in zip(cold, rg)):.2f}x",
            )
        )
    harness.print_table(rows)
    print(
        f"\n{len(QUERIES)} queries, {args.repeat} warm runs each; python {sys.version.split()[0]}"
    )
