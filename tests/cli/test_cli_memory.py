"""What kb remembers between runs: failures stay skipped until the file changes, `kb remove`
holds against `kb sync`, a root's --tag/--type reach files found later, and runs with nothing to
embed never load the model."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


@pytest.fixture
def parses(monkeypatch, environment):
    """Paths parsed in this test (parsing in-process, so the count is exact)."""
    import kb_search.ingest.executor as executor

    environment.env["KB_WORKERS"] = "0"
    seen: list[str] = []
    real = executor.parse_one

    def counting(path, job, count):
        seen.append(Path(path).name)
        return real(path, job, count)

    monkeypatch.setattr(executor, "parse_one", counting)
    return seen


@pytest.fixture
def loads(monkeypatch):
    """Model loads in this test (KnowledgeBase loads embedders through models.loaded)."""
    import kb_search.models.loaded as model

    names: list[str] = []
    real = model.load_embedder

    def counting(config, name, *args, **kwargs):
        names.append(name)
        return real(config, name, *args, **kwargs)

    monkeypatch.setattr(model, "load_embedder", counting)
    return names


def make_tree(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "good.md").write_text("# Good\n\nZebras graze on the savanna.\n")
    (root / "sub" / "blob.txt").write_bytes(bytes(range(256)) * 4)
    (root / "sub" / "empty.md").write_text("")
    return root


def test_failed_and_empty_files_are_not_parsed_again_until_they_change(kb, tmp_path, parses):
    root = make_tree(tmp_path / "tree")
    first = json.loads(kb("add", str(root)).stdout)
    assert first["added"] == 1 and len(first["failed"]) == 1 and first["empty"] == 1
    assert sorted(parses) == ["blob.txt", "empty.md", "good.md"]

    parses.clear()
    again = kb.json("sync")
    assert parses == [] and again["known_failures"] == 1 and again["failed"] == []
    assert again["empty"] == 1  # an empty file stays empty, never "failed before"
    assert "1 file that failed before and did not change skipped" in again["summary"]
    assert "1 empty file skipped (nothing to index)" in again["summary"]
    assert kb.json("add", str(root))["known_failures"] == 1 and parses == []

    blob = root / "sub" / "blob.txt"
    os.utime(blob, (1, 1))  # touched, same bytes: the content hash says it is the same file
    assert kb.json("sync")["known_failures"] == 1 and parses == []

    blob.write_text("Now it is text about giraffes.\n")
    fixed = kb.json("sync")
    assert parses == ["blob.txt"] and fixed["added"] == 1 and fixed["known_failures"] == 0
    parses.clear()
    retried = kb.json("sync", "--retry-failed")
    assert retried["known_failures"] == 0 and retried["empty"] == 1 and parses == ["empty.md"]


def test_a_file_named_on_its_own_is_always_tried(kb, tmp_path, parses):
    root = make_tree(tmp_path / "tree")
    kb("add", str(root))
    parses.clear()
    again = json.loads(kb("add", str(root / "sub" / "blob.txt"), ok=False).stdout)
    assert parses == ["blob.txt"] and len(again["failed"]) == 1


def test_removed_file_stays_out_until_added_by_name(kb, sample):
    kb("add", str(sample))
    recipe = sample / "notes" / "recipes.rst"
    kb("remove", str(recipe))
    synced = kb.json("sync")
    assert synced["added"] == 0 and synced["removed"] == 1
    assert "removed with `kb remove` left out" in synced["summary"]
    assert kb.json("add", str(sample))["removed"] == 1
    assert kb.json("search", "sourdough", "--mode", "lexical")["results"] == []
    back = kb.json("add", str(recipe))
    assert back["added"] == 1
    assert kb.json("sync")["removed"] == 0
    assert kb.json("search", "sourdough", "--mode", "lexical")["results"]


def test_a_roots_tag_and_type_apply_to_files_sync_finds_later(kb, tmp_path):
    root = tmp_path / "papers"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nFirst paper about otters.\n")
    kb("add", str(root), "--tag", "research", "--type", "paper")
    (root / "b.md").write_text("# B\n\nSecond paper about beavers.\n")
    kb("sync")
    found = kb.json("search", "beavers", "--mode", "lexical")["results"][0]["source"]
    assert found["tags"] == ["research"] and found["type"] == "paper"
    kb("add", str(root), "--tag", "2026")  # a second add adds its tags to the root's
    (root / "c.md").write_text("# C\n\nThird paper about moles.\n")
    kb("sync")
    mole = kb.json("search", "moles", "--mode", "lexical")["results"][0]["source"]
    assert mole["tags"] == ["2026", "research"]


def test_noop_add_and_sync_do_not_load_the_model(kb, sample, loads):
    kb("add", str(sample))
    assert loads, "the first add embeds, so it loads the model"
    loads.clear()
    assert kb.json("add", str(sample))["model_loaded"] is False
    assert kb.json("sync")["model_loaded"] is False
    assert loads == []
    (sample / "notes" / "new.md").write_text("# New\n\nA note that must be embedded.\n")
    assert kb.json("sync")["model_loaded"] is True and loads


def test_add_of_a_missing_path_exits_1_with_one_line(kb, tmp_path, sample):
    result = kb("add", str(sample), str(tmp_path / "nope"), ok=False)
    assert result.exit_code == 1
    assert result.stderr == f"Error: {tmp_path / 'nope'}: no such file or directory\n"
    assert result.stdout == ""
    assert kb("stats", ok=False).exit_code == 1  # nothing was created


def test_summary_line_names_the_first_failure_and_unsupported_file(kb, tmp_path, environment):
    root = tmp_path / "mixed"
    root.mkdir()
    (root / "one.md").write_text("# One\n\nA single short note.\n")
    (root / "blob.txt").write_bytes(bytes(range(256)) * 4)
    (root / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    line = kb("add", str(root), "--format", "human").stdout.strip()
    assert line == (
        "Added 1 document (1 chunk). 1 failed (first: mixed/blob.txt: binary file (not text))."
        " 0 skipped (already indexed). 1 file of unsupported types ignored (first:"
        " mixed/photo.png)."
    )
    data = json.loads(kb("add", str(root)).stdout)
    assert data["unsupported_files"] == [str(root / "photo.png")]


@pytest.mark.model
def test_noop_add_with_the_real_model_does_not_load_it(kb, sample, monkeypatch):
    kb("add", str(sample))
    import kb_search.models.embedders as model

    def refuse(*args, **kwargs):
        raise AssertionError("the model was loaded for a no-op run")

    monkeypatch.setattr(model, "load_embedder", refuse)
    assert kb.json("add", str(sample))["model_loaded"] is False
    assert kb.json("sync")["model_loaded"] is False
