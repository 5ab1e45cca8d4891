"""Issue 33, break 8: `kb remove FOLDER` wins over an `add` of the same folder that is still
running. Two real `kb` processes: the add is mid-way (its first batch written, the rest being
embedded) when the remove forgets the folder; nothing the add writes afterwards lands, and
`kb sync`, `kb list` and `kb doctor` agree that the folder is gone. Adding it again brings it
back (the removal is lifted by the new add)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from kb_testing import document_count

TESTS = Path(__file__).resolve().parent.parent

# `kb` with the test embedder, slowed to ~10 ms a passage so that an add of 1,000 notes takes
# seconds after its first batch (256 chunks) is written: the window the remove lands in.
LAUNCH = """
import sys, time
sys.path.insert(0, {tests!r})
from kb_testing import HashEmbedder
from kb_search.models.embedders import register_embedder

class Slow(HashEmbedder):
    name = "kb-test/slow-hash-64"
    def embed_passages(self, texts):
        time.sleep(0.01 * len(texts))
        return super().embed_passages(texts)

register_embedder(Slow.name, Slow)
from kb_search.cli import main
sys.argv[0] = "kb"
main(sys.argv[1:])
"""


def _kb(data_dir: Path, home: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    env = dict(
        os.environ,
        HOME=str(home),
        KB_DATA_DIR=str(data_dir),
        KB_MODEL="kb-test/slow-hash-64",
        KB_WORKERS="0",
        KB_NO_WARM="1",
    )
    env.pop("KB_DEBUG", None)
    return [sys.executable, "-c", LAUNCH.format(tests=str(TESTS)), *args], env


def _run(data_dir: Path, home: Path, *args: str) -> dict:
    cmd, env = _kb(data_dir, home, *args, "--format", "json")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_remove_during_a_running_add_of_the_folder_sticks(tmp_path):
    folder = tmp_path / "cc" / "A"
    folder.mkdir(parents=True)
    for i in range(1000):
        (folder / f"note{i:04d}.md").write_text(f"# Note {i}\n\nzebracrossing number {i}.\n")
    data_dir, home = tmp_path / "data", tmp_path / "home"
    home.mkdir()
    db_file = data_dir / "kb.db"

    cmd, env = _kb(data_dir, home, "add", str(folder), "--format", "json")
    add = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while document_count(db_file) == 0:
            assert add.poll() is None, add.stderr.read().decode()
            assert time.monotonic() < deadline, "the add wrote nothing in 120 s"
            time.sleep(0.05)
        removal = _run(data_dir, home, "remove", str(folder))
        # The race is real only if the add was still writing when the removal committed.
        assert add.poll() is None, "the add finished before the remove: the test proves nothing"
        out, err = add.communicate(timeout=120)
    finally:
        if add.poll() is None:
            add.kill()
            add.wait()
    assert add.returncode == 0, err.decode()
    assert removal["forgotten_roots"] == [str(folder)]

    assert document_count(db_file) == 0  # nothing the add wrote after the remove stayed
    found = _run(data_dir, home, "search", "zebracrossing", "--mode", "lexical")
    assert found["results"] == []
    assert _run(data_dir, home, "roots")["roots"] == []
    sync = _run(data_dir, home, "sync")
    assert sync["added"] == 0 and document_count(db_file) == 0
    _run(data_dir, home, "doctor")  # exit 0: no check fails

    # Added again by name, the folder is wanted again: the removal is lifted.
    _run(data_dir, home, "add", str(folder))
    assert document_count(db_file) == 1000


def _note(path: str):
    from kb_search.parsed import ParsedChunk, ParsedDocument
    from kb_search.store.documents import DocumentRecord

    chunk = ParsedChunk(text="a note", line_start=1, line_end=1, token_count=2)
    parsed = ParsedDocument(title="Note", doc_type="markdown", chunks=[chunk])
    return DocumentRecord(path=path, rel_path=path.lstrip("/"), content_hash=path), parsed


def test_the_rule_every_writer_keeps(conn):
    """In the writer's transaction: nothing under a forgotten folder, a sibling with a common
    prefix unaffected, and a path added again (at, above or below) lifts the removal."""
    from kb_search.store.documents import write_document
    from kb_search.store.roots import lift_removed_roots, remember_removed_roots

    remember_removed_roots(conn, ["/cc/A"])
    assert write_document(conn, *_note("/cc/A/x.md")) is None
    assert write_document(conn, *_note("/cc/A/deep/y.md")) is None
    assert write_document(conn, *_note("/cc/AB/z.md")) is not None  # not inside /cc/A
    lift_removed_roots(conn, ["/cc/A/deep/y.md"])  # a file below it named again
    assert write_document(conn, *_note("/cc/A/x.md")) is not None

    remember_removed_roots(conn, ["/"])
    assert write_document(conn, *_note("/elsewhere/w.md")) is None
    lift_removed_roots(conn, ["/elsewhere"])  # a folder below it added again
    assert write_document(conn, *_note("/elsewhere/w.md")) is not None
