"""`kb sync` (and `kb add FOLDER`) apply today's rules to what an earlier run indexed: a
document chunked by an older kb is judged and read again (generated or unsupported files
leave, the rest is re-chunked, unchanged chunk texts keep their vectors), a file that is
ignored now leaves, and each is counted by reason apart from deletions."""

from __future__ import annotations

import json
import os
from pathlib import Path

from kb_search.ingest.changes import CHUNKER_VERSION
from kb_search.store import db

BUNDLE = "!function(e,t){" + ";".join(f"var a{i}=e[{i}]||t.x{i}" for i in range(600)) + "}();\n"


def _db(environment) -> Path:
    return Path(environment.env["KB_DATA_DIR"]) / "kb.db"


def chunked_by_an_older_kb(environment, titles: dict[str, str] | None = None) -> None:
    """What an index built by the kb before this chunker version holds: its fingerprint (and,
    for Markdown without an H1, the file-name title that kb gave)."""
    conn = db.connect(_db(environment))
    with db.transaction(conn):
        conn.execute(
            "UPDATE documents SET chunking = 'v' || ? || substr(chunking, instr(chunking, ':'))",
            (CHUNKER_VERSION - 1,),
        )
        for suffix, title in (titles or {}).items():
            conn.execute("UPDATE documents SET title = ? WHERE path LIKE ?", (title, f"%{suffix}"))
    conn.close()


def folder(tmp_path: Path) -> Path:
    notes = tmp_path / "project"
    (notes / "static").mkdir(parents=True)
    (notes / "guide.md").write_text("## Configuration\n\nThe viewer reads NOTES_URL at start.\n")
    (notes / "static" / "app.min.js").write_text(BUNDLE)
    (notes / "package-lock.json").write_text(json.dumps({"lockfileVersion": 3}, indent=2))
    (notes / "draft.md").write_text("# Draft\n\nHalf-written thoughts about capybaras.\n")
    return notes


def paths(kb) -> list[str]:
    return sorted(Path(d["path"]).name for d in kb.json("list")["documents"])


def test_sync_drops_generated_files_an_older_kb_indexed_and_says_why(kb, environment, tmp_path):
    notes = folder(tmp_path)
    kb.json("add", str(notes), "--include-generated")
    assert paths(kb) == ["app.min.js", "draft.md", "guide.md", "package-lock.json"]
    chunked_by_an_older_kb(environment)
    summary = kb.json("sync")
    assert summary["excluded"] == {"lock file": 1, "minified": 1}
    assert summary["deleted"] == 0 and summary["updated"] == 0
    assert summary["rechunked"] == 2
    assert (
        "2 documents left the index, their files left out now: 1 lock file, 1 minified"
        " (--include-generated keeps generated files)" in summary["summary"]
    )
    assert "2 unchanged files read again: chunked by an older kb" in summary["summary"]
    assert paths(kb) == ["draft.md", "guide.md"]
    again = kb.json("sync")  # a new look finds them as any new generated file
    assert again["excluded"] == {} and again["rechunked"] == 0
    assert again["left_out"] == {"lock file": 1, "minified": 1} and again["unchanged"] == 2


def test_a_generated_file_this_kb_indexed_stays(kb, environment, tmp_path):
    """--include-generated (or naming the file) was this kb's choice: sync keeps it."""
    notes = folder(tmp_path)
    kb.json("add", str(notes), "--include-generated")
    summary = kb.json("sync")
    assert summary["excluded"] == {} and summary["unchanged"] == 4
    assert len(paths(kb)) == 4


def test_a_named_file_outside_every_folder_stays_when_an_older_kb_indexed_it(
    kb, environment, tmp_path
):
    bundle = tmp_path / "loose" / "vendor.min.js"
    bundle.parent.mkdir()
    bundle.write_text(BUNDLE)
    hidden = bundle.parent / ".notes"  # a hidden file is read when named, too
    hidden.write_text("Ideas for the garden: plant more lavender.\n")
    kb.json("add", str(bundle), str(hidden))
    chunked_by_an_older_kb(environment)
    summary = kb.json("sync")
    assert summary["excluded"] == {} and summary["rechunked"] == 2, summary["summary"]
    assert paths(kb) == [".notes", "vendor.min.js"]


def test_a_file_ignored_now_leaves_the_index_counted_as_ignored_not_deleted(kb, tmp_path):
    notes = folder(tmp_path)
    kb.json("add", str(notes))
    (notes / ".kbignore").write_text("draft.md\n")
    os.remove(notes / "guide.md")
    summary = kb.json("sync")
    assert summary["excluded"] == {"ignored": 1}
    assert summary["deleted"] == 1  # guide.md: gone
    assert "1 document left the index, their files left out now: 1 ignored. " in summary["summary"]
    assert paths(kb) == []


def test_sync_rechunks_what_an_older_kb_chunked_once(kb, environment, tmp_path):
    notes = folder(tmp_path)
    kb.json("add", str(notes))
    chunked_by_an_older_kb(environment, {"guide.md": "guide"})  # the old title: the stem
    summary = kb.json("sync")
    assert (summary["rechunked"], summary["updated"], summary["added"]) == (2, 0, 0)
    titles = {Path(d["path"]).name: d["title"] for d in kb.json("list")["documents"]}
    assert titles["guide.md"] == "Configuration"
    again = kb.json("sync")
    assert (again["rechunked"], again["unchanged"]) == (0, 2)
    assert "read again" not in again["summary"]


def test_sync_rechunks_an_older_kb_s_files_whose_mtime_moved_but_bytes_did_not(
    kb, environment, tmp_path
):
    """A folder copied, checked out again or touched since an older kb chunked it: the bytes
    are the same, the chunks are not today's (the old code recorded the new mtime and
    counted them unchanged, so the index kept the old chunking for good)."""
    notes = folder(tmp_path)
    kb.json("add", str(notes))
    chunked_by_an_older_kb(environment, {"guide.md": "guide"})
    for name in ("guide.md", "draft.md"):
        os.utime(notes / name, (1_600_000_000, 1_600_000_000))
    summary = kb.json("sync")
    assert (summary["rechunked"], summary["updated"], summary["unchanged"]) == (2, 0, 0)
    titles = {Path(d["path"]).name: d["title"] for d in kb.json("list")["documents"]}
    assert titles["guide.md"] == "Configuration"
    again = kb.json("sync")
    assert (again["rechunked"], again["unchanged"]) == (0, 2)


def test_doctor_says_which_files_an_older_kb_chunked_until_sync(kb, environment, tmp_path):
    notes = folder(tmp_path)
    kb.json("add", str(notes))
    chunked_by_an_older_kb(environment)
    check = {c["name"]: c for c in kb.json("doctor")["checks"]}["files_in_sync"]
    assert check["warning"] and "2 files chunked by an older kb" in check["detail"]
    assert "kb sync" in check["detail"]
    kb.json("sync")
    check = {c["name"]: c for c in kb.json("doctor")["checks"]}["files_in_sync"]
    assert not check.get("warning") and "match the disk" in check["detail"]


def test_add_of_the_folder_drops_generated_files_an_older_kb_indexed_as_sync_does(
    kb, environment, tmp_path
):
    """`kb add FOLDER` again after an upgrade: the same outcome and wording as `kb sync`
    (the old code kept them, counted only as "generated files left out")."""
    notes = folder(tmp_path)
    kb.json("add", str(notes), "--include-generated")
    chunked_by_an_older_kb(environment)
    summary = kb.json("add", str(notes))
    assert summary["excluded"] == {"lock file": 1, "minified": 1}
    assert summary["left_out"] == {}  # counted once: as leaving the index
    assert (
        "2 documents left the index, their files left out now: 1 lock file, 1 minified"
        " (--include-generated keeps generated files)" in summary["summary"]
    )
    assert paths(kb) == ["draft.md", "guide.md"]
    again = kb.json("add", str(notes))
    assert again["excluded"] == {} and again["left_out"] == {"lock file": 1, "minified": 1}
    assert again["skipped"] == 2


def test_add_of_the_folder_drops_a_file_ignored_now_but_keeps_what_this_kb_chose(
    kb, environment, tmp_path
):
    notes = folder(tmp_path)
    kb.json("add", str(notes), "--include-generated")  # this kb's choice: stays
    (notes / ".kbignore").write_text("draft.md\n")
    os.remove(notes / "guide.md")  # gone: `kb sync`'s to delete, not add's
    summary = kb.json("add", str(notes))
    assert summary["excluded"] == {"ignored": 1}
    assert "1 document left the index, their files left out now: 1 ignored." in summary["summary"]
    assert paths(kb) == ["app.min.js", "guide.md", "package-lock.json"]
    # they are in the index: already indexed, not "2 generated files left out" (old code)
    assert summary["left_out"] == {} and summary["skipped"] == 2
    named = kb.json("add", str(notes / "static"))  # a folder below: judges only its files
    assert named["excluded"] == {}


def test_add_after_a_chunker_bump_says_files_were_read_again_not_added(kb, environment, tmp_path):
    """Old code: `kb add` of a folder an older kb chunked said "Added 2 documents" for files
    that were in the index already; `kb sync` says "read again" for the same outcome."""
    notes = folder(tmp_path)
    kb.json("add", str(notes))
    chunked_by_an_older_kb(environment)
    summary = kb.json("add", str(notes))
    assert summary["added"] == 0 and summary["updated"] == 0, summary["summary"]
    assert summary["rechunked"] == 2
    assert summary["summary"].startswith("Added 0 documents. 2 unchanged files read again:")
    assert f"({summary['chunks']} chunks written in all)" in summary["summary"]
    assert "2 unchanged files read again: chunked by an older kb" in summary["summary"]
    (notes / "draft.md").write_text("# Draft\n\nFinished thoughts about capybaras.\n")
    chunked_by_an_older_kb(environment)
    changed = kb.json("add", str(notes))
    assert changed["updated"] == 1 and changed["rechunked"] == 1, changed["summary"]
