"""Code chunking before/after: regex (the fallback, what kb used before) vs tree-sitter, and for
Python `ast` vs the tree-sitter Python grammar, on the same files in the same run.

    .venv/bin/python -m bench code_chunking ../shared/data/code_argocd_go \
        ../shared/data/code_scrapy_py

Per chunker: files, chunks, chunks with a symbol, symbols with a parent (`A.b`), distinct
definitions named (packed chunks name several), windows cut from one definition (same symbol as
the chunk before), and CPU time per file (p50/p95, total; process time, so that other load on
the machine does not count).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

from bench import harness
from kb_search.chunking.tokens import count_tokens
from kb_search.formats.code.parse import syntax_chunks
from kb_search.formats.code.python import parse_python
from kb_search.formats.code.regex import regex_chunks
from kb_search.formats.registry import language_for
from kb_search.parsed import ChunkSettings, ParsedChunk

Chunker = Callable[[str, Path, str], list[ParsedChunk]]
SETTINGS = ChunkSettings()


def _regex(text: str, path: Path, language: str) -> list[ParsedChunk]:
    return regex_chunks(text.split("\n"), language, SETTINGS, count_tokens)


def _tree_sitter(text: str, path: Path, language: str) -> list[ParsedChunk]:
    chunks = syntax_chunks(
        text, text.split("\n"), language, path.suffix, SETTINGS, count_tokens, {}
    )
    if chunks is None:
        raise SystemExit(f"no tree-sitter grammar read {path}")
    return chunks


def _python_ast(text: str, path: Path, language: str) -> list[ParsedChunk]:
    return parse_python(text, path, SETTINGS).chunks


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def measure(files: list[tuple[Path, str, str]], chunker: Chunker) -> dict[str, float]:
    times, chunks = [], []
    for path, text, language in files:
        started = time.process_time()
        produced = chunker(text, path, language)
        times.append(time.process_time() - started)
        chunks.append(produced)
    flat = [c for produced in chunks for c in produced]
    split = sum(
        1
        for produced in chunks
        for before, after in zip(produced, produced[1:])
        if after.symbol and after.symbol == before.symbol
    )
    return {
        "files": len(files),
        "chunks": len(flat),
        "with_symbol": sum(1 for c in flat if c.symbol),
        "with_parent": sum(1 for c in flat if c.symbol and "." in c.symbol),
        "definitions": sum(
            len({name for c in produced if c.symbol for name in c.symbol.split(", ")})
            for produced in chunks
        ),
        "split_windows": split,
        "max_tokens": max((c.token_count for c in flat), default=0),
        "p50_ms": statistics.median(times) * 1000,
        "p95_ms": _percentile(times, 0.95) * 1000,
        "total_s": sum(times),
    }


def load(root: Path) -> list[tuple[Path, str, str]]:
    files = []
    for path in sorted(root.rglob("*")):
        language = language_for(path) if path.is_file() else None
        if language:
            files.append((path, path.read_text(encoding="utf-8", errors="replace"), language))
    return files


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("roots", nargs="+", type=Path)
    parser.add_argument("--repeat", type=int, default=3, help="best total of N runs")
    args = harness.parse(parser, argv)
    header = (
        f"{'corpus':<18} {'chunker':<20} {'files':>5} {'chunks':>6} {'symbol':>6} "
        f"{'parent':>6} {'names':>6} {'split':>5} {'maxtok':>6} {'p50 ms':>7} {'p95 ms':>7} "
        f"{'total s':>7}"
    )
    print(header)
    print("-" * len(header))
    for root in args.roots:
        files = load(root)
        python = all(language == "python" for _, _, language in files)
        chunkers: dict[str, Chunker] = (
            {"ast (kept)": _python_ast, "tree-sitter python": _tree_sitter}
            if python
            else {"regex (before)": _regex, "tree-sitter (after)": _tree_sitter}
        )
        rows = {}
        for name, chunker in chunkers.items():
            runs = [measure(files, chunker) for _ in range(args.repeat)]
            rows[name] = min(runs, key=lambda r: r["total_s"])
        for name, row in rows.items():
            print(
                f"{root.name:<18} {name:<20} {row['files']:>5} {row['chunks']:>6} "
                f"{row['with_symbol']:>6} {row['with_parent']:>6} {row['definitions']:>6} "
                f"{row['split_windows']:>5} "
                f"{row['max_tokens']:>6} {row['p50_ms']:>7.2f} {row['p95_ms']:>7.2f} "
                f"{row['total_s']:>7.2f}"
            )
        first, second = rows.values()
        ratio = second["total_s"] / first["total_s"]
        print(f"{'':<18} {'ratio (2nd / 1st)':<20} time {ratio:.2f}x")
