"""Ctrl-C in `kb add` / `kb sync`: what was done before the stop is reported as a run's summary
(added, failed, left out; JSON with `interrupted`), then one line of what is left, exit 130 and
no traceback. On the old code the run printed only "Interrupted after N/M files; ..." and no
summary: the files that failed or were left out before the stop were never named."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kb_search.ingest import pipeline

LINE = re.compile(
    r"Interrupted: (\d+) of (\d+) files read, (\d+) of (\d+) chunks embedded; rerun to resume\."
)


def folder(root: Path, notes: int) -> Path:
    root.mkdir()
    for i in range(notes):
        (root / f"note{i:02d}.md").write_text(f"# Note {i}\n\nNote {i} says token{i}.\n")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4 not really a pdf")
    (root / "bundle.min.js").write_text("var a=1;" * 400)
    return root


@pytest.fixture
def stop_at_write(monkeypatch: pytest.MonkeyPatch):
    """Ctrl-C as the `n`-th parsed document is about to be written."""

    def arm(n: int) -> None:
        real = pipeline._write_one
        calls = []

        def write_one(*args, **kwargs):
            calls.append(1)
            if len(calls) == n:
                raise KeyboardInterrupt
            return real(*args, **kwargs)

        monkeypatch.setattr(pipeline, "_write_one", write_one)

    return arm


def test_ctrl_c_in_kb_add_reports_what_was_done_and_what_is_left(kb, tmp_path, stop_at_write):
    notes = folder(tmp_path / "notes", 20)
    stop_at_write(8)
    result = kb("add", str(notes), "--format", "json", ok=False)
    assert result.exit_code == 130 and "Traceback" not in result.stderr
    done = json.loads(result.stdout)
    assert done["interrupted"] and done["added"] == 7
    assert done["left_out"] == {"minified": 1}
    last = result.stderr.splitlines()[-1]
    read, total, embedded, chunks = map(int, LINE.fullmatch(last).groups())
    assert total == 21 and read == 7 + len(done["failed"]) and embedded == 0
    assert chunks == done["chunks"] == kb.json("stats")["chunks"]

    human = tmp_path / "again"
    stop_at_write(3)
    result = kb("add", str(folder(human, 6)), "--format", "human", ok=False)
    assert result.exit_code == 130 and "Traceback" not in result.stderr
    assert result.stdout.startswith("Added 2 documents")
    assert "1 generated file left out: 1 minified" in result.stdout
    assert LINE.fullmatch(result.stderr.splitlines()[-1])

    rerun = kb.json("add", str(notes))
    assert rerun["added"] + rerun["skipped"] == 20 and "interrupted" not in rerun


def test_ctrl_c_in_kb_sync_reports_what_was_done(kb, tmp_path, stop_at_write):
    notes = folder(tmp_path / "notes", 2)
    kb("add", str(notes), ok=False)  # broken.pdf fails: exit 0, two notes added
    for i in range(2, 12):
        (notes / f"note{i:02d}.md").write_text(f"# Note {i}\n\nNote {i} says token{i}.\n")
    stop_at_write(5)
    result = kb("sync", "--format", "json", ok=False)
    assert result.exit_code == 130 and "Traceback" not in result.stderr
    done = json.loads(result.stdout)
    assert done["interrupted"] and done["added"] == 4 and done["unchanged"] == 2
    read, total, _, _ = map(int, LINE.fullmatch(result.stderr.splitlines()[-1]).groups())
    assert done["known_failures"] == 1  # broken.pdf, read before the notes: not again
    assert (read, total) == (5, 11)
