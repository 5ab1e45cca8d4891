"""`kb export`: a consistent copy, even mid-ingest, that opens read-only elsewhere."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kb_search.store import db
from kb_testing import document_count


def make_corpus(root: Path, count: int) -> None:
    root.mkdir()
    for i in range(count):
        (root / f"n{i:04d}.md").write_text(
            f"# Note {i}\n\n" + f"Paragraph about item{i}x with common words.\n\n" * 6
        )


def test_export_opens_read_only_elsewhere(kb, environment, sample, tmp_path):
    kb.json("add", str(sample))
    source = Path(environment.env["KB_DATA_DIR"]) / "kb.db"
    target = tmp_path / "export" / "kb.db"
    target.parent.mkdir()
    out = kb.json("export", str(target))
    assert out["documents"] > 0 and Path(out["path"]) == target
    # ship it: another directory, read-only, no -wal/-shm next to it
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    shutil.copy(target, shipped / "kb.db")
    shipped.chmod(0o555)
    try:
        conn = db.connect(shipped / "kb.db", readonly=True)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        copied = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        conn.close()
        live = db.connect(source, readonly=True)
        assert copied == live.execute("SELECT count(*) FROM documents").fetchone()[0]
        live.close()
        for mode in ("lexical", "hybrid"):
            hits = kb.json("search", "git", "--mode", mode, "--db", str(shipped / "kb.db"))
            assert hits["results"], mode
            assert hits["legs"].get("vector", "ok") == "ok" or mode == "lexical"
        assert sorted(os.listdir(shipped)) == ["kb.db"]
    finally:
        shipped.chmod(0o755)


def test_export_refuses_to_overwrite_without_force(kb, sample, tmp_path):
    kb.json("add", str(sample))
    target = tmp_path / "copy.db"
    target.write_text("precious")
    result = kb("export", str(target), ok=False)
    assert result.exit_code == 1 and "--force" in result.stderr
    assert target.read_text() == "precious"
    kb.json("export", str(target), "--force")
    conn = db.connect(target, readonly=True)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    assert kb("export", str(tmp_path), ok=False).exit_code == 1  # a directory


@pytest.mark.slow
def _progress(path: Path) -> tuple[int, int]:
    """(documents, vectors) in a DB: both grow while `kb add` writes text first, then vectors."""
    conn = db.connect(path, readonly=True)
    try:
        documents = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        tables = conn.execute(
            "SELECT name FROM sqlite_master WHERE sql LIKE '%USING vec0%'"
        ).fetchall()
        vectors = sum(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for (t,) in tables)
        return documents, vectors
    finally:
        conn.close()


def test_export_while_an_ingest_writes(run_kb, kb_script, kb_env, tmp_path, check_db):
    corpus = tmp_path / "corpus"
    make_corpus(corpus, 300)
    run_kb("init")
    db_path = tmp_path / "data" / "kb.db"
    writer = subprocess.Popen(
        [sys.executable, str(kb_script), "add", str(corpus), "--format", "json"],
        env=dict(kb_env, KB_WORKERS="0"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    counts: list[int] = []
    try:
        while writer.poll() is None and document_count(db_path) == 0:
            time.sleep(0.05)
        while writer.poll() is None and len(counts) < 8:
            target = tmp_path / f"snap{len(counts)}.db"
            done = run_kb("export", str(target), "--format", "json", check=False)
            assert done.returncode == 0, done.stderr
            check_db(target)
            counts.append(_progress(target))
    finally:
        _, err = writer.communicate(timeout=300)
    assert writer.returncode == 0, err
    print(f"(documents, vectors) in the snapshots taken mid-ingest: {counts}")
    final = _progress(db_path)
    assert final[0] == 300
    # Text is written first, then vectors: each snapshot is a consistent state on the way.
    assert counts == sorted(counts)
    assert len([c for c in counts if (0, 0) < c < final]) >= 2
