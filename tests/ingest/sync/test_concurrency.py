"""Two writers on one DB: both finish, nothing is lost or half-written; readers keep answering."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kb_search.store import db

pytestmark = pytest.mark.slow


def make_corpus(root: Path, prefix: str, count: int) -> None:
    root.mkdir()
    for i in range(count):
        (root / f"{prefix}{i:03d}.md").write_text(
            f"# {prefix} {i}\n\n" + f"Text about {prefix}{i}token and shared words.\n\n" * 5
        )


def test_two_concurrent_writers_and_a_reader(run_kb, kb_script, kb_env, tmp_path, check_db):
    one, two = tmp_path / "one", tmp_path / "two"
    make_corpus(one, "alpha", 120)
    make_corpus(two, "beta", 120)
    run_kb("init")  # the model is provisioned once, not raced by both writers
    env = dict(kb_env, KB_WORKERS="0")
    writers = [
        subprocess.Popen(
            [sys.executable, str(kb_script), "add", str(path), "--format", "json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for path in (one, two, one)  # the third overlaps the first
    ]
    searches = 0
    while any(w.poll() is None for w in writers):
        done = run_kb("search", "shared words", "--mode", "lexical", "--format", "json")
        assert json.loads(done.stdout)["legs"]["lexical"] in ("ok", "empty")
        searches += 1
    outputs = [w.communicate(timeout=300) for w in writers]
    for writer, (out, err) in zip(writers, outputs):
        assert writer.returncode == 0, err
        assert json.loads(out)["failed"] == []
    db_path = tmp_path / "data" / "kb.db"
    conn = db.connect(db_path, readonly=True)
    paths = [r[0] for r in conn.execute("SELECT path FROM documents")]
    conn.close()
    expected = {str(p.resolve()) for p in [*one.iterdir(), *two.iterdir()]}
    assert len(paths) == len(set(paths)) and set(paths) == expected
    check_db(db_path)
    assert searches >= 1
