"""One wording for one outcome, whichever command met it: `kb add` of the folder again, `kb
sync`, and a `kb watch` batch of the changed paths say the same words for each thing that can
happen to a file (issue 32: messages that match what happened).

Old code: `kb watch` said "1 dropped (no text now)" where `kb sync` said "1 document removed
from the index: ...", "1 left the index (ignored)" for "1 document left the index, their files
left out now: 1 ignored", and nothing at all for an empty, generated, unsupported or
failed-before file; `kb sync` said nothing of a new file of no type kb reads."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kb_search.config import load_config
from kb_search.ingest.watch import WatchBatch
from kb_search.knowledge_base import KnowledgeBase
from kb_testing import HashEmbedder

ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8


def base(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "keep.md").write_text("# Keep\n\nHerons fish in the shallows.\n")
    (root / "old.md").write_text("# Old\n\nPlovers run on the sand.\n")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4 not really a pdf")
    return root


def new_file(root: Path) -> list[Path]:
    (root / "new.md").write_text("# New\n\nOtters slide into the river.\n")
    return [root / "new.md"]


def empty_file(root: Path) -> list[Path]:
    (root / "blank.md").write_text("")
    return [root / "blank.md"]


def failing_file(root: Path) -> list[Path]:
    (root / "bad.pdf").write_bytes(b"%PDF-1.7 truncated")
    return [root / "bad.pdf"]


def generated_file(root: Path) -> list[Path]:
    (root / "app.min.js").write_text("var a=1;" * 2000 + "\n")
    return [root / "app.min.js"]


def binary_file(root: Path) -> list[Path]:
    (root / "tool").write_bytes(ELF)
    return [root / "tool"]


def emptied(root: Path) -> list[Path]:
    (root / "old.md").write_text("")
    return [root / "old.md"]


def ignored_now(root: Path) -> list[Path]:
    (root / ".kbignore").write_text("old.md\n")
    return [root]  # a changed .kbignore stands for its folder in a watch batch


def unchanged_failure(root: Path) -> list[Path]:
    return [root / "broken.pdf"]  # failed on the first run, not changed since


# (outcome, what makes it, the words every command says)
OUTCOMES = [
    ("new file", new_file, []),  # counted: "Added 1 document" / "1 added"
    ("empty", empty_file, ["1 empty file skipped (nothing to index)"]),
    ("failed", failing_file, ["1 failed (first: "]),
    (
        "generated",
        generated_file,
        ["1 generated file left out: 1 minified (--include-generated indexes them)"],
    ),
    ("unsupported", binary_file, ["1 file of unsupported types ignored (first: "]),
    (
        "emptied",
        emptied,
        [
            "1 document removed from the index: the file is empty now, or unreadable or"
            " unparseable (its old text is no longer searchable)",
            "1 empty file skipped (nothing to index)",
        ],
    ),
    (
        "ignored now",
        ignored_now,
        ["1 document left the index, their files left out now: 1 ignored"],
    ),
    (
        "failed before",
        unchanged_failure,
        ["1 file that failed before and did not change skipped ("],
    ),
]


def open_kb(data: Path, cwd: Path) -> KnowledgeBase:
    config = load_config(env={"KB_DATA_DIR": str(data), "KB_WORKERS": "0"})
    return KnowledgeBase(config, embedder=HashEmbedder(), cwd=cwd)


def said_by_each_command(tmp_path: Path, change) -> dict[str, str]:
    """The line each command says after `change` to a folder indexed before: `kb add` of the
    folder again, `kb sync`, and `kb watch`'s batch of the changed paths."""
    lines = {}
    for command in ("add", "sync", "watch"):
        folder = base(tmp_path / command / "notes")
        with open_kb(tmp_path / command / "data", tmp_path) as kb:
            kb.add([folder])
            changed = change(folder)
            if command == "add":
                lines[command] = kb.add([folder]).line()
            elif command == "sync":
                lines[command] = kb.sync().line()
            else:
                summary = kb.sync(changed, embed=False)
                lines[command] = WatchBatch(summary, len(changed), [str(p) for p in changed]).line()
    return lines


@pytest.mark.parametrize("outcome, change, words", OUTCOMES, ids=[o[0] for o in OUTCOMES])
def test_each_outcome_reads_the_same_in_add_sync_and_watch(tmp_path, outcome, change, words):
    lines = said_by_each_command(tmp_path, change)
    for command, line in lines.items():
        for said in words:
            assert said in line, (command, line)
    if outcome == "new file":
        assert "Added 1 document" in lines["add"]
        assert "1 added" in lines["sync"] and "1 added" in lines["watch"]


@pytest.mark.parametrize(
    "make, in_folder, named",
    [
        (new_file, 0, 0),
        (empty_file, 1, 1),
        (failing_file, 1, 1),
        (generated_file, 1, 0),  # a generated file named on its own is indexed
        (binary_file, 1, 1),
    ],
    ids=["new file", "empty", "failed", "generated", "unsupported"],
)
def test_an_add_that_adds_nothing_it_was_asked_to_exits_non_zero(
    kb, tmp_path, make, in_folder, named
):
    folder = tmp_path / "only"
    folder.mkdir()
    (path,) = make(folder)
    for target, exit_code in ((folder, in_folder), (path, named)):
        result = kb("add", str(target), ok=False)
        assert result.exit_code == exit_code, (target, result.stdout, result.stderr)
        if exit_code:
            assert result.stderr.strip().splitlines()[-1].startswith("Error: nothing added: ")
        shutil.rmtree(tmp_path / "data dir")  # each run on a fresh index
