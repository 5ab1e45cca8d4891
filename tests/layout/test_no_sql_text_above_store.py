"""No SQL text above store/: a search hands store typed values (`store.chunk_filter.
ChunkFilter`) and store builds its own WHERE. Two checks: no module outside store/ holds a
string that reads as SQL, and none calls a store function that takes SQL text (a parameter
named `where`, `params`, `sql` or `clause`; store's own helpers such as `db.rows_in` may)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "kb_search"
SQL_TEXT = re.compile(
    r"\bSELECT\b[\s\S]+\bFROM\b|\bINSERT\s+(OR\s+\w+\s+)?INTO\b|\bDELETE\s+FROM\b"
    r"|\bUPDATE\s+\w+\s+SET\b|\bWHERE\b[\s\S]*\?|\bIN\s*\(\s*\?|\b\w+\.\w+\s*(=|>=|<=|<|>)\s*\?"
)
SQL_PARAMETERS = {"where", "params", "sql", "clause"}


def _modules(inside_store: bool) -> list[tuple[Path, ast.Module]]:
    return [
        (path, ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted(PACKAGE.rglob("*.py"))
        if (path.relative_to(PACKAGE).parts[0] == "store") == inside_store
    ]


def sql_literals(tree: ast.Module) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and SQL_TEXT.search(node.value)
    ]  # fmt: skip


def functions_taking_sql(tree: ast.Module) -> set[str]:
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and {a.arg for a in [*node.args.args, *node.args.kwonlyargs]} & SQL_PARAMETERS
    }


def names_used(tree: ast.Module) -> set[str]:
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
        elif isinstance(node, ast.ImportFrom):
            used.update(alias.name for alias in node.names)
    return used


def test_no_sql_text_outside_store():
    found = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path, tree in _modules(inside_store=False)
        for line in sql_literals(tree)
    ]
    assert found == []


def test_no_module_above_store_calls_a_store_function_that_takes_sql_text():
    taking_sql = set().union(*(functions_taking_sql(tree) for _, tree in _modules(True)))
    found = [
        f"{path.relative_to(PACKAGE)}: {sorted(names_used(tree) & taking_sql)}"
        for path, tree in _modules(inside_store=False)
        if names_used(tree) & taking_sql
    ]
    assert found == []


def test_the_checks_see_sql_text_and_a_where_parameter():
    assert sql_literals(ast.parse('x = "d.mtime >= ?"')) == [1]
    assert sql_literals(ast.parse('x = "SELECT c.id FROM chunks c"')) == [1]
    assert sql_literals(ast.parse('x = "select what you need from the list"')) == []
    store = ast.parse("def bm25_matches(conn, expr, where='', params=()): ...")
    assert functions_taking_sql(store) == {"bm25_matches"}
    assert "bm25_matches" in names_used(ast.parse("retrieval.bm25_matches(conn, e, w, p)"))
