"""The server's in-memory vectors follow `kb add` exactly, chunk-id reuse included."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kb_search.store import db
from kb_search.store.vectors import all_tables
from kb_search.vectors.matrix import LiveMatrixIndex, MatrixIndex

SECTIONS = ["Alpha section about rivers and boats.", "Beta section about mountains and snow."]


def write(path: Path, first: str) -> None:
    body = "\n\n".join(f"## Part {i}\n\n{text}" for i, text in enumerate([first, *SECTIONS]))
    path.write_text(f"# Notes\n\n{body}\n", encoding="utf-8")


def vectors(index: MatrixIndex) -> dict[int, bytes]:
    return {int(cid): index.matrix[row].tobytes() for row, cid in enumerate(index.ids)}


def chunk_ids(conn: db.Connection, path: Path) -> list[int]:
    sql = "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.path = ?"
    return [r[0] for r in conn.execute(sql + " ORDER BY c.id", (str(path.resolve()),))]


def test_live_index_tracks_adds_and_reused_chunk_ids(kb, environment, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nFirst document about cooking pasta.\n")
    last = docs / "z.md"
    write(last, "Gamma section about deserts.")
    kb("add", str(docs))
    db_path = Path(environment.env["KB_DATA_DIR"]) / "kb.db"
    conn = db.connect(db_path, readonly=True)
    (table,) = all_tables(conn)
    live = LiveMatrixIndex.open(conn, table)
    assert vectors(live.index) == vectors(MatrixIndex.open(conn, table))

    # Re-adding the newest document reuses its chunk ids: only the first chunk's text
    # changes, so a matcher on (count, max id) or on the last row alone would go stale.
    before = chunk_ids(conn, last)
    write(last, "Gamma section about glaciers, rewritten.")
    kb("add", str(docs))
    (docs / "b.md").write_text("# B\n\nA later document about kayaks.\n")
    kb("add", str(docs))
    live.refresh(conn)
    fresh = MatrixIndex.open(conn, table)
    assert vectors(live.index) == vectors(fresh)
    assert before == chunk_ids(conn, last)  # the ids really were reused
    query = fresh.matrix[-1]
    assert live.nearest(conn, query, 3, None) == fresh.nearest(conn, query, 3, None)
    assert np.isclose(live.nearest(conn, query, 1, None)[0][1], 1.0, atol=1e-5)


def test_shortlist_answers_exactly_as_sqlite_vec(kb, environment, tmp_path: Path) -> None:
    """The warm server's shortlist gives sqlite-vec's hits and scores to the last digit,
    duplicate chunks tied across the cut included, and follows an add."""
    from kb_search.vectors.exact import ShortlistIndex, SqliteVecIndex

    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(12):  # identical files: tied vectors straddle any small k
        (docs / f"copy{i}.md").write_text("# Licence\n\nLicensed under the Apache License.\n")
    for i, word in enumerate(["rivers", "boats", "snow", "deserts", "kayaks", "pasta"]):
        (docs / f"n{i}.md").write_text(f"# Note {i}\n\nA note about {word} and licences.\n")
    kb("add", str(docs))
    conn = db.connect(Path(environment.env["KB_DATA_DIR"]) / "kb.db", readonly=True)
    (table,) = all_tables(conn)
    exact, shortlist = SqliteVecIndex.open(conn, table), ShortlistIndex.open(conn, table)
    queries = [MatrixIndex.open(conn, table).matrix[row] for row in (0, 5, 13)]
    for query in queries:
        for k in (1, 3, 5, 11, 40):
            assert shortlist.nearest(conn, query, k, None) == exact.nearest(conn, query, k, None)
    ties = exact.nearest(conn, queries[0], 5, None)
    best = ties[0][1]
    copies = sorted(c for c, s in exact.nearest(conn, queries[0], 40, None) if s == best)
    assert len(copies) == 12 and [c for c, _ in ties] == copies[:5]  # the lowest ids

    (docs / "later.md").write_text("# Later\n\nAlso licensed under the Apache License.\n")
    kb("add", str(docs))
    after = shortlist.nearest(conn, queries[0], 40, None)
    assert after == exact.nearest(conn, queries[0], 40, None) and len(after) == 19


def test_shortlist_answers_while_its_matrix_loads(
    kb, environment, tmp_path: Path, monkeypatch
) -> None:
    """The warm server's shortlist opens at once and loads its matrix on a thread: meanwhile
    sqlite-vec's KNN answers, and the answers are the same before, during and after; a load
    that fails leaves the KNN answering and says why."""
    import threading

    from kb_search.vectors.exact import ShortlistIndex, SqliteVecIndex

    docs = tmp_path / "docs"
    docs.mkdir()
    for i, word in enumerate(["rivers", "boats", "snow", "deserts", "kayaks", "pasta"]):
        (docs / f"n{i}.md").write_text(f"# Note {i}\n\nA note about {word} and licences.\n")
    kb("add", str(docs))
    conn = db.connect(Path(environment.env["KB_DATA_DIR"]) / "kb.db", readonly=True)
    (table,) = all_tables(conn)
    exact = SqliteVecIndex.open(conn, table)
    query = MatrixIndex.open(conn, table).matrix[2]
    expected = exact.nearest(conn, query, 4, None)

    gate = threading.Event()
    load = LiveMatrixIndex.open.__func__

    def gated(cls, *args):
        assert gate.wait(30)
        return load(cls, *args)

    monkeypatch.setattr(LiveMatrixIndex, "open", classmethod(gated))
    loading = ShortlistIndex.open_loading(conn, table)
    assert loading.live is None and not loading.loaded.is_set()
    assert loading.nearest(conn, query, 4, None) == expected  # the KNN, while it loads
    gate.set()
    assert loading.loaded.wait(30) and loading.live is not None
    assert loading.nearest(conn, query, 4, None) == expected  # the matrix, once loaded

    def broken(cls, *args):
        raise OSError("disk on fire")

    monkeypatch.setattr(LiveMatrixIndex, "open", classmethod(broken))
    notes: list[str] = []
    failed = ShortlistIndex.open_loading(conn, table, note=notes.append)
    assert failed.loaded.wait(30) and failed.live is None
    assert notes and "disk on fire" in notes[0]
    assert failed.nearest(conn, query, 4, None) == expected
