"""Benchmark `kb sync` and `kb add` on a 3,000-file tree: no-op runs, then 10 edited files.

    python -m bench sync [--root DIR] [--files 3000] [--bad 60] [--lexical]

Builds the tree in a temp dir unless --root is given (with --bad files that fail to parse or
hold no text: binary .txt files and empty .md files), ingests it with `kb add` (with the
embedding model unless --lexical; set KB_MODEL_CACHE to reuse a converted model), then:

1. no-op `sync()` in-process (the library call), `kb sync` and `kb add ROOT` end to end (a
   fresh process: interpreter start, imports, DB open, walk, queries) — target < 1 s each,
   0 files parsed (the files that failed before are remembered, not re-read) and the
   embedding model not loaded;
2. 10 files edited: only those 10 are re-processed (the counts are printed);
3. 10 files touched (mtime only): hashed, found unchanged, nothing re-parsed.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import harness

KB = "from kb_search.cli import main\nmain()\n"
_TEXT = (
    "search index document chunk vector query model token embedding local offline file note "
    "project meeting design review code python function class error log database table"
)
_WORDS = _TEXT.split()


def build_tree(root: Path, files: int, bad: int = 0) -> None:
    """Markdown, text and Python files in 60 folders, plus junk a default ignore skips, plus
    `bad` files kb cannot index (half binary, half empty)."""
    for i in range(files):
        folder = root / f"area{i % 12}" / f"topic{i % 5}"
        folder.mkdir(parents=True, exist_ok=True)
        words = " ".join(_WORDS[(i + k) % len(_WORDS)] for k in range(12))
        kind = i % 3
        if kind == 0:
            (folder / f"note{i:04d}.md").write_text(f"# Note {i}\n\nNote {i}: {words}.\n")
        elif kind == 1:
            (folder / f"memo{i:04d}.txt").write_text(f"Memo {i}: {words}.\n")
        else:
            (folder / f"mod{i:04d}.py").write_text(f'def f{i}():\n    """{words}."""\n')
    for i in range(bad):
        folder = root / f"area{i % 12}" / "bad"
        folder.mkdir(parents=True, exist_ok=True)
        if i % 2:
            (folder / f"blob{i:03d}.txt").write_bytes(bytes(range(256)) * 8)
        else:
            (folder / f"empty{i:03d}.md").write_text("")
    junk = root / "node_modules" / "pkg"
    junk.mkdir(parents=True, exist_ok=True)
    for i in range(200):
        (junk / f"readme{i}.md").write_text("# junk\n")


def kb(env: dict[str, str], *args: str) -> tuple[dict, float]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", KB, *args, "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"kb {' '.join(args)} failed: {done.stderr.strip()}")
    return json.loads(done.stdout), elapsed


def inprocess_noop(env: dict[str, str], rounds: int = 5) -> tuple[float, dict]:
    """`KnowledgeBase.sync()` in this process, as `kb sync` calls it."""
    from kb_search.config import load_config
    from kb_search.knowledge_base import KnowledgeBase

    config = load_config(env=env, cwd=Path.cwd(), home=Path.home())
    times, summary = [], None
    with KnowledgeBase(config) as kb:
        for _ in range(rounds):
            started = time.perf_counter()
            summary = kb.sync()
            times.append(time.perf_counter() - started)
    return statistics.median(times), summary.to_dict()


def edit(files: list[Path], content: bool) -> None:
    for path in files:
        if content:
            with path.open("a") as fh:
                fh.write("\nEdited for the benchmark.\n")
        else:
            st = path.stat()
            os.utime(path, (st.st_atime, st.st_mtime + 10))


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--root", type=Path, help="an existing tree (default: build one)")
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--bad", type=int, default=60, help="files that fail or are empty")
    parser.add_argument("--lexical", action="store_true", help="ingest without the model")
    args = harness.parse(parser, argv)
    with tempfile.TemporaryDirectory(prefix="kb-bench-sync-") as tmp:
        tmp_path = Path(tmp)
        root = args.root or tmp_path / "tree"
        if args.root is None:
            build_tree(root, args.files, args.bad)
        env = dict(os.environ, KB_DATA_DIR=str(tmp_path / "data"), KB_WORKERS="0")
        if args.lexical:
            env["KB_MODEL"] = "none/no-such-model"
        added, add_s = kb(env, "add", str(root))
        print(f"kb add: {added['added']} documents in {add_s:.1f} s ({added['summary']})")

        median, summary = inprocess_noop(env)
        print(f"no-op sync() in-process: median {median * 1000:.0f} ms -> {summary}")
        print("| no-op run | wall median of 3 | files parsed | skipped as failed before |"
              " model loaded |")  # fmt: skip
        print("|---|---:|---:|---:|---|")
        for command in (["sync"], ["add", str(root)]):
            runs = [kb(env, *command) for _ in range(3)]
            wall = statistics.median(r[1] for r in runs)
            last = runs[-1][0]
            parsed = last["added"] + last["updated"] + len(last["failed"])
            print(
                f"| `kb {command[0]}` | {wall * 1000:.0f} ms | {parsed} |"
                f" {last['known_failures']} | {last['model_loaded']} |"
            )

        files = sorted(p for p in root.rglob("*.*") if "node_modules" not in p.parts)
        for content in (True, False):
            picked = files[7 :: max(1, len(files) // 10)][:10]
            edit(picked, content)
            result, wall = kb(env, "sync")
            label = "10 files edited" if content else "10 files touched (mtime only)"
            print(
                f"{label}: `kb sync` {wall * 1000:.0f} ms end to end, sync itself"
                f" {result['seconds'] * 1000:.0f} ms -> updated {result['updated']},"
                f" added {result['added']}, unchanged {result['unchanged']},"
                f" deleted {result['deleted']}"
            )
