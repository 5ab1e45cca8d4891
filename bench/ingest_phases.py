"""Time until every document of a folder is keyword-searchable against time until it is fully
embedded, and the progress line's ETA error, for this checkout and a baseline, alternated.

    python -m bench ingest_phases --base /tmp/fi-base/src \\
        --folder /work/shared/data/md_argocd_docs --folder /work/shared/data/pdfs --runs 1

Each run is a fresh `kb add FOLDER` (in-process, in a child process whose PYTHONPATH is the
checkout's `src`) into an empty data dir, the model provisioned once beforehand in a shared
model cache (conversion is not timed). From the run's own DB: keyword-searchable = the last
document's `indexed_at` (its text and FTS rows commit in that transaction) minus the start;
embedded = the end of `kb add` (every chunk has its vector; checked). A sampler thread reads
the CLI's progress view (`cli.progress.ProgressView`, the priors the terminal line uses) every
second; the ETA error at time t is ETA / (end - t) - 1: the first estimate, at 25/50/75% of
the run's time, and the worst after the first minute (until the last 5%).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sqlite3, sys, threading, time
from pathlib import Path
from kb_search.cli.progress import ProgressView, fraction
from kb_search.config import load_config
from kb_search.knowledge_base import KnowledgeBase

folder, data, cache, home = sys.argv[1:5]
env = {"KB_DATA_DIR": data, "KB_MODEL_CACHE": cache, "HOME": home, "HF_HUB_OFFLINE": "1",
       "KB_NO_WARM": "1"}
config = load_config(env=env, cwd=Path(home))
view = ProgressView("bench", None, model=str(config["model"]))
samples, stop = [], threading.Event()
start = time.time()

def sample():
    while not stop.wait(1.0):
        if view.started is not None:
            samples.append((time.time() - start, view.eta(), fraction(view)))

thread = threading.Thread(target=sample, daemon=True)
thread.start()
with KnowledgeBase(config, cwd=Path(home)) as kb:
    summary = kb.add([Path(folder)], progress=view)
end = time.time()
stop.set()
thread.join()
conn = sqlite3.connect(Path(data) / "kb.db")
last, docs = conn.execute("SELECT max(indexed_at), count(*) FROM documents").fetchone()
chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
table = conn.execute("SELECT table_name FROM vector_tables").fetchone()[0]
vectors = conn.execute(f"SELECT count(*) FROM {table}_rowids").fetchone()[0]
print(json.dumps({"keyword_s": last - start, "total_s": end - start, "documents": docs,
                  "chunks": chunks, "vectors": vectors, "samples": samples,
                  "failed": len(summary.failed)}))
"""


def run_once(src: Path, folder: Path, cache: Path, keep: Path | None = None) -> dict:
    with tempfile.TemporaryDirectory(prefix="kb-phases-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        env = dict(os.environ, PYTHONPATH=str(src))
        cmd = [sys.executable, "-c", CHILD, str(folder), str(Path(tmp) / "data"), str(cache),
               str(home)]  # fmt: skip
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"run failed ({src}): {done.stderr[-2000:]}")
        if keep is not None:  # the index, e.g. for `kb eval` on it
            keep.parent.mkdir(parents=True, exist_ok=True)
            os.replace(Path(tmp) / "data" / "kb.db", keep)
        return json.loads(done.stdout.strip().splitlines()[-1])


def eta_errors(run: dict) -> dict[str, float | None]:
    """ETA / true remaining - 1 at the first estimate, at 25/50/75% of the time, and the
    worst after the first minute (true remaining above 5% of the run)."""
    total = run["total_s"]
    timed = [(t, eta) for t, eta, _ in run["samples"] if eta is not None and total - t > 0]

    def error(t: float, eta: float) -> float:
        return eta / (total - t) - 1

    out: dict[str, float | None] = {"first": error(*timed[0]) if timed else None}
    for q in (0.25, 0.5, 0.75):
        near = min(timed, key=lambda s: abs(s[0] - q * total), default=None)
        out[f"{int(q * 100)}%"] = error(*near) if near else None
    late = [error(t, eta) for t, eta in timed if t >= 60 and total - t >= 0.05 * total]
    out["worst after 1 min"] = max(late, key=abs) if late else None
    return out


def provision(src: Path, cache: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="kb-phases-init-") as tmp:
        env = dict(os.environ, PYTHONPATH=str(src), KB_DATA_DIR=tmp, KB_MODEL_CACHE=str(cache),
                   HOME=tmp, HF_HUB_OFFLINE="1")  # fmt: skip
        subprocess.run([sys.executable, "-m", "kb_search", "init"], env=env, check=True,
                       capture_output=True)  # fmt: skip


def pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.0%}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--folder", type=Path, action="append", required=True)
    parser.add_argument("--base", type=Path, help="a baseline checkout's src directory")
    parser.add_argument("--runs", type=int, default=1, help="runs of each checkout, alternated")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "kb-models")
    parser.add_argument("--json", type=Path, help="write every run's numbers here")
    parser.add_argument("--keep", type=Path, help="keep each run's DB in this folder")
    args = parser.parse_args(argv)
    this = Path(__file__).resolve().parent.parent / "src"
    checkouts = [("this", this)] + ([("base", args.base.resolve())] if args.base else [])
    provision(this, args.cache)
    results = []
    for folder in args.folder:
        for n in range(args.runs):
            order = checkouts if n % 2 == 0 else checkouts[::-1]
            for name, src in order:
                keep = args.keep / f"{folder.name}-{name}-{n}.db" if args.keep else None
                run = run_once(src, folder, args.cache, keep)
                run.update(code=name, folder=str(folder), run=n, errors=eta_errors(run))
                results.append(run)
                print(json.dumps({k: v for k, v in run.items() if k != "samples"}), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print("\n| folder | code | docs | chunks | keyword-searchable s | embedded s | ratio |"
          " ETA first | 25% | 50% | 75% | worst after 1 min |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        e = r["errors"]
        print(f"| {Path(r['folder']).name} | {r['code']} | {r['documents']} | {r['chunks']} |"
              f" {r['keyword_s']:.1f} | {r['total_s']:.1f} | {r['keyword_s'] / r['total_s']:.2f} |"
              f" {pct(e['first'])} | {pct(e['25%'])} | {pct(e['50%'])} | {pct(e['75%'])} |"
              f" {pct(e['worst after 1 min'])} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
