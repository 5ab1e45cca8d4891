"""Record a `kb add FOLDER` as a trace of its progress events, and score ETA estimators on
traces offline.

    python -m bench ingest_trace record --folder /work/shared/data/pdfs --out pdfs.jsonl
    python -m bench ingest_trace score pdfs.jsonl md.jsonl

`record` runs one fresh `kb add` into an empty data dir (in a child process whose PYTHONPATH is
this checkout's `src`; the model provisioned beforehand in a shared cache, not timed) and
writes every call the core makes on its Progress, one JSON line each: `{"t": seconds since
the start, "e": method, "a": [arguments]}`, then a last line with the truth: when the keyword
phase ended (`keyword_s`: every document's text layer written, keyword-searchable), when the
last document
was written (`all_text_s`: with the text OCR read from scanned pages, which follows the keyword
phase), when the OCR phase began (`ocr_s`, null without one) and when `kb add` returned (fully
embedded).

`score` replays a trace into the estimator of the checkout it runs in (`cli.progress.
ProgressView` with a clock that follows the trace, the priors the terminal line uses) and
asks for its ETA every second; the error at time t is ETA / (end - t) - 1. Run it with
`PYTHONPATH=OLD/src` to score an older estimator on the same trace. Reported: the first
estimate, the estimates at 25/50/75% of the run's time, and the worst after the first minute
(until the last 5%).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.ingest_phases import provision

CHILD = r"""
import json, sqlite3, sys, time
from pathlib import Path
from kb_search.cli.progress import ProgressView
from kb_search.config import load_config
from kb_search.knowledge_base import KnowledgeBase

folder, data, cache, home, out = sys.argv[1:6]
env = {"KB_DATA_DIR": data, "KB_MODEL_CACHE": cache, "HOME": home, "HF_HUB_OFFLINE": "1",
       "KB_NO_WARM": "1"}
config = load_config(env=env, cwd=Path(home))
start = time.time()
sink = open(out, "w", encoding="utf-8")
EVENTS = ("start", "add_work", "read", "advance", "await_embedding", "embedding", "embedded",
          "embed_sample", "await_ocr", "ocr", "ocr_read")
first = {}  # the first time a phase's event came: the keyword phase ends at "ocr" or "embedding"


class Recorder(ProgressView):
    pass


def recording(name):
    def method(self, *args, **kwargs):
        first.setdefault(name, time.time() - start)
        sink.write(json.dumps({"t": round(time.time() - start, 4), "e": name, "a": args,
                               "k": kwargs}) + "\n")
        return getattr(ProgressView, name)(self, *args, **kwargs)
    return method


for name in EVENTS:
    if hasattr(ProgressView, name):  # an older checkout has no OCR phase
        setattr(Recorder, name, recording(name))
view = Recorder("trace", None, model=str(config["model"]))
with KnowledgeBase(config, cwd=Path(home)) as kb:
    summary = kb.add([Path(folder)], progress=view)
end = time.time()
conn = sqlite3.connect(Path(data) / "kb.db")
last, docs = conn.execute("SELECT max(indexed_at), count(*) FROM documents").fetchone()
chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
ends = [first[e] for e in ("ocr", "embedding") if e in first]
sink.write(json.dumps({"end": end - start, "keyword_s": min(ends, default=last - start),
                       "all_text_s": last - start, "ocr_s": first.get("ocr"), "documents": docs,
                       "chunks": chunks, "failed": len(summary.failed),
                       "model": str(config["model"])}) + "\n")
sink.close()
"""


def record(src: Path, folder: Path, cache: Path, out: Path) -> dict:
    provision(src, cache)
    with tempfile.TemporaryDirectory(prefix="kb-trace-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        env = dict(os.environ, PYTHONPATH=str(src))
        cmd = [sys.executable, "-c", CHILD, str(folder), str(Path(tmp) / "data"), str(cache),
               str(home), str(out)]  # fmt: skip
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"run failed: {done.stderr[-2000:]}")
    return json.loads(out.read_text(encoding="utf-8").splitlines()[-1])


def load(path: Path) -> tuple[list[dict], dict]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return lines[:-1], lines[-1]


def replay(events: list[dict], model: str, step: float = 1.0) -> list[tuple[float, float | None]]:
    """(t, ETA) every `step` seconds after the first event, from this checkout's estimator."""
    from kb_search.cli.progress import ProgressView

    now = [0.0]
    view = ProgressView("replay", None, model=model)
    view.clock = lambda: now[0]
    samples = []
    t = step
    for event in events:
        while t < event["t"]:
            if view.started is not None:
                now[0] = t
                samples.append((t, view.eta()))
            t += step
        now[0] = event["t"]
        method = getattr(view, event["e"])
        known = inspect.signature(method).parameters  # an older estimator takes fewer
        method(*event["a"], **{k: v for k, v in event.get("k", {}).items() if k in known})
    return samples


def errors(samples: list[tuple[float, float | None]], end: float) -> dict[str, float | None]:
    timed = [(t, eta) for t, eta in samples if eta is not None and end - t > 0]

    def error(t: float, eta: float) -> float:
        return eta / (end - t) - 1

    out: dict[str, float | None] = {"first": error(*timed[0]) if timed else None}
    for q in (0.25, 0.5, 0.75):
        near = min(timed, key=lambda s: abs(s[0] - q * end), default=None)
        out[f"{int(q * 100)}%"] = error(*near) if near else None
    late = [error(t, eta) for t, eta in timed if t >= 60 and end - t >= 0.05 * end]
    out["worst after 1 min"] = max(late, key=abs) if late else None
    out["mean |error| after 1 min"] = sum(map(abs, late)) / len(late) if late else None
    out["within 30% after 1 min"] = sum(abs(x) <= 0.3 for x in late) / len(late) if late else None
    return out


def pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.0%}"


def share(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run `kb add FOLDER` and write its trace")
    rec.add_argument("--folder", type=Path, required=True)
    rec.add_argument("--out", type=Path, required=True)
    rec.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "kb-models")
    rec.add_argument("--src", type=Path, help="the `src` of the checkout to run (default: this)")
    score = sub.add_parser("score", help="score this checkout's ETA on traces")
    score.add_argument("traces", type=Path, nargs="+")
    args = parser.parse_args(argv)
    if args.command == "record":
        src = args.src or Path(__file__).resolve().parent.parent / "src"
        truth = record(src.resolve(), args.folder, args.cache, args.out)
        print(json.dumps(truth))
        return 0
    print("| trace | docs | chunks | keyword s | embedded s | ratio | ETA first | 25% | 50% |"
          " 75% | worst after 1 min | mean abs after 1 min | within 30% |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path in args.traces:
        events, truth = load(path)
        e = errors(replay(events, truth["model"]), truth["end"])
        print(f"| {path.stem} | {truth['documents']} | {truth['chunks']} |"
              f" {truth['keyword_s']:.1f} | {truth['end']:.1f} |"
              f" {truth['keyword_s'] / truth['end']:.2f} | {pct(e['first'])} | {pct(e['25%'])} |"
              f" {pct(e['50%'])} | {pct(e['75%'])} | {pct(e['worst after 1 min'])} |"
              f" {share(e['mean |error| after 1 min'])} |"
              f" {share(e['within 30% after 1 min'])} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
