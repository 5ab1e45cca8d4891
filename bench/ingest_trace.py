"""Record a `kb add FOLDER` as a trace of its progress events, and score ETA estimators on
traces offline.

    python -m bench ingest_trace record --folder /work/shared/data/pdfs --out pdfs.jsonl
    python -m bench ingest_trace record --files bench/pdf_heldout_files.txt --out ho.jsonl
    python -m bench ingest_trace score pdfs.jsonl md.jsonl

`record` runs one fresh `kb add` into an empty data dir (in a child process whose PYTHONPATH is
this checkout's `src`; the model provisioned beforehand in a shared cache, not timed) and
writes every call the core makes on its Progress, one JSON line each: `{"t": seconds since
the start, "e": method, "a": [arguments], "c": CPU-seconds the process used since the start
(all its threads: the model's), "l": the machine's 1-minute load average}`, then a last line
with the truth: when the keyword
phase ended (`keyword_s`: every document's text layer written, keyword-searchable), when the
last document
was written (`all_text_s`: with the text OCR read from scanned pages, which follows the keyword
phase), when the OCR phase began (`ocr_s`, null without one) and when `kb add` returned (fully
embedded).

`score` replays a trace into the estimator of the checkout it runs in (`cli.progress.
ProgressView` with a clock that follows the trace, the priors the terminal line uses) and
asks for its ETA every second, its CPU clock the trace's (none in traces recorded before it
was); the error at time t is ETA / (end - t) - 1. Run it with
`PYTHONPATH=OLD/src` to score an older estimator on the same trace. Reported: the first
estimate, the first after the run timed its embedder (a batch beside the parser, or the
embedding phase's first), the estimates at 25/50/75% of the run's time, and the worst after
the first minute (until the last 5%). `--recent-weight W` scores the estimator with another
weight of the recent embedding speed (`progress.RECENT_WEIGHT`), `--cpu-share-s S` with the
CPU share measured over another span (`progress.CPU_SHARE_S`).
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
import json, os, sqlite3, sys, threading, time
from pathlib import Path
from kb_search.cli.progress import ProgressView
from kb_search.config import load_config
from kb_search.knowledge_base import KnowledgeBase

paths, data, cache, home, out = sys.argv[1:6]
env = {"KB_DATA_DIR": data, "KB_MODEL_CACHE": cache, "HOME": home, "HF_HUB_OFFLINE": "1",
       "KB_NO_WARM": "1"}
config = load_config(env=env, cwd=Path(home))
start, cpu0 = time.time(), time.process_time()
sink = open(out, "w", encoding="utf-8")
EVENTS = ("start", "add_work", "read", "advance", "await_embedding", "embedding", "embedded",
          "embed_sample", "skip_work", "measured_before", "await_ocr", "ocr", "ocr_read")
first = {}  # the first time a phase's event came: the keyword phase ends at "ocr" or "embedding"


class Recorder(ProgressView):
    pass


lock = threading.Lock()


def write(name, args=(), kwargs=None):
    with lock:
        sink.write(json.dumps({"t": round(time.time() - start, 4), "e": name, "a": args,
                               "k": kwargs or {}, "c": round(time.process_time() - cpu0, 4),
                               "l": os.getloadavg()[0]}) + "\n")


def recording(name):
    def method(self, *args, **kwargs):
        first.setdefault(name, time.time() - start)
        write(name, args, kwargs)
        return getattr(ProgressView, name)(self, *args, **kwargs)
    return method


def ticks():  # the CPU time between events: what a live ETA reads when it is drawn
    while not done.wait(TICK_S):
        write("cpu")


TICK_S = 0.5
done = threading.Event()
threading.Thread(target=ticks, daemon=True).start()


for name in EVENTS:
    if hasattr(ProgressView, name):  # an older checkout has fewer
        setattr(Recorder, name, recording(name))
view = Recorder("trace", None, model=str(config["model"]))
with KnowledgeBase(config, cwd=Path(home)) as kb:
    summary = kb.add([Path(p) for p in json.loads(paths)], progress=view)
end = time.time()
done.set()
conn = sqlite3.connect(Path(data) / "kb.db")
last, docs = conn.execute("SELECT max(indexed_at), count(*) FROM documents").fetchone()
chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
ends = [first[e] for e in ("ocr", "embedding") if e in first]
with lock:
    sink.write(json.dumps({"end": end - start, "keyword_s": min(ends, default=last - start),
                       "all_text_s": last - start, "ocr_s": first.get("ocr"), "documents": docs,
                       "chunks": chunks, "failed": len(summary.failed),
                       "model": str(config["model"])}) + "\n")
sink.close()
"""


def record(src: Path, paths: list[Path], cache: Path, out: Path, data: Path | None = None) -> dict:
    """Run `kb add PATHS` into `data` (kept: a second run adds to the same index) or a fresh
    data dir, and write its trace to `out`."""
    provision(src, cache)
    with tempfile.TemporaryDirectory(prefix="kb-trace-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        env = dict(os.environ, PYTHONPATH=str(src))
        named = json.dumps([str(p) for p in paths])
        data_dir = data or Path(tmp) / "data"
        cmd = [sys.executable, "-c", CHILD, named, str(data_dir), str(cache),
               str(home), str(out)]  # fmt: skip
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"run failed: {done.stderr[-2000:]}")
    return json.loads(out.read_text(encoding="utf-8").splitlines()[-1])


def load(path: Path) -> tuple[list[dict], dict]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return lines[:-1], lines[-1]


def _unopened_pdf(event: dict) -> bool:
    """A failure (a step done with work, no chunks) of a PDF whose work was its size in bytes
    (pages are whole PDF_PAGE_WORKs otherwise)."""
    from kb_search.progress import PDF_PAGE_WORK

    kwargs = event.get("k", {})
    failed = event["e"] == "advance" and event["a"][:1] == [1] and not kwargs.get("chunks")
    return failed and kwargs.get("pages", 0) > 1 and bool(kwargs.get("work", 0.0) % PDF_PAGE_WORK)


def upgrade(events: list[dict]) -> list[dict]:
    """A trace recorded before a PDF that cannot be opened counted as one page (its size in
    bytes counted as pages of text: a 2.8 MB encrypted file was 939 pages until it failed at
    once), as today's code reports it: its work one page from the start."""
    from kb_search.progress import PDF_PAGE_WORK

    one = {"work": float(PDF_PAGE_WORK), "pages": 1}
    fixes = [e["k"] for e in events if _unopened_pdf(e)]
    out, first = [], True
    for event in events:
        if _unopened_pdf(event):
            event = dict(event, k=dict(event["k"], **one))
        elif event["e"] == "add_work" and first and fixes:
            first = False
            work = event["a"][0] - sum(k["work"] - one["work"] for k in fixes)
            pages = event.get("k", {}).get("pages", 0) - sum(k["pages"] - 1 for k in fixes)
            event = dict(event, a=[work], k=dict(event.get("k", {}), pages=pages))
        out.append(event)
    return out


def replay(events: list[dict], model: str, step: float = 1.0) -> list[tuple[float, float | None]]:
    """(t, ETA) every `step` seconds after the first event, from this checkout's estimator."""
    from kb_search.cli.progress import ProgressView

    if hasattr(ProgressView, "skip_work"):  # the events of the code that has it
        events = upgrade(events)

    now, cpu = [0.0], [None]
    view = ProgressView("replay", None, model=model)
    view.clock = lambda: now[0]
    view.cpu_clock = lambda: cpu[0]  # the CPU time the trace recorded (older ones: none)
    # Traces recorded with the CPU time at events only (before the ticks): between two
    # events, the CPU time is read off the line between them.
    between = not any(e["e"] == "cpu" for e in events)
    samples = []
    t = step
    last = None
    for event in events:
        while t < event["t"]:
            if view.started is not None:
                now[0] = t
                if between and last is not None and "c" in event and event["t"] > last[0]:
                    along = (t - last[0]) / (event["t"] - last[0])
                    cpu[0] = last[1] + (event["c"] - last[1]) * along
                samples.append((t, view.eta()))
            t += step
        now[0], cpu[0] = event["t"], event.get("c")
        last = (event["t"], event["c"]) if "c" in event else None
        for name, args, kwargs in _current(event, view):
            method = getattr(view, name, None)
            if method is None:
                continue  # an event an older estimator does not take
            known = inspect.signature(method).parameters  # an older estimator takes fewer
            method(*args[: len(known)], **{k: v for k, v in kwargs.items() if k in known})
    return samples


def _current(event: dict, view: object) -> list[tuple[str, list, dict]]:
    """The calls an event stands for today: traces recorded before `skip_work` existed said
    that a file failed or held no text as one step done with its work and no chunks."""
    args, kwargs = list(event["a"]), dict(event.get("k", {}))
    if event["e"] == "advance" and hasattr(view, "skip_work"):
        steps = args[0] if args else kwargs.get("n", 1)
        work = kwargs.get("work", args[1] if len(args) > 1 else 0.0)
        chunks = kwargs.get("chunks", args[2] if len(args) > 2 else 0)
        if steps and work and not chunks:
            return [("skip_work", [work], {"pages": kwargs.get("pages", 0)}),
                    ("advance", [steps], {})]  # fmt: skip
    return [(event["e"], args, kwargs)]


def measured_at(events: list[dict]) -> float | None:
    """When the run first timed its embedder: a batch embedded beside the parser, or the
    embedding phase's first batch."""
    return next((e["t"] for e in events if e["e"] in ("embed_sample", "embedded")), None)


def errors(
    samples: list[tuple[float, float | None]], end: float, measured: float | None = None
) -> dict[str, float | None]:
    timed = [(t, eta) for t, eta in samples if eta is not None and end - t > 0]

    def error(t: float, eta: float) -> float:
        return eta / (end - t) - 1

    out: dict[str, float | None] = {"first": error(*timed[0]) if timed else None}
    after = [(t, eta) for t, eta in timed if measured is not None and t >= measured]
    out["measured"] = error(*after[0]) if after else None
    out["measured at"] = after[0][0] if after else None
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
    what = rec.add_mutually_exclusive_group(required=True)
    what.add_argument("--folder", type=Path)
    what.add_argument("--files", type=Path, help="a file naming the paths to add, one a line")
    rec.add_argument("--out", type=Path, required=True)
    rec.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "kb-models")
    rec.add_argument("--src", type=Path, help="the `src` of the checkout to run (default: this)")
    rec.add_argument("--data", type=Path, help="a data dir to add to, kept (default: a fresh one)")
    score = sub.add_parser("score", help="score this checkout's ETA on traces")
    score.add_argument("traces", type=Path, nargs="+")
    score.add_argument(
        "--recent-weight",
        type=float,
        help="weigh the recent embedding speed this much against the run's (progress."
        "RECENT_WEIGHT; 0: the run's mean only), to show the trade-off",
    )
    score.add_argument(
        "--cpu-share-s",
        type=float,
        help="measure the CPU share the embedding gets over this many seconds (progress."
        "CPU_SHARE_S), to show the trade-off",
    )
    args = parser.parse_args(argv)
    if args.command == "record":
        src = args.src or Path(__file__).resolve().parent.parent / "src"
        named = args.files.read_text().splitlines() if args.files else []
        paths = [args.folder] if args.folder else [Path(line) for line in named if line.strip()]
        truth = record(src.resolve(), paths, args.cache, args.out, args.data)
        print(json.dumps(truth))
        return 0
    if args.recent_weight is not None:
        from kb_search import progress

        progress.RECENT_WEIGHT = args.recent_weight
    if args.cpu_share_s is not None:
        from kb_search import progress

        progress.CPU_SHARE_S = args.cpu_share_s
    print("| trace | docs | chunks | keyword s | embedded s | ratio | ETA first |"
          " first after the embedder is timed (at s) | 25% | 50% |"
          " 75% | worst after 1 min | mean abs after 1 min | within 30% |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path in args.traces:
        events, truth = load(path)
        e = errors(replay(events, truth["model"]), truth["end"], measured_at(events))
        at = "" if e["measured at"] is None else f" ({e['measured at']:.0f})"
        print(f"| {path.stem} | {truth['documents']} | {truth['chunks']} |"
              f" {truth['keyword_s']:.1f} | {truth['end']:.1f} |"
              f" {truth['keyword_s'] / truth['end']:.2f} | {pct(e['first'])} |"
              f" {pct(e['measured'])}{at} | {pct(e['25%'])} |"
              f" {pct(e['50%'])} | {pct(e['75%'])} | {pct(e['worst after 1 min'])} |"
              f" {share(e['mean |error| after 1 min'])} |"
              f" {share(e['within 30% after 1 min'])} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
