"""Index throughput: the local ONNX model vs the same model behind an HTTP endpoint.

The endpoint is tests/embedding_server.py (MiniLM run by kb's own Embedder, on the CPU) started
here, so the difference is the remote path's cost: JSON, HTTP, batching across requests. Runs
alternate (local, remote, local, remote, ...) so drift on a shared machine hits both alike.
Per run: `kb add` end to end (parse + embed + write) in chunks/s; with --reindex also
`kb reindex --full` (embedding and writing vectors only).

    nice -n 10 python -m bench remote_embed ../shared/data/md_argocd_docs \\
        --files 100 --rounds 2 --work /tmp/embedder/bench
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "embedding_server.py"


def kb(env: dict[str, str], *args: str) -> tuple[dict, float]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "kb_search", *args, "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout), time.perf_counter() - started


def one_run(
    kind: str, files: list[str], work: Path, base_env: dict, url: str, reindex: bool
) -> dict:
    data = work / kind
    shutil.rmtree(data, ignore_errors=True)
    env = {**base_env, "KB_DATA_DIR": str(data)}
    if kind == "remote":
        kb(env, "init", "--model", "openai:minilm", "--endpoint", f"{url}/v1")
    else:
        kb(env, "init")
    added, add_s = kb(env, "add", *files)
    run = {"kind": kind, "chunks": added["chunks"], "add_chunks_per_s": added["chunks"] / add_s}
    if reindex:
        reindexed, _ = kb(env, "reindex", "--full")
        run["reindex_chunks_per_s"] = reindexed["embedded"] / reindexed["seconds"]
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("/tmp/kb-bench-remote"))
    parser.add_argument("--server-threads", type=int, default=2)
    parser.add_argument("--reindex", action="store_true", help="also time `kb reindex --full`")
    args = parser.parse_args()
    files = sorted(str(p) for p in args.corpus.rglob("*.md"))[: args.files]
    args.work.mkdir(parents=True, exist_ok=True)
    cache = args.work / "models"
    base_env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "KB_MODEL_CACHE": str(cache),
        "KB_NO_WARM": "1",
        "HF_HUB_OFFLINE": "1",
    }
    server = subprocess.Popen(
        [sys.executable, str(SERVER), str(cache), str(args.server_threads)],
        stdout=subprocess.PIPE,
        env=base_env,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{int(server.stdout.readline().split()[1])}"
        runs = []
        for _ in range(args.rounds):
            for kind in ("local", "remote"):
                run = one_run(kind, files, args.work, base_env, url, args.reindex)
                runs.append(run)
                print(
                    json.dumps(
                        {k: round(v, 1) if isinstance(v, float) else v for k, v in run.items()}
                    ),
                    flush=True,
                )
    finally:
        server.terminate()
        server.wait(10)
    for metric in ("add_chunks_per_s", "reindex_chunks_per_s")[: 1 + args.reindex]:
        local = statistics.median(r[metric] for r in runs if r["kind"] == "local")
        remote = statistics.median(r[metric] for r in runs if r["kind"] == "remote")
        print(
            f"{metric}: local {local:.1f}, remote {remote:.1f}, remote/local {remote / local:.2f}"
        )


if __name__ == "__main__":
    main()
