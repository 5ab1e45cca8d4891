"""The server's in-memory vectors follow `kb add` exactly, chunk-id reuse included."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kb_search.store import db
from kb_search.vectors.matrix import LiveMatrixIndex, MatrixIndex
from kb_search.vectors.tables import all_tables

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
