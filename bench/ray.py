"""Throughput of `kb add --executor ray` against the local process pool, and how the Ray
executor scales with the cluster's CPUs (a simulated multi-node cluster on this machine).

    python -m bench ray --source /work/shared/data/md_argocd_docs [--files 200]
        [--rounds 2] [--work /tmp/kb-bench-ray]

Copies the first --files Markdown files of --source into --work, then, round after round
(alternating, so a noisy shared machine shows as spread, not as a bias), indexes them from
scratch with each configuration:

- local w1 / local w2: the local pool with 1 / 2 parser processes, the driver embeds (default);
- ray 2cpu: one loopback node with 2 CPUs (2 actors that parse and embed);
- ray 1cpu: one node with 1 CPU; ray 1+1cpu: a head with 1 CPU plus a second `ray start`
  node with 1 CPU (two "nodes", 2 actors): the scaling rows.

Clusters are started once, before the rounds (a user's cluster is already running); each
run is a fresh `kb add` process, so the times include connecting, starting the actors and
materialising the model on them. Set KB_MODEL_CACHE to reuse a converted model.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tests.ray_cluster import RAY_ENV, LocalRayCluster  # the tests' loopback cluster

from bench import harness

CLUSTERS = {"ray 2cpu": (2, ()), "ray 1cpu": (1, ()), "ray 1+1cpu": (1, (1,))}


def copy_corpus(source: Path, target: Path, files: int) -> int:
    shutil.rmtree(target, ignore_errors=True)
    chosen = sorted(p for p in source.rglob("*.md") if p.is_file())[:files]
    for path in chosen:
        dest = target / path.relative_to(source)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest)
    return len(chosen)


def run_add(corpus: Path, data_dir: Path, extra: list[str]) -> dict:
    shutil.rmtree(data_dir, ignore_errors=True)
    env = dict(os.environ, KB_DATA_DIR=str(data_dir), HF_HUB_OFFLINE="1", **RAY_ENV)
    cmd = [sys.executable, "-m", "kb_search", "add", str(corpus), "--format", "json", *extra]
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {done.stderr[-2000:]}")
    summary = json.loads(done.stdout)
    if summary["failed"]:
        raise RuntimeError(f"failures: {summary['failed'][:3]}")
    return {"wall": wall, "files": summary["added"], "chunks": summary["chunks"]}


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--source", type=Path, required=True)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("/tmp/kb-bench-ray"))
    parser.add_argument(
        "--configs",
        default="local w1,local w2,ray 2cpu,ray 1cpu,ray 1+1cpu",
        help="comma-separated subset of the configurations (local w1 is the baseline)",
    )
    args = harness.parse(parser, argv)
    wanted = {name.strip() for name in args.configs.split(",")} | {"local w1"}

    corpus = args.work / "corpus"
    count = copy_corpus(args.source, corpus, args.files)
    warm = args.work / "warm-corpus"
    copy_corpus(args.source, warm, 2)
    run_add(warm, args.work / "warm", ["--workers", "1"])  # provision the model, untimed
    clusters: dict[str, LocalRayCluster] = {}
    try:
        for name, (head, nodes) in CLUSTERS.items():
            if name in wanted:
                clusters[name] = LocalRayCluster(head_cpus=head, node_cpus=nodes).start()
        configs = {
            "local w1": ["--workers", "1"],
            "local w2": ["--workers", "2"],
            **{
                name: ["--executor", "ray", "--address", cluster.address]
                for name, cluster in clusters.items()
            },
        }
        configs = {name: flags for name, flags in configs.items() if name in wanted}
        results: dict[str, list[dict]] = {name: [] for name in configs}
        for round_index in range(args.rounds):
            order = list(configs) if round_index % 2 == 0 else list(reversed(configs))
            for name in order:
                result = run_add(corpus, args.work / "data", configs[name])
                results[name].append(result)
                print(
                    f"round {round_index + 1} {name:<11} {result['wall']:7.1f} s"
                    f" {result['files']} files {result['chunks']} chunks",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        for cluster in clusters.values():
            cluster.stop()

    base = statistics.median(r["wall"] for r in results["local w1"])
    print(f"\n{count} Markdown files from {args.source}, {args.rounds} rounds, medians\n")
    print("| executor | wall s | files/s | chunks/s | time vs local w1 | runs (s) |")
    print("|---|---:|---:|---:|---:|---|")
    for name, runs in results.items():
        wall = statistics.median(r["wall"] for r in runs)
        files, chunks = runs[0]["files"], runs[0]["chunks"]
        spread = ", ".join(f"{r['wall']:.1f}" for r in runs)
        print(
            f"| {name} | {wall:.1f} | {files / wall:.2f} | {chunks / wall:.1f}"
            f" | {wall / base:.2f}x | {spread} |"
        )
    if "ray 1cpu" in results and "ray 1+1cpu" in results:
        one = statistics.median(r["wall"] for r in results["ray 1cpu"])
        two = statistics.median(r["wall"] for r in results["ray 1+1cpu"])
        print(f"\nscaling, 1 node of 1 CPU -> 2 nodes of 1 CPU: {one / two:.2f}x the throughput")
