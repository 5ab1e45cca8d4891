"""The faces (cli/, mcp/) import from search/ only its shared types: the response
(`results`), the filters (`query.Filters`) and the field projection of a response (`fields`).
The pipeline, its stages and the budget are reached through KnowledgeBase. `.importlinter`
forbids the modules that exist today; this list is closed, so a new search module is
internal until it is added here (and to ARCHITECTURE.md's table)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "kb_search"
FACES = ("cli", "mcp")
SHARED = {
    "kb_search.search.results",
    "kb_search.search.query",
    "kb_search.search.fields",
    # the same types through the package face
    "kb_search.search.Filters",
    "kb_search.search.SearchResponse",
    "kb_search.search.SearchError",
}


def search_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, what) for each import from search/: the module, or the package face's name."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level:
            module = node.module or ""
            if module.startswith("kb_search.search."):
                found.append((node.lineno, module))
            elif module == "kb_search.search":
                found += [(node.lineno, f"{module}.{a.name}") for a in node.names]
            elif module == "kb_search" and any(a.name == "search" for a in node.names):
                found.append((node.lineno, "kb_search.search"))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names
                      if a.name.split(".")[:2] == ["kb_search", "search"]]  # fmt: skip
    return found


def face_imports_outside_shared() -> list[str]:
    return [
        f"{path.relative_to(PACKAGE)}:{line} {name}"
        for face in FACES
        for path in sorted((PACKAGE / face).rglob("*.py"))
        for line, name in search_imports(ast.parse(path.read_text(encoding="utf-8")))
        if name not in SHARED
    ]


def test_faces_import_only_searchs_shared_types():
    assert face_imports_outside_shared() == []


def test_the_check_sees_an_internal_import():
    tree = ast.parse(
        "from kb_search.search.budget import SEARCH_CANCELLED\n"
        "from kb_search.search.results import SearchResponse\n"
        "from kb_search.search import Filters, SearchOptions\n"
        "import kb_search.search.pipeline\n"
    )
    outside = [name for _, name in search_imports(tree) if name not in SHARED]
    assert outside == [
        "kb_search.search.budget", "kb_search.search.SearchOptions", "kb_search.search.pipeline"
    ]  # fmt: skip
