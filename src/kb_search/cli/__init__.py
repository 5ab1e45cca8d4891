"""The `kb` command. `main` is the entry point: a piped `kb search` is first offered to the
database's warm server before click and the CLI are imported (kb_search.cli.warm.front); every
other call, and every search the server does not answer, runs the click group in `root`."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing's, without importing typing (~5 ms on every start)
if TYPE_CHECKING:
    from typing import Any


def main(argv: list[str] | None = None) -> None:
    if argv is None:  # a real `kb` process (in-process callers pass their arguments)
        from kb_search.cli.warm.front import answer_from_warm_server

        code = answer_from_warm_server(sys.argv[1:])
        if code is not None:
            sys.exit(code)
    from kb_search.cli.root import run

    run(argv)


def __getattr__(name: str) -> Any:
    """`from kb_search.cli import cli` (and the group's other names) without importing click
    on every start."""
    if name in ("cli", "COMMAND_MODULES", "LazyGroup", "ROOT_HELP"):
        from kb_search.cli import root

        return getattr(root, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
