"""Hybrid search over a partly embedded index: a chunk without a vector yet is fused over the
lexical leg alone, never ranked down for the vector leg it cannot be in (search/fusion.py);
a fully embedded index ranks exactly as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb_search.config import load_config
from kb_search.knowledge_base import KnowledgeBase
from kb_search.search.fusion import fuse
from kb_search.search.legs import LegResult, lexical_score
from kb_testing import HashEmbedder

QUERY = "pluggy hookspec markers"
OTHERS = [
    "Click groups commands; each command takes options and arguments from the terminal.",
    "Markers in pytest select tests; a marker is applied with a decorator on a function.",
    "Hooks let a plugin change how the program runs, called at fixed points of its work.",
    "The specification of a command line interface: options, flags and their defaults.",
    "Packaging a Python project: a pyproject file names the build backend and metadata.",
    "Logging configuration: handlers, formatters and the levels of each named logger.",
    "A virtual environment keeps a project's packages apart from the system's packages.",
    "Entry points let an installed package announce plugins that another program loads.",
]


def make_kb(tmp_path: Path) -> KnowledgeBase:
    config = load_config(env={"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"})
    return KnowledgeBase(config, embedder=HashEmbedder(), cwd=tmp_path)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "pluggy.md").write_text(
        "# Hook specifications\n\nA pluggy hookspec marker declares a hook; the markers"
        " hookspec and hookimpl come from pluggy.HookspecMarker and HookimplMarker.\n"
    )
    for number, text in enumerate(OTHERS):
        (root / f"other{number}.md").write_text(f"# Note {number}\n\n{text}\n")
    return root


def drop_vectors_of(kb: KnowledgeBase, names: list[str]) -> None:
    """What an ingest still in its embedding phase leaves: these files' chunks lack vectors."""
    conn = kb.writer()
    table = conn.execute("SELECT table_name FROM vector_tables").fetchone()[0]
    for name in names:
        conn.execute(
            f"DELETE FROM {table} WHERE rowid IN (SELECT c.id FROM chunks c JOIN documents d"
            " ON d.id = c.document_id WHERE d.path LIKE ?)",
            (f"%/{name}",),
        )


def ranking(kb: KnowledgeBase, **options) -> list[tuple[str, float]]:
    response = kb.search(QUERY, kb.search_options(**options)).to_dict()
    return [(Path(r["source"]["path"]).name, r["score"]) for r in response["results"]]


@pytest.mark.parametrize("fusion", ["convex", "rrf"])
def test_a_half_embedded_index_puts_the_keyword_exact_document_first(tmp_path, folder, fusion):
    with make_kb(tmp_path) as kb:
        kb.add([folder])
        # half the files without vectors, the one holding the query's words among them
        drop_vectors_of(kb, ["pluggy.md"] + [f"other{n}.md" for n in range(0, 8, 2)])
        response = kb.search(QUERY, kb.search_options(fusion=fusion)).to_dict()
        assert response["embedding"]["embedded"] < response["embedding"]["chunks"]
        first = response["results"][0]
        assert Path(first["source"]["path"]).name == "pluggy.md"
        assert first["score_breakdown"]["vector"] is None  # no vector yet, still first
        assert any(r["score_breakdown"]["fts"] is None for r in response["results"][1:])


def test_a_fully_embedded_index_ranks_as_before(tmp_path, folder, monkeypatch):
    from kb_search.search import pipeline

    with make_kb(tmp_path) as kb:
        kb.add([folder])
        looked_up: list[int] = []
        original = pipeline.without_vectors
        monkeypatch.setattr(
            pipeline, "without_vectors", lambda c, ids: looked_up.append(1) or original(c, ids)
        )
        full = ranking(kb)
        assert not looked_up  # fully embedded: the fusion is the full one, nothing asked
        drop_vectors_of(kb, ["other1.md"])
        assert ranking(kb) != full and looked_up  # partly embedded: the rule applies


def lexical(*pairs: tuple[int, float]) -> LegResult:
    return LegResult("ok", [(cid, lexical_score(-x)) for cid, x in pairs], total=len(pairs))


@pytest.mark.parametrize("method", ["convex", "rrf"])
def test_a_chunk_without_a_vector_is_fused_over_the_lexical_leg_alone(method):
    legs = {
        "lexical": lexical((1, 9.0), (2, 5.0)),
        "vector": LegResult("ok", [(3, 0.9), (2, 0.5)]),
    }
    before = {c.chunk_id: c.score for c in fuse(legs, method=method)}
    after = {c.chunk_id: c.score for c in fuse(legs, method=method, unembedded=frozenset({1}))}
    assert after[1] == 1.0 > before[1]  # first of the leg it can be in: first of all
    assert after[2] == before[2] and after[3] == before[3]  # chunks with vectors: unchanged
    assert fuse(legs, method=method, unembedded=frozenset()) == fuse(legs, method=method)
