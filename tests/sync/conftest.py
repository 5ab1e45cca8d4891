"""Shared helpers for the sync / hook / export / crash tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kb_search.store import db

WRAPPER = """\
from kb_search.cli import main

if __name__ == "__main__":
    main()
"""


@pytest.fixture
def environment(environment):
    """In-process parsing keeps the CliRunner tests quick and free of worker processes."""
    environment.env["KB_WORKERS"] = "0"
    return environment


@pytest.fixture(scope="session")
def kb_script(tmp_path_factory) -> Path:
    """A `kb` entry point script (guarded: parser workers re-import it)."""
    script = tmp_path_factory.mktemp("bin") / "kb_with_sync.py"
    script.write_text(WRAPPER)
    return script


@pytest.fixture
def kb_env(model_cache: Path, tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return dict(
        os.environ,
        HOME=str(home),
        KB_MODEL_CACHE=str(model_cache),
        HF_HUB_OFFLINE="1",
        KB_DATA_DIR=str(tmp_path / "data"),
    )


@pytest.fixture
def run_kb(kb_script: Path, kb_env: dict[str, str]):
    """Run the kb wrapper in a subprocess; returns CompletedProcess (text)."""

    def run(*args: str, timeout: float = 300, check: bool = True, **env: str):
        done = subprocess.run(
            [sys.executable, str(kb_script), *args],
            env=dict(kb_env, **env),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check:
            assert done.returncode == 0, done.stderr
        return done

    return run


def integrity(db_path: Path) -> str:
    conn = db.connect(db_path, readonly=True)
    try:
        return "; ".join(r[0] for r in conn.execute("PRAGMA integrity_check"))
    finally:
        conn.close()


def consistency_problems(conn: db.Connection) -> list[str]:
    """Chunks vs documents, FTS rows and vector rows: one to one, else what is off.
    Needs a writable connection (FTS5's integrity-check is an INSERT command)."""
    problems = []
    if [r[0] for r in conn.execute("PRAGMA integrity_check")] != ["ok"]:
        problems.append("integrity_check failed")
    bad = conn.execute(
        "SELECT count(*) FROM documents d WHERE chunk_count !="
        " (SELECT count(*) FROM chunks c WHERE c.document_id = d.id)"
    ).fetchone()[0]
    if bad:
        problems.append(f"{bad} documents with a wrong chunk count")
    chunk_ids = {r[0] for r in conn.execute("SELECT id FROM chunks")}
    # with rank=1 FTS5 compares its index against the content rows: one entry per chunk
    for fts in ("chunks_fts", "chunks_cjk"):
        try:
            conn.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('integrity-check', 1)")
        except db.DatabaseError as exc:
            problems.append(f"{fts} integrity-check: {exc}")
    for (table,) in conn.execute("SELECT table_name FROM vector_tables").fetchall():
        vector_ids = {r[0] for r in conn.execute(f"SELECT rowid FROM {table}")}
        if vector_ids != chunk_ids:
            problems.append(
                f"{table}: {len(chunk_ids - vector_ids)} chunks without vectors,"
                f" {len(vector_ids - chunk_ids)} orphan vectors"
            )
    return problems


@pytest.fixture
def check_db():
    """Assert that the DB at a path is consistent (integrity, FTS, vectors, chunk counts)."""

    def check(path: Path) -> None:
        conn = db.connect(path)
        try:
            assert consistency_problems(conn) == []
        finally:
            conn.close()

    return check
