"""Parse speed of the individual grammar packages (what kb uses) vs tree-sitter-language-pack,
same files, same tree-sitter runtime, in one run. The pack is not a kb dependency: install it
in a scratch virtualenv next to kb's grammars to compare
(`pip install tree-sitter-language-pack==0.13.0`; 1.x fetches grammars from the network).

    python -m bench grammar_packages ../shared/data/code_argocd_go:go \
        ../shared/data/code_scrapy_py:python
"""

from __future__ import annotations

import importlib
import time
from pathlib import Path
from typing import Any

from tree_sitter import Language, Parser

from bench import harness

_EXTENSIONS = {"go": ".go", "python": ".py", "javascript": ".js", "java": ".java", "rust": ".rs"}


def individual(language: str) -> Any:
    return Language(importlib.import_module(f"tree_sitter_{language}").language())


def bundled(language: str) -> Any | None:
    try:
        from tree_sitter_language_pack import get_language
    except ImportError:
        return None
    return get_language(language)


def cpu_seconds(language: Any, files: list[bytes], repeat: int) -> float:
    parser = Parser(language)
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        for data in files:
            parser.parse(data)
        best = min(best, time.process_time() - started)
    return best


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("roots", nargs="+", help="DIR:language")
    parser.add_argument("--repeat", type=int, default=3)
    args = harness.parse(parser, argv)
    print(f"{'corpus':<18} {'package':<28} {'files':>5} {'MB':>5} {'CPU s':>6} {'MB/s':>6}")
    for spec in args.roots:
        root, _, language = spec.rpartition(":")
        files = [p.read_bytes() for p in sorted(Path(root).rglob(f"*{_EXTENSIONS[language]}"))]
        size = sum(map(len, files)) / 1e6
        for name, loaded in (
            (f"tree-sitter-{language}", individual(language)),
            ("tree-sitter-language-pack", bundled(language)),
        ):
            if loaded is None:
                print(f"{Path(root).name:<18} {name:<28} (not installed)")
                continue
            seconds = cpu_seconds(loaded, files, args.repeat)
            print(
                f"{Path(root).name:<18} {name:<28} {len(files):>5} {size:>5.1f} "
                f"{seconds:>6.2f} {size / seconds:>6.1f}"
            )
