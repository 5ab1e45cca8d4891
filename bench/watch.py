"""Latency from a file change to searchable: `kb watch` against a one-shot `kb sync FILE`
process per change (what a hook or an agent does without a watcher).

    python -m bench watch                      # the real model (all-MiniLM-L6-v2)
    python -m bench watch --edits 20 --corpus ../shared/data/md_argocd_docs

Indexes a copy of the corpus (default: examples/sample) in a throwaway data dir, then for
each way of keeping up makes EDITS changes, one at a time: the edit of an existing note,
the creation of a new one and the rename of a note, in turn, each with a new word in it.
The clock runs from the write until a lexical search for that word (a read-only
KnowledgeBase of this process, polling) finds the note. Rows:

- `kb watch`: the default (a small save of text files is parsed in-process);
- `kb watch --workers 1`: every batch through a parser process, as `kb sync` does;
- `kb sync FILE` per edit: a new process per change (the baseline).

The first change a watcher sees loads the model; it is timed apart ("first change").
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench import harness
from kb_search.config import load_config
from kb_search.knowledge_base import KnowledgeBase

REPO = Path(__file__).resolve().parent.parent
KB = [sys.executable, "-m", "kb_search"]


def run_kb(env: dict, *args: str) -> str:
    done = subprocess.run([*KB, *args], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"kb {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def change(notes: Path, i: int, word: str) -> Path:
    """Edit, create or rename a note (in turn) so that it holds `word`; the path written."""
    kind = i % 3
    if kind == 0:
        target = notes / "watched-edit.md"
        target.write_text(f"# Edited note\n\nThis note was edited: {word} appears in it.\n")
        return target
    if kind == 1:
        target = notes / f"watched-new-{i}.md"
        target.write_text(f"# New note {i}\n\nA new note that mentions {word}.\n")
        return target
    source = notes / f"watched-new-{i - 1}.md"
    target = notes / f"watched-renamed-{i}.md"
    source.write_text(f"# New note {i - 1}\n\nA note about to move, with {word}.\n")
    os.replace(source, target)
    return target


def wait_searchable(kb: KnowledgeBase, word: str, limit: float = 60.0) -> None:
    options = kb.search_options(mode="lexical", top=1, snippets=False)
    deadline = time.monotonic() + limit
    while not kb.search(word, options).results:
        if time.monotonic() > deadline:
            sys.exit(f"{word} not searchable after {limit} s")
        time.sleep(0.005)


def measure_watch(env: dict, notes: Path, kb: KnowledgeBase, edits: int, extra: list[str],
                  tag: str) -> tuple[float, list[float]]:  # fmt: skip
    process = subprocess.Popen(
        [*KB, "watch", "--format", "json", *extra],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    ready = threading.Event()

    def read_stderr() -> None:
        for line in process.stderr:
            if line.startswith("Watching"):
                ready.set()

    threading.Thread(target=read_stderr, daemon=True).start()
    try:
        if not ready.wait(120):
            sys.exit("kb watch did not start")
        times = []
        for i in range(edits + 1):
            word = f"zq{tag}{i}x"
            started = time.monotonic()
            change(notes, i, word)
            wait_searchable(kb, word)
            times.append(time.monotonic() - started)
            time.sleep(0.3)  # one change at a time: the next is its own batch
        return times[0], times[1:]
    finally:
        process.terminate()
        process.wait(30)


def measure_sync(env: dict, notes: Path, kb: KnowledgeBase, edits: int) -> list[float]:
    times = []
    for i in range(edits):
        word = f"zqsync{i}x"
        started = time.monotonic()
        written = change(notes, i, word)
        paths = [str(written)] if i % 3 != 2 else [str(notes)]  # a rename: both ends
        run_kb(env, "sync", *paths, "--format", "json")
        wait_searchable(kb, word)
        times.append(time.monotonic() - started)
    return times


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--corpus", type=Path, default=REPO / "examples" / "sample")
    parser.add_argument("--model-cache", type=Path, help="reuse a converted model (KB_MODEL_CACHE)")
    args = harness.parse(parser, argv)

    work = Path(tempfile.mkdtemp(prefix="kb-bench-watch-"))
    try:
        notes = work / "notes"
        shutil.copytree(args.corpus, notes)
        env = dict(os.environ, KB_DATA_DIR=str(work / "data"), HF_HUB_OFFLINE="1")
        if args.model_cache:
            env["KB_MODEL_CACHE"] = str(args.model_cache)
        run_kb(env, "init")
        run_kb(env, "add", str(notes), "--format", "json")
        config = load_config(env={k: v for k, v in env.items() if k.startswith("KB_")})
        with KnowledgeBase(config) as kb:
            model = kb.reads.stats()["model"]
            docs = kb.reads.stats()["documents"]
            rows = []
            first, times = measure_watch(env, notes, kb, args.edits, [], "a")
            rows.append(("kb watch", first, times))
            first, times = measure_watch(env, notes, kb, args.edits, ["--workers", "1"], "b")
            rows.append(("kb watch --workers 1", first, times))
            rows.append(("kb sync FILE per edit", None, measure_sync(env, notes, kb, args.edits)))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    base = statistics.median(rows[-1][2])
    print(f"model {model}; {docs} documents; {args.edits} changes each (edit, create, rename)")
    print(f"{'way':24} {'first change':>12} {'p50 s':>7} {'max s':>7} {'p50 vs sync':>12}")
    for name, first, times in rows:
        p50 = statistics.median(times)
        shown = f"{first:.2f}" if first is not None else "-"
        print(f"{name:24} {shown:>12} {p50:7.2f} {max(times):7.2f} {base / p50:11.1f}x")
