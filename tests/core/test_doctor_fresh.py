"""`kb doctor` on a fresh index: what the current chunker could not avoid is a warning with
advice (exit 0), and every `[ok]` line says something true."""

from __future__ import annotations

import re

LONG_CELL = " ".join(["setting"] * 70)
OPTIONS = (
    "# Options\n\nThe options below tune the sync of every application in the project.\n\n"
    f"| Name | Description |\n|---|---|\n| x | {LONG_CELL} |\n"
)


def test_doctor_warns_and_exits_0_on_pieces_of_a_fresh_index(kb, environment, tmp_path):
    environment.env["KB_CHUNK_MAX_TOKENS"] = "40"  # the row is cut into pieces, one of 4 words
    environment.env["KB_CHUNK_MIN_TOKENS"] = "10"
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "options.md").write_text(OPTIONS, encoding="utf-8")
    kb("add", str(folder))
    result = kb("doctor", "--format", "human", ok=False)
    assert result.exit_code == 0, result.output
    lines = {line.split("]")[1].split(":")[0].strip(): line for line in result.stdout.splitlines()}
    quality = lines["chunk_quality"]
    assert re.match(r"\[warn\] chunk_quality: \d+ chunks of almost no words", quality)
    assert "options.md#L" in quality and ".kbignore" in quality
    ann = lines["ann_index"]
    assert "missing" not in ann
    assert ann.startswith("[ok] ann_index: not used: exact vector search below 200,000 chunks")
    report = kb.json("doctor")
    assert report["ok"] is True
    quality = next(c for c in report["checks"] if c["name"] == "chunk_quality")
    assert quality["warning"] is True
