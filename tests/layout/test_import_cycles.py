"""No import cycle in kb_search, package faces included.

import-linter (the Makefile's `lint-imports`) checks the layers between packages; it reads
`from kb_search.vectors import tables` as an import of `kb_search.vectors.tables` only. Here such
a line is also an import of the face `kb_search/vectors/__init__.py`, which runs first and whose
names it reads: a module importing its own package's face while that face imports the module (at
any depth, in a function or not) is a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import kb_search

SRC = Path(kb_search.__file__).resolve().parent.parent


def module_files() -> dict[str, Path]:
    files = {}
    for path in sorted((SRC / "kb_search").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        files[name] = path
    return files


def imported_modules(name: str, path: Path, modules: set[str]) -> set[str]:
    """The kb_search modules a file imports, each `from P import x` counting P's face too."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {module for module in found if module in modules and module != name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    return {name: imported_modules(name, path, set(files)) for name, path in files.items()}


# Known and to be broken: config reads trust.is_trusted and trust reads config's parser, both in
# functions (issue 25 added trust.py; config.py is being edited elsewhere).
KNOWN: list[list[str]] = []


def test_no_import_cycle_package_faces_included():
    assert [c for c in cycles(import_graph()) if c not in KNOWN] == []


def test_a_face_import_closes_a_cycle():
    graph = {
        "p": {"p.a"},  # the face imports a submodule (lazily or not)
        "p.a": {"p.b"},
        "p.b": {"p"},  # `from p import b` reads the face
        "q": set(),
    }
    assert cycles(graph) == [["p", "p.a", "p.b"]]


def test_relative_and_absolute_face_imports_are_both_seen(tmp_path):
    source = tmp_path / "model.py"
    source.write_text("from . import tables\nfrom kb_search.store import db\n")
    modules = {"kb_search.vectors", "kb_search.vectors.tables", "kb_search.store",
               "kb_search.store.db", "kb_search.vectors.model"}  # fmt: skip
    assert imported_modules("kb_search.vectors.model", source, modules) == {
        "kb_search.vectors",
        "kb_search.vectors.tables",
        "kb_search.store",
        "kb_search.store.db",
    }
