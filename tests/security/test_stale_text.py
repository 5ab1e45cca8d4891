"""Issue 25, break 4: text a file no longer holds never stays searchable. A file emptied,
overwritten with bytes no parser reads, or cut to its front matter loses its document at the
sync that sees it (the failure recorded), and `kb doctor` warns about files changed since
they were indexed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kb_search.store import db
from kb_search.store.skipped import load_skipped

SECRET = "The launch code is swordfish, said the note."


@pytest.fixture
def environment(environment):
    environment.env["KB_WORKERS"] = "0"  # in-process parsing: quick, and the watch path
    return environment


def _db(environment) -> Path:
    return Path(environment.env["KB_DATA_DIR"]) / "kb.db"


def _hits(kb, word: str) -> list[str]:
    response = kb.json("search", word, "--mode", "lexical")
    return [r["text"] for r in response["results"]]


CASES = {
    "emptied": (b"", "a.md"),
    "random bytes": (bytes(range(256)) * 8, "a.md"),
    "json with NUL bytes": (b'{"note": "kept\x00\x00\x00 out"}\x00' * 40, "a.json"),
    "markdown cut to front matter": (b"---\ntitle: Launch\ntags: [x]\n---\n", "a.md"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_stale_text_leaves_with_its_file(kb, environment, tmp_path, case):
    data, name = CASES[case]
    notes = tmp_path / "notes"
    notes.mkdir()
    target = notes / name
    if name.endswith(".json"):
        target.write_text(json.dumps({"note": SECRET}))
    else:
        target.write_text(f"# Launch\n\n{SECRET}\n")
    (notes / "other.md").write_text("# Other\n\nA note about quokkas.\n")
    kb.json("add", str(notes))
    assert _hits(kb, "swordfish")

    target.write_bytes(data)
    summary = kb.json("sync")

    assert _hits(kb, "swordfish") == []
    assert summary["dropped"] == 1 and summary["unchanged"] == 1
    conn = db.connect(_db(environment), readonly=True)
    try:
        paths = [r[0] for r in conn.execute("SELECT rel_path FROM documents")]
        remembered = load_skipped(conn)
    finally:
        conn.close()
    assert paths == ["notes/other.md"]
    assert str(target) in remembered  # skipped until it changes, like any failure
    if summary["failed"]:
        log = (Path(environment.env["KB_DATA_DIR"]) / "ingest-errors.log").read_text()
        assert str(target) in log and "indexed text was removed" in log

    target.write_text(f"# Launch\n\n{SECRET}\n")
    assert kb.json("sync")["added"] == 1
    assert _hits(kb, "swordfish")


def test_unreadable_file_loses_its_text(kb, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads any file")
    notes = tmp_path / "notes"
    notes.mkdir()
    secret = notes / "a.md"
    secret.write_text(f"# Launch\n\n{SECRET}\n")
    kb.json("add", str(notes))
    secret.write_text(f"# Launch\n\n{SECRET} And more.\n")
    secret.chmod(0)
    try:
        summary = kb.json("sync")
    finally:
        secret.chmod(0o644)
    assert summary["dropped"] == 1 and "permission denied" in summary["failed"][0]["reason"]
    assert _hits(kb, "swordfish") == []


def test_doctor_warns_about_files_changed_since_indexed(kb, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text(f"# Launch\n\n{SECRET}\n")
    (notes / "b.md").write_text("# Other\n\nA note about quokkas.\n")
    kb.json("add", str(notes))
    checks = {c["name"]: c for c in kb.json("doctor")["checks"]}
    assert checks["files_in_sync"]["ok"] and not checks["files_in_sync"]["warning"]

    os.utime(notes / "b.md", (1, 1))  # touched only: same bytes, not stale
    (notes / "a.md").write_text("# Launch\n\nNothing secret here any more.\n")
    result = kb("doctor", "--format", "json")  # a warning: exit 0
    check = {c["name"]: c for c in json.loads(result.stdout)["checks"]}["files_in_sync"]
    assert check["ok"] and check["warning"]
    assert "notes/a.md" in check["detail"] and "notes/b.md" not in check["detail"]
    assert "kb sync" in check["detail"]
    human = kb("doctor", "--format", "human").stdout
    assert "[warn] files_in_sync" in human

    kb.json("sync")
    check = {c["name"]: c for c in kb.json("doctor")["checks"]}["files_in_sync"]
    assert not check["warning"]
