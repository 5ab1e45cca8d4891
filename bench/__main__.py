"""`python -m bench NAME [ARGS]`: run one benchmark; without a name, list them."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def benchmarks() -> dict[str, str]:
    """name -> the first line of its docstring, for every module that defines `main`."""
    found = {}
    for path in sorted(HERE.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body):
            found[path.stem] = (ast.get_docstring(tree) or "").split("\n")[0]
    return found


def run(argv: list[str]) -> int:
    known = benchmarks()
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in known:
        width = max(map(len, known))
        listing = "\n".join(f"  {name:<{width}}  {line}" for name, line in known.items())
        usage = f"usage: python -m bench NAME [ARGS]  (NAME --help for its own)\n\n{listing}"
        if argv and argv[0] not in ("-h", "--help"):
            print(f"no benchmark {argv[0]!r}\n\n{usage}", file=sys.stderr)
            return 2
        print(usage)
        return 0
    module = importlib.import_module(f"bench.{argv[0]}")
    sys.argv[0] = f"python -m bench {argv[0]}"  # argparse's usage line
    return module.main(argv[1:]) or 0


if __name__ == "__main__":
    raise SystemExit(run(sys.argv[1:]))
