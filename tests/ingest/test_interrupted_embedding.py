"""Ctrl-C in the embedding phase: the count the interruption reports is what the index keeps.

An embedder that hands over a window (`vectors.writer.FILL_BATCH` chunks) at once, as a remote
model's client does, has its vectors saved at the window's end; it reports its progress within
the window, so a window stopped half way had been counted as embedded although none of its
vectors was saved. (The local model hands over each batch:
tests/vectors/test_saved_as_embedded.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kb_search.config import load_config
from kb_search.knowledge_base import KnowledgeBase
from kb_search.progress import Tally
from kb_search.vectors.writer import FILL_BATCH
from kb_testing import HashEmbedder


class StoppedEmbedder(HashEmbedder):
    """Reports its progress as the real embedder does (a part of the texts at a time); its
    `stop_at`-th call reports half of its texts and is then stopped, as by Ctrl-C."""

    def __init__(self, stop_at: int) -> None:
        self.stop_at = stop_at
        self.calls = 0

    def embed_passages(self, texts, progress=None):
        self.calls += 1
        half = len(texts) // 2
        if self.calls == self.stop_at:
            if progress is not None:
                progress(half)
            raise KeyboardInterrupt
        vectors = super().embed_passages(texts)
        if progress is not None:
            progress(half)
            progress(len(texts) - half)
        return vectors


def stored_vectors(kb: KnowledgeBase) -> int:
    conn = kb.reader()
    table = conn.execute("SELECT table_name FROM vector_tables").fetchone()[0]
    return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def notes_folder(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(30):  # 30 files of 12 sections: more than one window of chunks
        parts = "\n\n".join(
            f"## Part {j}\n\n" + f"Note {i} part {j} says {i * j}. " * 40 for j in range(12)
        )
        (notes / f"note{i:02d}.md").write_text(f"# Note {i}\n\n{parts}\n")
    return notes


def test_ctrl_c_in_the_embedding_phase_reports_only_the_vectors_kept(tmp_path: Path):
    notes = notes_folder(tmp_path)
    config = load_config(env={"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"})
    embedder = StoppedEmbedder(stop_at=2)
    tally = Tally()
    with KnowledgeBase(config, embedder=embedder, cwd=tmp_path) as kb:
        with pytest.raises(KeyboardInterrupt):
            kb.add([notes], progress=tally)
        kept = stored_vectors(kb)
        chunks = kb.reads.stats()["chunks"]
    assert chunks > FILL_BATCH and kept == FILL_BATCH  # the first window saved, the second not
    assert tally.embed_done == kept
    assert tally.position().endswith(f", {kept}/{chunks} chunks embedded")


class StoppedInTheSecondWindow(StoppedEmbedder):
    name = "kb-test/stopped-64"

    def __init__(self) -> None:
        super().__init__(stop_at=2)


def test_the_interrupted_line_says_how_many_chunks_kept_their_vectors(kb, environment, tmp_path):
    from kb_search.models.embedders import register_embedder

    register_embedder(StoppedInTheSecondWindow.name, StoppedInTheSecondWindow)
    environment.env["KB_MODEL"] = StoppedInTheSecondWindow.name
    result = kb("add", str(notes_folder(tmp_path)), ok=False)
    assert result.exit_code == 130 and "Traceback" not in result.stderr
    stats = kb.json("stats")
    kept = next(iter(stats["vectors"].values()))["vectors"]
    assert kept == FILL_BATCH < stats["chunks"]
    assert result.stderr.strip().splitlines()[-1] == (
        f"Interrupted: 30 of 30 files read, {kept} of {stats['chunks']} chunks embedded;"
        " rerun to resume."
    )
    done = json.loads(result.stdout)  # what was done before the stop, as a run's summary
    assert done["interrupted"] and done["added"] == 30 and done["embedded"] == kept
