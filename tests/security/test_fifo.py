"""Issue 25, breaks 8 and 10: nothing waits forever on the file system. A FIFO swapped in for
a file in the middle of a batch, or put where the database belongs, costs one line, never a
hang. Real FIFOs (os.mkfifo); each call runs on a thread with a time limit, and the FIFO is
released afterwards so that a blocked reader (the old code) can end."""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kb_search.config import load_config
from kb_search.ingest.parse import parse_file
from kb_search.knowledge_base import KnowledgeBase
from kb_search.parsed import ChunkSettings, IngestError

LIMIT_S = 20


def finishes(call: Callable[[], Any], fifos: list[Path]) -> tuple[bool, Any]:
    """Run `call` on a thread; (False, None) when it is still running after LIMIT_S."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["value"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(LIMIT_S)
    done = not thread.is_alive()
    while thread.is_alive():  # the old code: let its blocked open/read see an end of file
        for fifo in fifos:
            _release(fifo)
        thread.join(0.2)
    return done, box.get("value")


def _release(fifo: Path) -> None:
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno not in (errno.ENXIO, errno.ENOENT):
            raise
        return
    os.close(fd)


@pytest.fixture
def environment(environment):
    environment.env["KB_WORKERS"] = "0"  # the in-process path (kb watch's light batches)
    return environment


@pytest.mark.parametrize("command", [["search", "anything"], ["stats"], ["doctor"], ["list"]])
def test_fifo_at_the_db_path_is_one_line_not_a_hang(kb, environment, command):
    data = Path(environment.env["KB_DATA_DIR"])
    data.mkdir(parents=True)
    fifo = data / "kb.db"
    os.mkfifo(fifo)
    done, result = finishes(lambda: kb(*command, ok=False), [fifo])
    assert done, f"kb {command[0]} waited on a FIFO at the database path"
    assert result.exit_code == 1
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1 and "FIFO" in message and "Traceback" not in message


@pytest.mark.parametrize("name", ["note.md", "paper.pdf", "book.epub", "mail.eml", "README"])
def test_parsing_a_fifo_fails_at_once(tmp_path, name):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    done, result = finishes(lambda: parse_file(fifo, ChunkSettings()), [fifo])
    assert done, f"parsing {name} waited on a FIFO"
    assert isinstance(result, IngestError) and "FIFO" in str(result)


def test_fifo_swapped_in_mid_batch_does_not_hang_sync(kb, environment, tmp_path, monkeypatch):
    """The tester's `kb watch` hang: the batch's rescan saw a regular file, then a FIFO took
    its place before it was read. The watch path's in-process sync (workers=0) must fail that
    one file, and its old text must go with it."""
    from kb_search.ingest import sync as sync_module

    notes = tmp_path / "notes"
    notes.mkdir()
    note = notes / "a.md"
    note.write_text("# A\n\nThe first version mentions pelicans.\n")
    (notes / "b.md").write_text("# B\n\nAnother note.\n")
    kb.json("add", str(notes))
    note.write_text("# A\n\nThe second, longer version mentions pelicans and herons.\n")

    real_scan = sync_module.scan

    def scan_then_swap(*args: Any, **kwargs: Any) -> Any:
        result = real_scan(*args, **kwargs)
        note.unlink()
        os.mkfifo(note)
        return result

    monkeypatch.setattr(sync_module, "scan", scan_then_swap)
    home = Path(environment.env["HOME"])
    config = load_config(env=environment.env, cwd=environment.cwd, home=home)

    def sync_once() -> Any:
        knowledge = KnowledgeBase(config)  # its connections belong to the thread that syncs
        try:
            return knowledge.sync([note], workers=0)
        finally:
            knowledge.close()

    done, summary = finishes(sync_once, [note])
    assert done, "sync waited on a FIFO swapped in for a file"
    assert not isinstance(summary, BaseException), summary
    assert [f.reason for f in summary.failed] == [
        "cannot read file: not a regular file (a FIFO) (its indexed text was removed)"
    ]
    assert summary.dropped == 1
    monkeypatch.undo()
    assert kb.json("search", "pelicans", "--mode", "lexical")["results"] == []


def test_fifo_named_kbignore_does_not_hang_the_walk(kb, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nA note about quokkas.\n")
    fifo = notes / "sub" / ".kbignore"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    (notes / "sub" / "b.md").write_text("# B\n\nA note about wombats.\n")
    done, result = finishes(lambda: kb("add", str(notes), "--format", "json", ok=False), [fifo])
    assert done, "the walk waited on a FIFO named .kbignore"
    assert result.exit_code == 0, result.output
    assert kb.json("search", "wombats", "--mode", "lexical")["results"]
