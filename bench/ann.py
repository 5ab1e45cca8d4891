"""Exact vs approximate nearest-neighbour search at 100k / 300k / 1M x 384 vectors.

    # once: real seed embeddings made by kb (SciFact through `kb eval`, plus any kb DB)
    kb --data-dir /tmp/h-ann/kb eval /work/shared/data/scifact --mode vector
    python -m bench ann prepare --kb-data-dir /tmp/h-ann/kb \\
        --scifact /work/shared/data/scifact --extra-db /tmp/h-ann/kb/kb.db
    # the measurements (scratch under --work; nothing is written into the repository)
    python -m bench ann run --sizes 100k,300k,1m
    python -m bench ann real          # recall on the real SciFact vectors + 300 real queries

Data (see ann_data.Generator): points drawn around ~14k real all-MiniLM-L6-v2 passage
embeddings — a random seed, moved part of the way towards one of its 10 nearest seeds, plus
Gaussian noise in the seeds' top-64 principal subspace scaled by the seeds' own spread along each
direction (anisotropic like the real data), plus a little isotropic noise; unit length. Queries
come from the same generator with twice the noise, held out (never in the indexed set). Sizes are
prefixes of one generated 1M set. The noise levels were calibrated with `real`: local intrinsic
dimensionality and neighbour similarities of the generated set match SciFact's (a little harder).

Every candidate runs in two fresh processes per size, so that memory numbers are its own:
  build: build with 2 threads, save to disk, then on the live index append 10k vectors, remove
         1% of the ids and add them back with new vectors (kb re-ingesting documents), and the
         recall@10 after those updates against exact search over the updated set;
  query: load from disk (warm page cache), RSS before/after, then one query at a time on one
         thread: p50/p95 at k=10 and k=100 per search-effort setting (ef / nprobe), recall@10
         and @100 against exact; real SciFact queries against the generated set; filtered
         search with 1% and 20% of the ids allowed (native filter where the library has one,
         else post-filtering).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import ann_data, ann_libs, harness

WORK = Path("/tmp/h-ann/ann")
SQLITE_VEC_QUERIES = 100
SEEDS = Path("/tmp/h-ann/seed")
UPDATE_EFFORT = {"hnswlib": 128, "usearch": 128, "faiss-hnsw": 128, "faiss-ivf": 32}
FILTER_EFFORT = {
    "hnswlib": [128, 512],
    "usearch": [128, 512],
    "faiss-hnsw": [128, 512],
    "faiss-ivf": [16, 64],
}
DEFAULT_CONFIGS = [
    "numpy-exact",
    "sqlite-vec",
    "hnswlib:M=16,ef_construction=200",
    "hnswlib:M=32,ef_construction=200",
    "usearch:M=16,ef_construction=200",
    "usearch:M=32,ef_construction=200",
    "usearch:M=16,ef_construction=200,dtype=f16",
    "faiss-hnsw:M=16,ef_construction=200",
    "faiss-hnsw:M=32,ef_construction=200",
    "faiss-ivf:nlist=auto",
    "faiss-ivf:nlist=auto,pq=48",
]


# ---- helpers --------------------------------------------------------------------------------


def rss_mb(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def parse_size(text: str) -> int:
    text = text.strip().lower()
    factor = {"k": 1_000, "m": 1_000_000}.get(text[-1], 1)
    return int(float(text.rstrip("km")) * factor)


def parse_config(spec: str, size: int) -> tuple[str, dict[str, Any]]:
    name, _, rest = spec.partition(":")
    params: dict[str, Any] = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        params[key] = value if not value.lstrip("-").isdigit() else int(value)
    if params.get("nlist") == "auto":
        # ~4 sqrt(n) lists, a power of two: the usual IVF rule of thumb
        params["nlist"] = 2 ** round(np.log2(4 * np.sqrt(size)))
    return name, params


def percentiles(samples: list[float]) -> tuple[float, float]:
    return float(np.percentile(samples, 50)), float(np.percentile(samples, 95))


class Stopwatch:
    """Wall time and this process's CPU time (all its threads) of a block.

    The machine these numbers come from is shared (load average ~12 on 2 cores while they were
    taken): CPU time is the figure that contention barely moves, wall time is what a user saw."""

    def __enter__(self) -> Stopwatch:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *_: object) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


def timed_searches(search: Any, queries: np.ndarray, k: int) -> tuple[list[np.ndarray], dict]:
    """Results, and p50/p95 of CPU ms and p50 of wall ms per query."""
    for q in queries[:20]:  # warm-up: caches, lazy allocations
        search(q, k)
    found, wall, cpu = [], [], []
    for q in queries:
        with Stopwatch() as watch:
            found.append(search(q, k))
        wall.append(watch.wall * 1000)
        cpu.append(watch.cpu * 1000)
    p50, p95 = percentiles(cpu)
    return found, {"p50": p50, "p95": p95, "wall_p50": percentiles(wall)[0]}


# ---- worker phases (each in its own process) ------------------------------------------------


def phase_build(name: str, params: dict[str, Any], size: int, folder: Path) -> dict[str, Any]:
    files = ann_data.generate(SEEDS / "seeds.npy", WORK / "data", size, 1000)
    base = np.ascontiguousarray(np.load(files["base"], mmap_mode="r")[:size])
    extra = np.load(files["extra"])
    queries = np.load(files["queries"])[:500]
    index = ann_libs.make(name, params)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    rss_data = rss_mb()
    with Stopwatch() as build:
        index.build(base, 2, folder)
    with Stopwatch() as save:
        index.save(folder)
    out: dict[str, Any] = {
        "build_s": build.wall,
        "build_cpu_s": build.cpu,
        "save_s": save.wall,
        "disk_mb": ann_libs.file_bytes(folder) / 2**20,
        "build_peak_mb": rss_mb("VmHWM") - rss_data,
    }
    # Updates on the live index (the saved files are not touched again).
    appended = np.arange(size, size + len(extra) // 2)
    with Stopwatch() as watch:
        index.add(appended, extra[: len(appended)])
    out["append_10k_s"], out["append_10k_cpu_s"] = watch.wall, watch.cpu
    rng = np.random.default_rng(7)
    reused = np.sort(rng.choice(size, min(size // 100, len(extra) - len(appended)), replace=False))
    with Stopwatch() as watch:
        out["remove_supported"] = index.remove(reused)
    out["remove_1pct_s"], out["remove_1pct_cpu_s"] = watch.wall, watch.cpu
    final = np.concatenate([base, extra[: len(appended)]])
    if out["remove_supported"]:
        fresh = extra[len(appended) : len(appended) + len(reused)]
        with Stopwatch() as watch:
            index.replace(reused, fresh)
        out["readd_1pct_s"], out["readd_1pct_cpu_s"] = watch.wall, watch.cpu
        final[reused] = fresh
    truth, _ = ann_data.exact_topk(final, queries, 10)
    effort = UPDATE_EFFORT.get(name)
    if effort is not None:
        index.tune(effort)
    found = [index.search(q, 10) for q in queries]
    out["recall10_after_updates"] = ann_data.recall(found, truth, 10)
    out["update_effort"] = effort
    return out


def reference_timing(queries: np.ndarray) -> dict[str, float]:
    """A fixed workload timed inside every query process, to compare runs taken under
    different machine load: exact search over 22k x 384 (the SciFact eval index's size)."""
    matrix = np.random.default_rng(1).standard_normal((22_000, 384), dtype=np.float32)
    _, timing = timed_searches(lambda q, k: ann_libs.top_rows(matrix @ q, k), queries[:200], 10)
    return timing


def phase_query(
    name: str, params: dict[str, Any], size: int, folder: Path, n_queries: int, n_filtered: int
) -> dict[str, Any]:
    files = ann_data.generate(SEEDS / "seeds.npy", WORK / "data", size, 1000)
    if name == "sqlite-vec":
        # Exact, so recall needs no large sample; and each query is a full scan in SQLite.
        n_queries, n_filtered = min(n_queries, SQLITE_VEC_QUERIES), min(n_filtered, 50)
        # Its filtered search reads every allowed vector back by rowid: 200k per query at 1M
        # and 20% (that phase had not finished after 45 CPU minutes); a few queries tell.
        n_filtered = n_filtered if size <= 300_000 else min(n_filtered, 5)
    queries = np.load(files["queries"])[:n_queries]
    truth = ann_data.ground_truth(
        files["base"], size, queries, 100, WORK / f"truth-{size}-{len(queries)}.npy"
    )
    real_queries = np.load(SEEDS / "scifact_queries.npy")
    real_truth = ann_data.ground_truth(
        files["base"], size, real_queries, 10, WORK / f"truth-real-{size}.npy"
    )
    index = ann_libs.make(name, params)
    gc.collect()
    rss_before = rss_mb()
    with Stopwatch() as load:
        index.load(folder)
    out: dict[str, Any] = {
        "load_s": load.wall,
        "load_cpu_s": load.cpu,
        "rss_index_mb": rss_mb() - rss_before,
        "sweep": [],
    }
    out["loadavg_start"] = os.getloadavg()[0]
    out["reference"] = reference_timing(queries)
    for effort in index.sweep:
        index.tune(effort)
        found10, ms10 = timed_searches(index.search, queries, 10)
        found100, ms100 = timed_searches(index.search, queries, 100)
        real_found = [index.search(q, 10) for q in real_queries]
        out["sweep"].append(
            {
                "effort": effort,
                "k10": ms10,
                "recall10": ann_data.recall(found10, truth, 10),
                "k100": ms100,
                "recall100": ann_data.recall(found100, truth, 100),
                "real_recall10": ann_data.recall(real_found, real_truth, 10),
            }
        )
    out["rss_after_queries_mb"] = rss_mb() - rss_before
    out["loadavg_end"] = os.getloadavg()[0]
    out["filtered"] = filtered_runs(index, name, size, files, queries[:n_filtered])
    if name == "usearch":
        del index
        gc.collect()
        out["view"] = measure_view(params, folder, queries, truth)
    return out


def measure_view(
    params: dict[str, Any], folder: Path, queries: np.ndarray, truth: np.ndarray
) -> dict[str, Any]:
    """usearch can serve a saved index memory-mapped: what a one-shot CLI process would do."""
    rss_before = rss_mb()
    index = ann_libs.make("usearch", {**params, "view": True})
    with Stopwatch() as load:
        index.load(folder)
    rss_loaded = rss_mb() - rss_before
    index.tune(UPDATE_EFFORT["usearch"])
    with Stopwatch() as first:
        index.search(queries[0], 10)
    found, ms = timed_searches(index.search, queries, 10)
    return {
        "load_s": load.wall,
        "rss_loaded_mb": rss_loaded,
        "first_query_ms": first.wall * 1000,
        "effort": UPDATE_EFFORT["usearch"],
        "k10": ms,
        "recall10": ann_data.recall(found, truth, 10),
        "rss_after_queries_mb": rss_mb() - rss_before,
    }


def filtered_runs(
    index: Any, name: str, size: int, files: dict[str, Path], queries: np.ndarray
) -> list[dict[str, Any]]:
    rng = np.random.default_rng(11)
    base = np.load(files["base"], mmap_mode="r")
    runs = []
    for fraction in (0.01, 0.2):
        allowed = ann_libs.Allowed.of(rng.choice(size, int(size * fraction), replace=False), size)
        subset = np.ascontiguousarray(base[allowed.ids])
        rows, _ = ann_data.exact_topk(subset, queries, 100)
        truth = allowed.ids[rows]
        del subset
        methods = [("native", index.filtered)] if index.native_filter else []
        if name not in ("numpy-exact", "sqlite-vec"):
            methods.append(
                ("post-filter", lambda q, k, a: ann_libs.post_filter(index.search, q, k, a, 4096))
            )
        for method, call in methods:
            for effort in FILTER_EFFORT.get(name, [0]):
                index.tune(effort)
                found, ms = timed_searches(
                    lambda q, k, call=call, allowed=allowed: call(q, k, allowed), queries, 100
                )
                runs.append(
                    {
                        "fraction": fraction,
                        "method": method,
                        "effort": effort,
                        "ms": ms,
                        "recall10": ann_data.recall(found, truth, 10),
                        "recall100": ann_data.recall(found, truth, 100),
                    }
                )
    return runs


# ---- driver ---------------------------------------------------------------------------------


def run_worker(argv: list[str]) -> dict[str, Any]:
    cmd = harness.again("ann", "worker", *argv)
    # Builds get 2 threads (each library is told so); searches run on one, BLAS included.
    threads = "2" if argv[0] == "build" else "1"
    env = harness.child_env(
        OMP_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads, MKL_NUM_THREADS=threads
    )
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(spec: str, size: int, args: argparse.Namespace) -> dict[str, Any]:
    name, params = parse_config(spec, size)
    folder = args.work / "index" / f"{size}-{ann_libs.label(name, params)}"
    common = [
        "--name",
        name,
        "--params",
        json.dumps(params),
        "--size",
        str(size),
        "--folder",
        str(folder),
        "--work",
        str(args.work),
    ]
    result: dict[str, Any] = {
        "size": size,
        "name": name,
        "params": params,
        "label": ann_libs.label(name, params),
    }
    if args.reuse and (folder / "build.json").exists() and len(list(folder.iterdir())) > 1:
        result["build"] = json.loads((folder / "build.json").read_text())
    else:
        result["build"] = run_worker(["build", *common])
        if "error" not in result["build"]:
            (folder / "build.json").write_text(json.dumps(result["build"]))
    if "error" not in result["build"]:
        result["query"] = run_worker(
            ["query", *common, "--queries", str(args.queries), "--filtered", str(args.filtered)]
        )
    if not args.keep_indexes:
        for path in folder.glob("*"):
            if path.is_dir():
                shutil.rmtree(path)
            elif path.name != "build.json":
                path.unlink()
    return result


def ms(t: dict[str, float]) -> str:
    return f"{t['p50']:.2f} / {t['p95']:.2f} ({t['wall_p50']:.1f})"


def print_tables(results: list[dict[str, Any]]) -> None:
    """Markdown tables. Times: CPU p50 / p95 (wall p50 in brackets); see Stopwatch."""
    for size in sorted({r["size"] for r in results}):
        rows = [r for r in results if r["size"] == size]
        print(f"\n## {size:,} vectors x 384\n")
        print(
            "Query times in ms: CPU p50 / p95 (wall p50), one query at a time, one thread. "
            "Build: CPU s (wall s), 2 threads. RAM: RSS growth of the process on load.\n"
        )
        print(
            "| index | build s | disk MB | RAM MB | load s | effort | k=10 ms | R@10 "
            "| k=100 ms | R@100 | R@10 real q |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            b, q = r["build"], r.get("query", {})
            if "error" in b or "error" in q:
                print(f"| {r['label']} | error: {b.get('error') or q.get('error')} |")
                continue
            for i, s in enumerate(q["sweep"]):
                head = (
                    f"| {r['label']} | {b['build_cpu_s']:.0f} ({b['build_s']:.0f}) "
                    f"| {b['disk_mb']:.0f} | {q['rss_index_mb']:.0f} | {q['load_s']:.2f}"
                    if i == 0
                    else "| | | | |"
                )
                print(
                    f"{head} | {s['effort'] or '-'} | {ms(s['k10'])} | {s['recall10']:.3f} "
                    f"| {ms(s['k100'])} | {s['recall100']:.3f} | {s['real_recall10']:.3f} |"
                )
        print(f"\n### updates at {size:,}: append 10k; remove 1% of ids; add them back\n")
        print("CPU s (wall s); recall@10 afterwards against exact search over the updated set.\n")
        print("| index | append 10k | remove 1% | re-add 1% | R@10 after (effort) |")
        print("|---|---:|---:|---:|---:|")
        for r in rows:
            b = r["build"]
            if "error" in b:
                continue
            if b["remove_supported"]:
                removal = (
                    f"{b['remove_1pct_cpu_s']:.2f} ({b['remove_1pct_s']:.2f}) "
                    f"| {b['readd_1pct_cpu_s']:.2f} ({b['readd_1pct_s']:.2f})"
                )
            else:
                removal = "not supported | -"
            print(
                f"| {r['label']} | {b['append_10k_cpu_s']:.2f} ({b['append_10k_s']:.2f}) "
                f"| {removal} | {b['recall10_after_updates']:.3f} ({b['update_effort'] or '-'}) |"
            )
        views = [r for r in rows if "view" in r.get("query", {})]
        if views:
            print(f"\n### usearch served memory-mapped (view) at {size:,}\n")
            print(
                "| index | open s | RSS after open MB | first query wall ms | effort "
                "| k=10 ms | R@10 | RSS after 520 queries MB |"
            )
            print("|---|---:|---:|---:|---:|---:|---:|---:|")
            for r in views:
                v = r["query"]["view"]
                print(
                    f"| {r['label']} | {v['load_s']:.3f} | {v['rss_loaded_mb']:.0f} "
                    f"| {v['first_query_ms']:.2f} | {v['effort']} | {ms(v['k10'])} "
                    f"| {v['recall10']:.3f} | {v['rss_after_queries_mb']:.0f} |"
                )
        print(f"\n### filtered search at {size:,} (k=100, random allowed subsets)\n")
        print("| index | allowed | method | effort | ms | R@10 | R@100 |")
        print("|---|---:|---|---:|---:|---:|---:|")
        for r in rows:
            for f in r.get("query", {}).get("filtered", []):
                print(
                    f"| {r['label']} | {f['fraction']:.0%} | {f['method']} "
                    f"| {f['effort'] or '-'} | {ms(f['ms'])} | {f['recall10']:.3f} "
                    f"| {f['recall100']:.3f} |"
                )


def command_run(args: argparse.Namespace) -> None:
    configs = args.configs.split(";") if args.configs else DEFAULT_CONFIGS
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    args.work.mkdir(parents=True, exist_ok=True)
    ann_data.generate(SEEDS / "seeds.npy", args.work / "data", max(sizes), 1000)
    results = []
    log = args.work / f"results-{args.log}.jsonl"
    for size in sizes:
        for spec in configs:
            if spec.startswith("sqlite-vec") and size > args.vec0_max:
                continue
            t0 = time.perf_counter()
            result = measure(spec, size, args)
            print(
                f"  {size:,} {result['label']}: {time.perf_counter() - t0:.0f} s "
                f"{result['build'].get('error') or result.get('query', {}).get('error') or ''}",
                file=sys.stderr,
                flush=True,
            )
            results.append(result)
            with log.open("a") as fh:
                fh.write(json.dumps(result) + "\n")
    print_tables(results)


def command_table(args: argparse.Namespace) -> None:
    """Print the tables again from the results a run logged (the last result per size+label)."""
    latest: dict[tuple[int, str], dict[str, Any]] = {}
    logs = sorted(args.work.glob("results-*.jsonl"), key=lambda p: p.stat().st_mtime)
    for line in (line for log in logs for line in log.read_text().splitlines()):
        result = json.loads(line)
        key = (result["size"], result["label"])
        failed = "error" in result["build"] or "error" in result.get("query", {})
        if not failed or key not in latest:
            latest[key] = result
    print_tables(list(latest.values()))


def command_worker(args: argparse.Namespace) -> None:
    params = json.loads(args.params)
    if args.phase == "build":
        out = phase_build(args.name, params, args.size, args.folder)
    else:
        out = phase_query(args.name, params, args.size, args.folder, args.queries, args.filtered)
    print(json.dumps(out))


def command_real(args: argparse.Namespace) -> None:
    """Recall on real vectors: SciFact chunks with the 300 test queries, next to a generated set
    of the same size with generated queries, and the neighbour profile of both."""
    real = np.load(SEEDS / "scifact_chunks.npy")
    real_q = np.load(SEEDS / "scifact_queries.npy")
    gen = ann_data.Generator.fit(np.load(SEEDS / "seeds.npy"))
    rng = np.random.default_rng(3)
    fake = gen.sample(len(real), ann_data.PASSAGE_SPREAD, rng)
    fake_q = gen.sample(len(real_q), ann_data.QUERY_SPREAD, rng)
    sets = {"real SciFact": (real, real_q), "generated": (fake, fake_q)}
    print(f"\n## sanity check: {len(real):,} SciFact chunk vectors, {len(real_q)} real queries\n")
    print("| set | sim@1 | sim@10 | sim@100 | LID queries | LID points |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, (base, queries) in sets.items():
        p = ann_data.neighbour_profile(base, queries)
        print(
            f"| {label} | {p['sim@1']:.3f} | {p['sim@10']:.3f} | {p['sim@100']:.3f} "
            f"| {p['lid_queries']:.1f} | {p['lid_points']:.1f} |"
        )
    configs = (
        args.configs.split(";")
        if args.configs
        else [
            "hnswlib:M=16,ef_construction=200",
            "usearch:M=16,ef_construction=200",
            "faiss-hnsw:M=16,ef_construction=200",
            "faiss-ivf:nlist=auto",
        ]
    )
    print("\n| index | effort | R@10 real | R@10 generated | R@100 real | R@100 generated |")
    print("|---|---:|---:|---:|---:|---:|")
    folder = args.work / "real"
    for spec in configs:
        name, params = parse_config(spec, len(real))
        per_set: dict[str, Any] = {}
        for label, (base, queries) in sets.items():
            truth, _ = ann_data.exact_topk(base, queries, 100)
            index = ann_libs.make(name, params)
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            index.build(base, 2, folder)
            per_set[label] = []
            for effort in index.sweep[:4]:
                index.tune(effort)
                f10 = [index.search(q, 10) for q in queries]
                f100 = [index.search(q, 100) for q in queries]
                per_set[label].append(
                    (effort, ann_data.recall(f10, truth, 10), ann_data.recall(f100, truth, 100))
                )
        for (effort, r10, r100), (_, g10, g100) in zip(
            per_set["real SciFact"], per_set["generated"]
        ):
            print(
                f"| {ann_libs.label(name, params)} | {effort} | {r10:.3f} | {g10:.3f} "
                f"| {r100:.3f} | {g100:.3f} |"
            )


def main(argv: list[str] | None = None) -> None:
    global WORK
    parser = harness.parser(__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare", help="extract seed vectors from kb databases")
    prep.add_argument("--kb-data-dir", type=Path, required=True)
    prep.add_argument("--scifact", type=Path, required=True)
    prep.add_argument("--extra-db", type=Path, action="append", default=[])
    run = sub.add_parser("run", help="measure every candidate at each size")
    run.add_argument("--sizes", default="100k,300k,1m")
    run.add_argument(
        "--configs", help="';'-separated specs, e.g. 'hnswlib:M=16,ef_construction=200'"
    )
    run.add_argument("--queries", type=int, default=500)
    run.add_argument("--filtered", type=int, default=200, help="queries per filtered run")
    run.add_argument("--vec0-max", type=int, default=300_000, help="largest size for sqlite-vec")
    run.add_argument("--reuse", action="store_true", help="reuse saved indexes and build results")
    run.add_argument("--keep-indexes", action="store_true")
    run.add_argument(
        "--log", default="main", help="results go to <work>/results-<log>.jsonl (parallel runs)"
    )
    real = sub.add_parser("real", help="recall on real SciFact vectors vs generated ones")
    real.add_argument("--configs")
    for p in (run, real):
        p.add_argument("--work", type=Path, default=WORK)
    table = sub.add_parser("table", help="print the tables from the logged results")
    table.add_argument("--work", type=Path, default=WORK)
    worker = sub.add_parser("worker")
    worker.add_argument("phase", choices=["build", "query"])
    worker.add_argument("--name", required=True)
    worker.add_argument("--params", required=True)
    worker.add_argument("--size", type=int, required=True)
    worker.add_argument("--folder", type=Path, required=True)
    worker.add_argument("--queries", type=int, default=500)
    worker.add_argument("--filtered", type=int, default=200)
    worker.add_argument("--work", type=Path, default=WORK)
    args = harness.parse(parser, argv)
    WORK = getattr(args, "work", WORK)
    if args.command == "prepare":
        ann_data.prepare_seeds(args.kb_data_dir, args.scifact, args.extra_db, SEEDS)
    elif args.command == "run":
        command_run(args)
    elif args.command == "real":
        command_real(args)
    elif args.command == "table":
        command_table(args)
    else:
        command_worker(args)
