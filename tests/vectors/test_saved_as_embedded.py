"""A stop while embedding loses only what was embedded since the last save: the writer saves
the vectors a model hands over batch by batch (`passage_batches`) every `SAVE_CHUNKS` chunks
(at most every `SAVE_GAP_S`) or `SAVE_S` seconds, not once per window of `FILL_BATCH` chunks
the model sorts together.

On the old code a window's vectors were saved only when the whole window was embedded, so a
stop at 160 chunks into the first window of 256 kept none of them."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kb_search.config import load_config
from kb_search.knowledge_base import KnowledgeBase
from kb_search.progress import Tally
from kb_search.vectors import writer
from kb_testing import HashEmbedder

BATCH = 16


class StoppedAfter(HashEmbedder):
    """Embeds as the real model does, a batch of 16 at a time, and is stopped (Ctrl-C) as it
    begins batch `stop + 1`, `stop * 16` chunks into its work: through `passage_batches`, or
    through `embed_passages` for a caller that asks for the whole window at once."""

    def __init__(self, stop: int, batch_s: float = 0.0) -> None:
        self.stop = stop
        self.batch_s = batch_s  # how long a batch takes
        self.batches = 0

    def passage_batches(self, texts):
        for start in range(0, len(texts), BATCH):
            if self.batches == self.stop:
                raise KeyboardInterrupt
            self.batches += 1
            time.sleep(self.batch_s)
            idx = list(range(start, min(start + BATCH, len(texts))))
            yield idx, super().embed_passages([texts[i] for i in idx])

    def embed_passages(self, texts, progress=None):
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for idx, vectors in self.passage_batches(texts):
            out[idx] = vectors
            if progress is not None:
                progress(len(idx))
        return out


def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(30):  # 30 files of 12 sections: ~700 chunks, all different
        parts = "\n\n".join(
            f"## Part {j}\n\n" + " ".join(f"Note {i} part {j} line {k}." for k in range(40))
            for j in range(12)
        )
        (folder / f"note{i:02d}.md").write_text(f"# Note {i}\n\n{parts}\n")
    return folder


def stopped_run(tmp_path: Path, stop: int, batch_s: float = 0.0) -> tuple[int, int, Tally]:
    """`kb add` of the notes, stopped `stop` batches into the embedding, each batch taking
    `batch_s`: (vectors kept, chunks, the progress tally)."""
    config = load_config(env={"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"})
    tally = Tally()
    with KnowledgeBase(config, embedder=StoppedAfter(stop, batch_s), cwd=tmp_path) as kb:
        with pytest.raises(KeyboardInterrupt):
            kb.add([notes(tmp_path)], progress=tally)
        conn = kb.reader()
        table = conn.execute("SELECT table_name FROM vector_tables").fetchone()[0]
        kept = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        chunks = kb.reads.stats()["chunks"]
    return kept, chunks, tally


def test_a_stop_mid_window_keeps_what_was_embedded_but_the_last_part(tmp_path: Path):
    embedded = 10 * BATCH  # 160 chunks into the first window of 256
    kept, chunks, tally = stopped_run(tmp_path, stop=10, batch_s=0.15)  # 64 chunks: 0.6 s
    assert chunks > 256 and embedded < 256
    assert embedded - 64 < kept <= embedded  # at most the part since the last save is lost
    assert tally.embed_done == kept  # the progress counts what was saved, nothing more


def test_saved_every_64_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(writer, "SAVE_S", 1e9)  # the chunk count alone decides
    monkeypatch.setattr(writer, "SAVE_GAP_S", 0.0)  # as on a CPU: 64 chunks take seconds
    kept, _, _ = stopped_run(tmp_path, stop=10)
    assert kept == 128  # saved at 64 and 128; the 32 embedded since are lost


def test_saved_every_few_seconds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(writer, "SAVE_S", 0.0)  # a slow model: time decides, every batch
    kept, _, tally = stopped_run(tmp_path, stop=10)
    assert kept == 10 * BATCH and tally.embed_done == kept


def test_a_fast_model_saves_at_most_every_half_second(tmp_path: Path, monkeypatch):
    """64 chunks in milliseconds (a GPU): a commit every 64 would cost it a share of its time;
    it saves at the window's end, or once `SAVE_GAP_S` has passed."""
    monkeypatch.setattr(writer, "SAVE_S", 1e9)
    kept, _, _ = stopped_run(tmp_path, stop=10)
    assert kept == 0  # 160 chunks in well under half a second: not saved yet


def test_an_embedder_without_parts_saves_its_window_whole(tmp_path: Path):
    """A remote model's client hands over a window at once: saved at its end, as before."""
    config = load_config(env={"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"})
    with KnowledgeBase(config, embedder=HashEmbedder(), cwd=tmp_path) as kb:
        summary = kb.add([notes(tmp_path)])
        assert summary.embedded == summary.chunks == kb.reads.stats()["chunks"] > 256
