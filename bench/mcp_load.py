"""Load test for `kb serve --transport http`: concurrent MCP clients vs. a concurrent `kb add`.

    python -m bench mcp_load DATA_DIR [--db FILE] [--clients 8] [--duration 60]
        [--queries queries.jsonl]

Starts the real server on loopback, lets N client processes (the SDK's own client, one MCP
session each) issue hybrid `search` calls for DURATION seconds while `kb add` keeps ingesting
freshly generated documents into the same DB, then prints requests/s, latency percentiles,
errors and the server's RSS before and after. Point --db at a COPY of an index: the run adds
documents to it.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench import harness

KB = [sys.executable, "-m", "kb_search"]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"kb serve exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("kb serve did not start listening")


def sample_texts(db_path: Path, count: int, seed: int) -> list[str]:
    from kb_search.store import db

    conn = db.connect(db_path, readonly=True)
    rows = conn.execute("SELECT text FROM chunks ORDER BY random() LIMIT ?", (count,)).fetchall()
    conn.close()
    random.Random(seed).shuffle(rows)
    return [r[0] for r in rows]


def load_queries(path: Path | None, db_path: Path) -> list[str]:
    if path is not None:
        with path.open(encoding="utf-8") as fh:
            return [json.loads(line)["text"] for line in fh if line.strip()]
    # No query file: the first words of random chunks read like real queries.
    return [" ".join(t.split()[:8]) for t in sample_texts(db_path, 500, 1) if t.split()]


def write_batch(folder: Path, texts: list[str], batch: int) -> Path:
    """New Markdown files mixing sentences of existing chunks, so they are new content."""
    target = folder / f"batch-{batch:03d}"
    target.mkdir(parents=True)
    rng = random.Random(batch)
    for i in range(0, len(texts) - 1, 2):
        words = (texts[i] + " " + texts[i + 1]).split()
        rng.shuffle(words)
        body = " ".join(words)
        (target / f"doc-{i // 2:04d}.md").write_text(f"# Load doc {batch}-{i}\n\n{body}\n")
    return target


def client_worker(
    url: str, queries: list[str], seed: int, duration: float, start: Any, go: Any, out: Any
) -> None:
    import anyio

    anyio.run(_client_loop, url, queries, seed, duration, (start, go), out)


async def _client_loop(
    url: str, queries: list[str], seed: int, duration: float, clock: tuple[Any, Any], out: Any
) -> None:
    import anyio
    from mcp import Client

    start, go = clock
    rng = random.Random(seed)
    latencies: list[float] = []
    errors: list[str] = []
    async with Client(url) as client:
        for _ in range(3):  # warm-up, not counted
            await client.call_tool("search", {"query": rng.choice(queries), "mode": "hybrid"})
        out.put(("ready", seed))
        await anyio.to_thread.run_sync(go.wait)
        stop_at = start.value + duration
        while time.time() < stop_at:
            t0 = time.perf_counter()
            try:
                query = {"query": rng.choice(queries), "mode": "hybrid", "top": 10}
                result = await client.call_tool("search", query)
                if result.is_error:
                    errors.append(str(result.content)[:200])
                elif any(v.startswith("error") for v in result.structured_content["legs"].values()):
                    errors.append(f"degraded: {result.structured_content['legs']}")
            except Exception as exc:  # noqa: BLE001 - every failure counts as an error
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
            latencies.append((time.perf_counter() - t0) * 1000)
    out.put(("done", latencies, errors))


def ingest_until(deadline: float, env: dict[str, str], db_args: list[str], texts: list[str]):
    """`kb add` one generated batch after another until the deadline; returns files added."""
    folder = Path(tempfile.mkdtemp(prefix="kb-load-"))
    added, batch = 0, 0
    per_batch = 50
    while time.time() < deadline:
        chunk = texts[(batch * per_batch * 2) % len(texts) :][: per_batch * 2]
        target = write_batch(folder, chunk, batch)
        done = subprocess.run(
            [*KB, *db_args, "add", str(target), "--format", "json"],
            env=env,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise SystemExit(f"kb add failed: {done.stderr}")
        added += json.loads(done.stdout)["added"]
        batch += 1
    return added, batch


def sample_rss(pid: int, start: float, args: argparse.Namespace, out: list[float]) -> None:
    """RSS every 10 s of the run: a plateau, not a ramp, is what "no leak" looks like."""
    while time.time() < start + args.duration:
        time.sleep(min(10.0, max(0.0, start + args.duration - time.time())))
        out.append(round(rss_mb(pid), 1))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def server_documents(url: str) -> int:
    import anyio
    from mcp import Client

    async def main() -> int:
        async with Client(url) as client:
            return (await client.call_tool("stats", {})).structured_content["documents"]

    return anyio.run(main)


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--db", type=Path, help="database file (default DATA_DIR/kb.db)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--queries", type=Path, help="BEIR queries.jsonl (default: sampled)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = harness.parse(parser, argv)

    db_path = args.db or args.data_dir / "kb.db"
    db_args = ["--data-dir", str(args.data_dir), "--db", str(db_path)]
    env = {**os.environ, "KB_DATA_DIR": str(args.data_dir)}
    queries = load_queries(args.queries, db_path)
    texts = sample_texts(db_path, 4000, 2)

    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    server = subprocess.Popen(
        [*KB, *db_args, "serve", "--transport", "http", "--port", str(port)], env=env
    )
    try:
        wait_for_port(port, server)
        summary = run_load(args, url, server, env, db_args, queries, texts)
        summary["server_documents_after"] = server_documents(url)
    finally:
        server.terminate()
        server.wait(timeout=30)
    report(summary, args.json)


def run_load(
    args: argparse.Namespace,
    url: str,
    server: subprocess.Popen,
    env: dict[str, str],
    db_args: list[str],
    queries: list[str],
    texts: list[str],
) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    out, go, start = ctx.Queue(), ctx.Event(), ctx.Value("d", 0.0)
    rss_start = rss_mb(server.pid)
    workers = [
        ctx.Process(target=client_worker, args=(url, queries, i, args.duration, start, go, out))
        for i in range(args.clients)
    ]
    for w in workers:
        w.start()
    for _ in workers:  # every client connected and warmed up: start the clock for all
        assert out.get(timeout=300)[0] == "ready"
    rss_before = rss_mb(server.pid)
    start.value = time.time()
    go.set()
    samples: list[float] = []
    sampler = threading.Thread(target=sample_rss, args=(server.pid, start.value, args, samples))
    sampler.start()
    added, batches = ingest_until(start.value + args.duration, env, db_args, texts)
    ingest_s = time.time() - start.value
    latencies: list[float] = []
    errors: list[str] = []
    for _ in workers:
        _, lat, errs = out.get(timeout=args.duration + 300)
        latencies += lat
        errors += errs
    for w in workers:
        w.join()
    return {
        "clients": args.clients,
        "duration_s": args.duration,
        "requests": len(latencies),
        "requests_per_s": round(len(latencies) / args.duration, 1),
        "p50_ms": round(percentile(latencies, 50), 1),
        "p95_ms": round(percentile(latencies, 95), 1),
        "p99_ms": round(percentile(latencies, 99), 1),
        "max_ms": round(max(latencies), 1),
        "errors": len(errors),
        "error_samples": errors[:3],
        "ingested_documents": added,
        "ingest_batches": batches,
        "ingest_s": round(ingest_s, 1),
        "server_rss_mb_after_start": round(rss_start, 1),
        "server_rss_mb_before": round(rss_before, 1),
        "server_rss_mb_after": round(rss_mb(server.pid), 1),
        "server_rss_mb_every_10s": samples,
    }


def report(summary: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    for key, value in summary.items():
        print(f"{key:>24}: {value}")
