"""What `kb add` and `kb sync` say matches what happened: a rename is a rename (also when the
file's name was its title), an empty file is empty on every run, and an add that indexed
nothing it was asked to add exits 1 with the reason."""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_untitled(root: Path) -> None:
    """Code files: the title is the file's name, so a rename changes the text the chunks are
    embedded with (the document is re-ingested under its id)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "alpha.py").write_text("def marmots():\n    return 'burrows'\n")
    (root / "beta.py").write_text("def herons():\n    return 'fishing in the shallows'\n")


def test_editing_one_file_and_renaming_another_says_1_updated_1_renamed(kb, tmp_path):
    notes = tmp_path / "notes"
    write_untitled(notes)
    kb.json("add", str(notes))
    (notes / "alpha.py").write_text("def otters():\n    return 'rivers'\n")
    os.replace(notes / "beta.py", notes / "gamma.py")
    summary = kb.json("sync")
    assert (summary["added"], summary["updated"], summary["renamed"]) == (0, 1, 1)
    assert summary["summary"].startswith("Synced: 0 added, 1 updated, 1 renamed, 0 deleted")
    hit = kb.json("search", "herons", "--mode", "lexical")["results"][0]
    assert hit["source"]["path"].endswith("gamma.py") and hit["source"]["title"] == "gamma.py"


def test_a_pure_rename_says_1_renamed(kb, tmp_path):
    notes = tmp_path / "notes"
    write_untitled(notes)
    kb.json("add", str(notes))
    os.replace(notes / "beta.py", notes / "delta.py")
    summary = kb.json("sync")
    assert (summary["added"], summary["updated"], summary["renamed"]) == (0, 0, 1)
    assert "0 added, 0 updated, 1 renamed" in summary["summary"]


def test_a_rename_that_changes_the_extension_is_1_renamed_read_as_its_new_type(kb, tmp_path):
    # homelab.rst -> homelab.md had said "1 added, 1 deleted"
    notes = tmp_path / "notes"
    notes.mkdir()
    text = "Homelab network\n===============\n\nVLAN 20 holds the IoT devices and the heron cam.\n"
    (notes / "homelab.rst").write_text(text)
    (notes / "keep.md").write_text("# Keep\n\nUnrelated.\n")
    kb.json("add", str(notes))
    before = kb.json("search", "heron", "--mode", "lexical")["results"][0]
    os.replace(notes / "homelab.rst", notes / "homelab.md")
    summary = kb.json("sync")
    assert (summary["added"], summary["updated"], summary["renamed"], summary["deleted"]) == (
        0, 0, 1, 0,
    )
    assert "0 added, 0 updated, 1 renamed, 0 deleted" in summary["summary"]
    after = kb.json("search", "heron", "--mode", "lexical")["results"][0]
    assert after["source"]["path"].endswith("homelab.md")
    assert after["source"]["type"] == "markdown"  # read again as Markdown
    assert after["source"]["document_id"] == before["source"]["document_id"]


def test_empty_files_are_reported_as_empty_on_every_run(kb, tmp_path):
    notes = tmp_path / "notes"
    write_untitled(notes)
    (notes / "blank.md").write_text("")
    (notes / "spaces.txt").write_text("  \n\n")
    first = kb.json("add", str(notes))
    assert first["empty"] == 2 and first["known_failures"] == 0
    assert "2 empty files skipped (nothing to index)" in first["summary"]
    for again in (kb.json("add", str(notes)), kb.json("sync")):
        assert again["empty"] == 2 and again["known_failures"] == 0, again
        assert "2 empty files skipped (nothing to index)" in again["summary"]
        assert "failed before" not in again["summary"]


def test_an_add_that_adds_nothing_it_was_asked_to_exits_1(kb, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    empty = notes / "blank.md"
    empty.write_text("")
    result = kb("add", str(empty), ok=False)
    assert result.exit_code == 1
    assert json.loads(result.stdout)["empty"] == 1  # the summary is still printed
    assert result.stderr.strip().splitlines()[-1] == (
        "Error: nothing added: 1 empty file (nothing to index)"
    )
    broken = notes / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4 not really")
    result = kb("add", str(broken), ok=False)
    assert result.exit_code == 1 and "Error: nothing added: " in result.stderr
    assert "broken.pdf" in result.stderr.strip().splitlines()[-1]
    # the error names the file as the summary line above it does
    human = kb("add", str(broken), "--retry-failed", "--format", "human", ok=False)
    shown = human.stdout.split("(first: ", 1)[1].split(": ", 1)[0]
    assert human.stderr.strip().splitlines()[-1].startswith(f"Error: nothing added: {shown}: ")
    # something indexed (now or before) is success, failures beside it or not
    (notes / "good.md").write_text("# Good\n\nSomething to index about lemurs.\n")
    assert kb("add", str(notes), ok=False).exit_code == 0
    assert kb("add", str(notes), ok=False).exit_code == 0  # already indexed: still there
    # an empty folder asks for nothing: no error
    (tmp_path / "nothing").mkdir()
    assert kb("add", str(tmp_path / "nothing"), ok=False).exit_code == 0


def test_an_add_of_a_folder_whose_files_are_all_generated_exits_1(kb, tmp_path):
    """Old code: `kb add dist-only/` said "Added 0 documents ... 2 generated files left out"
    and exited 0, while a named `.gif` (nothing added either) exited 1."""
    built = tmp_path / "built"
    built.mkdir()
    (built / "package-lock.json").write_text(
        json.dumps({"name": "x", "lockfileVersion": 3, "packages": {"": {"version": "1.0.0"}}})
    )
    (built / "app.min.js").write_text("var a=1;" * 2000 + "\n")
    result = kb("add", str(built), ok=False)
    assert result.exit_code == 1
    assert json.loads(result.stdout)["left_out"] == {"lock file": 1, "minified": 1}
    assert result.stderr.strip().splitlines()[-1] == (
        "Error: nothing added: 2 generated files left out: 1 lock file, 1 minified"
        " (--include-generated indexes them)"
    )
    assert kb("add", str(built), "--include-generated", ok=False).exit_code == 0


def test_a_rename_to_a_type_that_fails_to_read_is_a_failure_not_a_rename(kb, tmp_path):
    """`notes.md` -> `notes.pdf` (still Markdown inside): the document cannot follow its file.
    Old code: "1 renamed, 1 failed, 1 dropped" for one file. Now it reads as an edit that
    leaves a file unreadable: the file failed, and its document left the index (dropped)."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "notes.md").write_text("# Herons\n\nHerons fish in the shallows at dawn.\n")
    (notes / "keep.md").write_text("# Keep\n\nUnrelated.\n")
    kb.json("add", str(notes))
    os.replace(notes / "notes.md", notes / "notes.pdf")
    summary = kb.json("sync")
    counts = [summary[k] for k in ("added", "updated", "renamed", "deleted", "dropped")]
    assert counts == [0, 0, 0, 0, 1] and len(summary["failed"]) == 1, summary
    assert summary["failed"][0]["path"].endswith("notes.pdf")
    assert summary["failed"][0]["reason"].endswith("(its indexed text was removed)")
    assert summary["summary"].startswith("Synced: 0 added, 0 updated, 0 renamed, 0 deleted")
    assert kb.json("search", "herons", "--mode", "lexical")["results"] == []
    again = kb.json("sync")  # nothing changed since: the failure is remembered, no more
    assert (again["dropped"], again["failed"], again["known_failures"]) == (0, [], 1)
