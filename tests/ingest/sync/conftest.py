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


def consistency_problems(conn: db.Connection) -> list[str]:
    """What `kb doctor`'s storage checks find wrong (integrity, FTS, chunk counts, one vector
    per chunk); needs a writable connection (FTS5's integrity-check is an INSERT command)."""
    from kb_search.doctor import storage_checks

    return [f"{c.name}: {c.detail}" for c in storage_checks(conn) if not c.ok]


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
