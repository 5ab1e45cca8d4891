"""Issue 25, break 3: a root stays the folder the user added. When `git pull` (or anyone)
replaces an added folder with a symlink, `kb sync` and `kb watch` do not follow it: nothing
from the link's target is indexed, the root's documents are kept as they were, and the
summary says which root and where it leads now."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kb_search.errors import UserInputError
from kb_search.ingest.watch import describe, plan_targets
from kb_search.store import db

TOKEN = "oauth_token = ghp_s3cr3tvalue"


@pytest.fixture
def environment(environment):
    environment.env["KB_WORKERS"] = "0"
    return environment


@pytest.fixture
def swapped(kb, tmp_path) -> tuple[Path, Path]:
    """repo/docs added and indexed, then replaced by a symlink to a secret folder."""
    docs = tmp_path / "repo" / "docs"
    docs.mkdir(parents=True)
    (docs / "guide.md").write_text("# Guide\n\nHow to deploy the service.\n")
    secret = tmp_path / "home_secret" / ".config"
    secret.mkdir(parents=True)
    (secret / "tokens.md").write_text(f"# Tokens\n\n{TOKEN}\n")
    kb.json("add", str(docs))
    shutil.rmtree(docs)
    docs.symlink_to(Path("..") / "home_secret" / ".config")
    return docs, secret


def _rel_paths(environment) -> list[str]:
    conn = db.connect(Path(environment.env["KB_DATA_DIR"]) / "kb.db", readonly=True)
    try:
        return sorted(r[0] for r in conn.execute("SELECT rel_path FROM documents"))
    finally:
        conn.close()


def test_a_root_that_became_a_symlink_is_not_followed(kb, environment, swapped):
    docs, secret = swapped
    summary = kb.json("sync")
    assert kb.json("search", "oauth_token", "--mode", "lexical")["results"] == []
    assert summary["added"] == 0 and summary["deleted"] == 0
    (root,) = summary["unfollowed_roots"]
    assert root["root"] == str(docs) and root["documents"] == 1
    assert str(secret) in root["reason"] and "symlink" in root["reason"]
    assert "not followed" in summary["summary"] and "kept" in summary["summary"]
    assert _rel_paths(environment) == ["docs/guide.md"]  # kept, not removed silently

    # A sync of a path under it (what `kb watch` hands over for an event) neither.
    summary = kb.json("sync", str(docs / "tokens.md"))
    assert summary["added"] == 0 and summary["unfollowed_roots"]
    assert kb.json("search", "oauth_token", "--mode", "lexical")["results"] == []


def test_a_root_below_a_folder_that_became_a_symlink(kb, environment, tmp_path):
    repo = tmp_path / "work" / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "guide.md").write_text("# Guide\n\nHow to deploy.\n")
    elsewhere = tmp_path / "elsewhere" / "docs"
    elsewhere.mkdir(parents=True)
    (elsewhere / "tokens.md").write_text(f"# Tokens\n\n{TOKEN}\n")
    kb.json("add", str(repo / "docs"))
    shutil.rmtree(repo)
    repo.symlink_to(tmp_path / "elsewhere")
    summary = kb.json("sync")
    assert [r["root"] for r in summary["unfollowed_roots"]] == [str(repo / "docs")]
    assert kb.json("search", "oauth_token", "--mode", "lexical")["results"] == []


def test_a_nested_root_that_became_a_symlink_keeps_its_documents(kb, environment, tmp_path):
    outer = tmp_path / "notes"
    inner = outer / "team"
    inner.mkdir(parents=True)
    (outer / "a.md").write_text("# A\n\nOuter note.\n")
    (inner / "b.md").write_text("# B\n\nTeam note.\n")
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "tokens.md").write_text(f"# Tokens\n\n{TOKEN}\n")
    kb.json("add", str(outer))
    kb.json("add", str(inner), "--tag", "team")
    shutil.rmtree(inner)
    inner.symlink_to(secret)
    summary = kb.json("sync")
    assert summary["deleted"] == 0 and summary["unfollowed_roots"][0]["root"] == str(inner)
    assert _rel_paths(environment) == ["notes/a.md", "notes/team/b.md"]
    assert kb.json("search", "oauth_token", "--mode", "lexical")["results"] == []


def test_watch_does_not_watch_a_root_that_became_a_symlink(kb, environment, swapped, tmp_path):
    docs, _ = swapped
    other = tmp_path / "other"
    other.mkdir()
    (other / "c.md").write_text("# C\n\nStill here.\n")
    kb.json("add", str(other))
    conn = db.connect(Path(environment.env["KB_DATA_DIR"]) / "kb.db", readonly=True)
    try:
        plan = plan_targets(conn, None)
        assert [t.directory for t in plan.targets] == [other.resolve()]
        assert plan.redirected == [str(docs)]
        assert "not followed" in describe(plan)
        with pytest.raises(UserInputError, match="not followed"):
            plan_targets(conn, [docs])
    finally:
        conn.close()


def test_kb_remove_drops_a_root_that_became_a_symlink(kb, environment, swapped):
    docs, _ = swapped
    removal = kb.json("remove", str(docs))
    assert removal["forgotten_roots"] == [str(docs)] and len(removal["removed"]) == 1
    assert _rel_paths(environment) == []
    assert kb.json("sync")["unfollowed_roots"] == []


def test_a_file_swapped_for_a_symlink_after_the_scan_is_not_read(
    kb, environment, tmp_path, monkeypatch
):
    """The walk saw a regular file; a symlink to a secret took its place before the read.
    The read refuses the link (O_NOFOLLOW) instead of indexing the secret under the note's
    name."""
    from kb_search.ingest import sync as sync_module

    notes = tmp_path / "notes"
    notes.mkdir()
    note = notes / "a.md"
    note.write_text("# A\n\nFirst version.\n")
    secret = tmp_path / "secret.md"
    secret.write_text(f"# Tokens\n\n{TOKEN}\n")
    kb.json("add", str(notes))
    note.write_text("# A\n\nSecond, longer version of the note.\n")
    real_scan = sync_module.scan

    def scan_then_swap(*args, **kwargs):
        result = real_scan(*args, **kwargs)
        note.unlink()
        note.symlink_to(secret)
        return result

    monkeypatch.setattr(sync_module, "scan", scan_then_swap)
    summary = kb.json("sync")
    monkeypatch.undo()
    assert kb.json("search", "oauth_token", "--mode", "lexical")["results"] == []
    assert "symlink" in summary["failed"][0]["reason"] and summary["dropped"] == 1
