"""The walker: default ignores, nested .kbignore files (gitignore semantics), stats."""

from __future__ import annotations

from pathlib import Path

from kb_search.ingest.walk import Found, IgnoreRules, walk, walk_tree


def touch(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")


def found(paths: list[Path], root: Path) -> set[str]:
    return {
        item.path.relative_to(root.resolve()).as_posix()
        for item in walk(paths)
        if isinstance(item, Found)
    }


def test_nested_kbignore_files_apply_below_their_directory(tmp_path):
    touch(tmp_path, "a.md", "a.log", "keep.log", "docs/b.md", "docs/b.log", "docs/private/c.md")
    touch(tmp_path, "docs/sub/d.md", "docs/sub/e.md", "other/private/f.md", "build/g.md")
    (tmp_path / ".kbignore").write_text("*.log\n!keep.log\n")
    (tmp_path / "docs" / ".kbignore").write_text("private/\n!b.log\n")
    (tmp_path / "docs" / "sub" / ".kbignore").write_text("/e.md\n")
    assert found([tmp_path], tmp_path) == {
        "a.md",
        "keep.log",
        "docs/b.md",
        "docs/b.log",  # the deeper file re-includes it
        "docs/sub/d.md",
        "other/private/f.md",  # docs/.kbignore does not reach outside docs/
    }


def test_ignore_rules_for_single_paths(tmp_path):
    touch(tmp_path, "node_modules/x/readme.md", "notes/a.md", "notes/drafts/b.md")
    (tmp_path / "notes" / ".kbignore").write_text("drafts/\n")
    rules = IgnoreRules(tmp_path)
    assert rules.ignored_path(tmp_path / "node_modules" / "x" / "readme.md")
    assert rules.ignored_path(tmp_path / "notes" / "drafts" / "b.md")
    assert not rules.ignored_path(tmp_path / "notes" / "a.md")
    assert rules.ignored_dir(tmp_path / "notes" / "drafts")


def test_walk_tree_reports_stat_and_starts_below_the_root(tmp_path):
    touch(tmp_path, "a/one.md", "a/two.md", "b/three.md")
    (tmp_path / ".kbignore").write_text("two.md\n")
    items = [i for i in walk_tree(tmp_path, tmp_path / "a") if isinstance(i, Found)]
    assert [i.path.name for i in items] == ["one.md"]
    assert items[0].root == tmp_path and items[0].size == 2 and items[0].mtime


def test_symlink_loops_end(tmp_path):
    touch(tmp_path, "d/a.md")
    (tmp_path / "d" / "loop").symlink_to(tmp_path / "d")
    assert found([tmp_path], tmp_path) == {"d/a.md"}
    items = list(walk_tree(tmp_path.resolve(), follow_symlinks=True))
    assert sum(isinstance(i, Found) for i in items) == 1


def make_repo(root: Path) -> None:
    (root / ".git" / "info").mkdir(parents=True)


def test_gitignore_counts_inside_a_git_repository(tmp_path):
    """Old code indexed what a repository's .gitignore excludes (site/, *.log)."""
    make_repo(tmp_path)
    touch(tmp_path, "docs/a.md", "site/index.md", "run.log", "docs/sub/b.md", "docs/sub/b.tmp")
    (tmp_path / ".gitignore").write_text("site/\n*.log\n")
    (tmp_path / "docs" / "sub" / ".gitignore").write_text("*.tmp\n")
    (tmp_path / ".git" / "info" / "exclude").write_text("docs/a.md\n")
    assert found([tmp_path], tmp_path) == {"docs/sub/b.md"}


def test_gitignore_outside_a_repository_is_only_a_file(tmp_path):
    touch(tmp_path, "site/index.md", "run.log")
    (tmp_path / ".gitignore").write_text("site/\n*.log\n")
    assert found([tmp_path], tmp_path) == {"site/index.md", "run.log"}


def test_kbignore_overrides_gitignore(tmp_path):
    make_repo(tmp_path)
    touch(tmp_path, "build-notes/keep.md", "build-notes/drop.md", "notes.md")
    (tmp_path / ".gitignore").write_text("build-notes/\n")
    (tmp_path / "build-notes" / ".gitignore").write_text("")
    # a .kbignore re-includes what git ignores, and excludes what git keeps
    (tmp_path / ".kbignore").write_text("!build-notes/\nbuild-notes/drop.md\nnotes.md\n")
    assert found([tmp_path], tmp_path) == {"build-notes/keep.md"}


def test_gitignore_files_above_an_added_folder_apply(tmp_path):
    make_repo(tmp_path)
    touch(tmp_path, "docs/guide.md", "docs/_build/html/guide.md", "docs/scratch.md")
    (tmp_path / ".gitignore").write_text("docs/_build/\n")
    (tmp_path / "docs" / ".gitignore").write_text("scratch.md\n")
    assert found([tmp_path / "docs"], tmp_path / "docs") == {"guide.md"}
    rules = IgnoreRules((tmp_path / "docs").resolve())
    assert rules.ignored_path((tmp_path / "docs" / "_build" / "html" / "guide.md").resolve())


def test_a_kbignore_above_an_added_folder_applies(tmp_path):
    # ~/.kbignore says `raw/`; adding ~/data alone must leave data/raw out as well
    touch(tmp_path, "data/sensors.json", "data/raw/dump.jsonl", "data/notes/raw/x.md")
    touch(tmp_path, "data/scratch.md", "data/keep/scratch.md")
    (tmp_path / ".kbignore").write_text("raw/\ndata/scratch.md\n")
    data = tmp_path / "data"
    assert found([data], data) == {"sensors.json", "keep/scratch.md"}
    rules = IgnoreRules(data.resolve())
    assert rules.ignored_path((data / "raw" / "dump.jsonl").resolve())
    # a deeper .kbignore still wins over the one above
    (data / ".kbignore").write_text("!raw/\n")
    assert "raw/dump.jsonl" in found([data], data)


def test_a_kbignore_above_does_not_leave_out_the_folder_the_user_added(tmp_path):
    # ~/notes/.kbignore says `work/` (and `*.log`); `kb add ~/notes/work` found nothing at all
    touch(tmp_path, "notes/work/plan.md", "notes/work/run.log", "notes/work/sub/a.md")
    (tmp_path / "notes" / ".kbignore").write_text("work/\n*.log\n")
    work = tmp_path / "notes" / "work"
    assert found([work], work) == {"plan.md", "sub/a.md"}  # its other rules still apply
    # a folder on the way counts too: ~/.kbignore says `notes/`
    (tmp_path / ".kbignore").write_text("notes/\n")
    assert found([work], work) == {"plan.md", "sub/a.md"}
    # a rule for every folder is no rule against this one: `*` then `!*.md` keeps the
    # Markdown files (of the added folder itself: `*` leaves out its subfolders)
    (tmp_path / ".kbignore").write_text("*\n!*.md\n")
    touch(tmp_path, "notes/work/todo.txt")
    assert found([work], work) == {"plan.md"}
