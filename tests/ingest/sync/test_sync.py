"""`kb sync`: new, changed, deleted and renamed files; .kbignore; safety when roots vanish."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kb_search.ingest.executor import AddOptions
from kb_search.ingest.sync import sync
from kb_search.store import db


def write_notes(root: Path, count: int = 6) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (root / f"note{i}.md").write_text(
            f"# Note {i}\n\nNote {i} talks about marker{i}x and other shared words.\n"
        )


def db_path(environment) -> Path:
    return Path(environment.env["KB_DATA_DIR"]) / "kb.db"


def snapshot(path: Path) -> dict[str, tuple]:
    """rel_path -> (document id, chunk ids, vector blobs)."""
    conn = db.connect(path, readonly=True)
    table = conn.execute("SELECT table_name FROM vector_tables").fetchone()[0]
    out = {}
    for doc_id, rel in conn.execute("SELECT id, rel_path FROM documents").fetchall():
        chunks = [
            r[0] for r in conn.execute("SELECT id FROM chunks WHERE document_id = ?", (doc_id,))
        ]
        blobs = [
            conn.execute(f"SELECT embedding FROM {table} WHERE rowid = ?", (c,)).fetchone()[0]
            for c in chunks
        ]
        out[rel] = (doc_id, chunks, blobs)
    conn.close()
    return out


def test_round_trip_rename_modify_delete(kb, environment, tmp_path, check_db):
    notes = tmp_path / "notes"
    write_notes(notes)
    kb.json("add", str(notes))
    path = db_path(environment)
    before = snapshot(path)

    (notes / "sub").mkdir()
    os.replace(notes / "note1.md", notes / "sub" / "moved.md")
    (notes / "note2.md").write_text("# Note 2\n\nRewritten: now about zebra crossings.\n")
    (notes / "note3.md").unlink()
    (notes / "fresh.md").write_text("# Fresh\n\nA brand new note about quokkas.\n")
    summary = kb.json("sync")

    assert (summary["added"], summary["updated"], summary["renamed"], summary["deleted"]) == (
        1,
        1,
        1,
        1,
    )
    assert summary["unchanged"] == 3 and summary["failed"] == []
    after = snapshot(path)
    assert after["notes/sub/moved.md"] == before["notes/note1.md"]  # ids, chunks, vectors kept
    assert "notes/note1.md" not in after and "notes/note3.md" not in after
    assert after["notes/note2.md"][0] == before["notes/note2.md"][0]  # re-ingested in place
    assert after["notes/note2.md"][2] != before["notes/note2.md"][2]
    hit = kb.json("search", "marker1x", "--mode", "lexical")["results"][0]
    assert hit["source"]["path"] == str((notes / "sub" / "moved.md").resolve())
    assert kb.json("search", "zebra", "--mode", "lexical")["results"]
    assert kb.json("search", "quokkas", "--mode", "lexical")["results"]
    assert not kb.json("search", "marker3x", "--mode", "lexical")["results"]
    # the FTS path column follows the rename
    assert kb.json("search", "moved", "--mode", "lexical", "--path", "notes/sub/*")["results"]
    check_db(path)
    assert kb.json("doctor")["ok"]

    again = kb.json("sync")
    assert again["unchanged"] == 6
    assert again["added"] + again["updated"] + again["renamed"] + again["deleted"] == 0


def test_title_from_file_name_follows_rename(kb, environment, tmp_path, check_db):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "plain.txt").write_text("Nothing but a plain text note about walruses.\n")
    kb.json("add", str(notes))
    os.replace(notes / "plain.txt", notes / "renamed.txt")
    assert kb.json("sync")["renamed"] == 1
    doc = kb.json("show", str(notes / "renamed.txt"))
    assert doc["path"].endswith("renamed.txt")
    check_db(db_path(environment))


def test_touched_but_unchanged_is_not_reingested(kb, environment, tmp_path):
    notes = tmp_path / "notes"
    write_notes(notes, 3)
    kb.json("add", str(notes))
    before = snapshot(db_path(environment))
    os.utime(notes / "note0.md", (1e9, 1e9))
    summary = kb.json("sync")
    assert summary["unchanged"] == 3 and summary["updated"] == 0
    assert snapshot(db_path(environment)) == before
    # the new mtime was recorded: the next sync does not even hash it
    assert kb.json("sync")["unchanged"] == 3


def test_sync_explicit_paths(kb, environment, tmp_path, check_db):
    notes = tmp_path / "notes"
    write_notes(notes, 4)
    (notes / "deep").mkdir()
    (notes / "deep" / "a.md").write_text("# A\n\nDeep note about capybaras.\n")
    kb.json("add", str(notes))
    (notes / "note0.md").unlink()
    (notes / "note1.md").write_text("# One\n\nChanged to talk about axolotls.\n")
    summary = kb.json("sync", str(notes / "note0.md"), str(notes / "note1.md"))
    assert (summary["deleted"], summary["updated"], summary["unchanged"]) == (1, 1, 0)
    # a removed directory takes its documents with it
    (notes / "deep" / "a.md").unlink()
    (notes / "deep").rmdir()
    assert kb.json("sync", str(notes / "deep"))["deleted"] == 1
    # a file outside every added root is not picked up by an explicit sync
    stray = tmp_path / "stray.md"
    stray.write_text("# Stray\n\nNot added.\n")
    assert kb.json("sync", str(stray))["added"] == 0
    # a directory that was never added is a user error
    other = tmp_path / "other"
    other.mkdir()
    result = kb("sync", str(other), ok=False)
    assert result.exit_code == 1 and "never added" in result.stderr
    check_db(db_path(environment))


def test_missing_root_keeps_its_documents(kb, environment, tmp_path):
    notes = tmp_path / "notes"
    write_notes(notes, 3)
    kb.json("add", str(notes))
    os.replace(notes, tmp_path / "unmounted")
    summary = kb.json("sync")
    assert summary["deleted"] == 0 and summary["missing_roots"] == [str(notes.resolve())]
    assert len(kb.json("list")["documents"]) == 3


def test_loose_files_are_synced_too(kb, environment, tmp_path):
    loose = tmp_path / "loose.md"
    loose.write_text("# Loose\n\nAdded on its own, about pangolins.\n")
    kb.json("add", str(loose))
    loose.write_text("# Loose\n\nNow about armadillos.\n")
    assert kb.json("sync")["updated"] == 1
    loose.unlink()
    assert kb.json("sync")["deleted"] == 1


def test_kbignore_and_default_ignores(kb, environment, tmp_path, check_db):
    notes = tmp_path / "notes"
    write_notes(notes, 2)
    for junk in ("node_modules/pkg", ".venv/lib", "build", ".git", "__pycache__"):
        (notes / junk).mkdir(parents=True)
        (notes / junk / "readme.md").write_text("# Junk\n\njunk words\n")
    (notes / "drafts").mkdir()
    (notes / "drafts" / "d.md").write_text("# Draft\n\ndraft words\n")
    (notes / "scratch.tmp.md").write_text("# Tmp\n\ntmp words\n")
    (notes / "team").mkdir()
    (notes / "team" / "secret.md").write_text("# Secret\n\nsecret words\n")
    (notes / "team" / "keep.tmp.md").write_text("# Keep\n\nkept words\n")
    (notes / ".kbignore").write_text("drafts/\n*.tmp.md\n")
    (notes / "team" / ".kbignore").write_text("secret.md\n!keep.tmp.md\n")
    kb.json("add", str(notes))
    rels = {d["rel_path"] for d in kb.json("list")["documents"]}
    assert rels == {"notes/note0.md", "notes/note1.md", "notes/team/keep.tmp.md"}

    # a pattern added later: sync drops what it now ignores, and adds what is no longer ignored
    (notes / ".kbignore").write_text("*.tmp.md\nnote1.md\n")
    summary = kb.json("sync")
    # note1 out (ignored now: counted so, not as deleted), drafts/d.md in
    assert summary["excluded"] == {"ignored": 1} and summary["deleted"] == 0
    assert summary["added"] == 1
    rels = {d["rel_path"] for d in kb.json("list")["documents"]}
    assert rels == {"notes/note0.md", "notes/drafts/d.md", "notes/team/keep.tmp.md"}
    check_db(db_path(environment))


def test_noop_sync_reads_no_file(environment, tmp_path, monkeypatch):
    notes = tmp_path / "notes"
    write_notes(notes, 20)
    conn = db.connect(tmp_path / "kb.db", create=True)
    options = AddOptions(workers=0)
    first = sync(conn, None, options)
    assert first.added == 0  # nothing was added before: no roots
    from kb_search.ingest.pipeline import add_paths

    add_paths(conn, [notes], options)

    def no_reads(*args, **kwargs):
        raise AssertionError("a no-op sync must not read files")

    monkeypatch.setattr(Path, "read_bytes", no_reads)
    monkeypatch.setattr("kb_search.ingest.sync.ingest_files", no_reads)
    summary = sync(conn, None, options)
    assert summary.unchanged == 20 and summary.changed == 0
    conn.close()


@pytest.mark.parametrize("given", ["file", "dir"])
def test_sync_honours_kbignore_for_explicit_paths(kb, environment, tmp_path, given):
    notes = tmp_path / "notes"
    write_notes(notes, 2)
    kb.json("add", str(notes))
    (notes / ".kbignore").write_text("note0.md\n")
    target = notes / "note0.md" if given == "file" else notes
    summary = kb.json("sync", str(target))
    assert summary["excluded"] == {"ignored": 1} and summary["deleted"] == 0


def test_sync_of_a_path_that_is_neither_on_disk_nor_indexed_is_an_error(tmp_path):
    from kb_search.ingest.executor import AddOptions
    from kb_search.ingest.sync import SyncError, sync
    from kb_search.store import db as kbdb

    conn = kbdb.connect(":memory:")
    with pytest.raises(SyncError, match="does not exist and is not in the index"):
        sync(conn, [tmp_path / "nope.md"], AddOptions(workers=0))
