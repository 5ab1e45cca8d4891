"""Only `store/` talks SQL: every other module asks a store function (issue: one owner per
concern). A call to `.execute`, `.executemany` or `.executescript` anywhere else fails here."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "kb_search"
SQL_CALLS = {"execute", "executemany", "executescript"}


def sql_calls_outside_store() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] == "store":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in SQL_CALLS
            ):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def test_no_sql_outside_store():
    assert sql_calls_outside_store() == []


def test_the_check_sees_a_call(tmp_path):
    tree = ast.parse("conn.execute('SELECT 1')")
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert calls and calls[0].func.attr in SQL_CALLS
