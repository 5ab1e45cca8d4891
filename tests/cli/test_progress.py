"""Progress that tells the truth: counts, the file in hand, chunks/s, and an ETA from the text
left (PDF pages count as pages of text, not as one file); Ctrl-C says where it stopped."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kb_search.cli.progress import clock, fraction, status_text
from kb_search.config import load_config
from kb_search.knowledge_base import KnowledgeBase
from kb_search.progress import (
    EMBED_WINDOW,
    EXPECTED_WORTH_S,
    PDF_PAGE_PARSE,
    PDF_PAGE_WORK,
    PRIOR_CHUNK_BYTES,
    PRIOR_OCR_PAGE_S,
    PRIOR_PAGE_CHUNKS,
    PRIOR_PARSE_WORTH_S,
    PRIOR_TEXT_WORTH_BYTES,
    Tally,
)
from kb_testing import HashEmbedder, document_count

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample"


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_eta_comes_from_work_not_from_files():
    ticks = FakeClock()
    tally = Tally(clock=ticks)
    tally.start(10)
    ticks.now += 5  # checking files: no work yet, not counted in the rate
    tally.advance(8)  # eight unchanged files, skipped at once
    tally.add_work(1000)
    assert tally.eta() is None  # nothing measured yet
    ticks.now += 10
    tally.advance(1, work=100, chunks=20)
    assert tally.eta() == pytest.approx(90)  # 900 bytes left at 10 bytes/s
    assert tally.chunk_rate() == pytest.approx(2.0)
    tally.current("big.pdf")
    assert status_text(tally) == "10% · 9/10 files · 2.0 chunks/s · ETA 1:30 · big.pdf"


def test_eta_from_steps_when_there_is_no_work():
    ticks = FakeClock()
    tally = Tally(clock=ticks)
    tally.start(400, "chunks")
    ticks.now += 30
    tally.advance(100, chunks=100)
    assert tally.eta() == pytest.approx(90)
    assert status_text(tally) == "25% · 100/400 chunks · ETA 1:30"
    assert clock(3725) == "1:02:05" and clock(None) == "?"


class Recorder(Tally):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def current(self, name: str) -> None:
        super().current(name)
        if name:
            self.names.append(name)


def test_add_reports_files_work_chunks_and_current_file(tmp_path):
    from pdf_samples import body, lines_of, words, write_pdf

    notes = tmp_path / "notes"
    shutil.copytree(SAMPLE, notes)
    pages = [body(lines_of(words(120, f"page{i}"))) for i in range(6)]
    write_pdf(notes / "paper.pdf", pages)
    config = load_config(env={"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"})
    recorder = Recorder()
    with KnowledgeBase(config, embedder=HashEmbedder(), cwd=tmp_path) as kb:
        summary = kb.add([notes], progress=recorder)
    assert recorder.total == 10 and recorder.done == 10 and recorder.unit == "files"
    text_bytes = sum(
        p.stat().st_size for p in notes.rglob("*") if p.is_file() and p.suffix != ".pdf"
    )
    assert recorder.work_total == text_bytes + 6 * PDF_PAGE_WORK
    assert recorder.work_done == recorder.work_total
    assert recorder.chunks == summary.chunks > 0
    assert "paper.pdf" in recorder.names and "git-admin.md" in recorder.names
    # two phases: every chunk written first (keyword-searchable), then embedded
    assert recorder.pages_total == 6
    assert recorder.awaiting == recorder.embed_total == recorder.embed_done == summary.chunks
    assert summary.embedded == summary.chunks and "embedding" in recorder.names
    assert recorder.keyword_seconds is not None and summary.keyword_seconds <= summary.seconds


@pytest.mark.slow
def test_ctrl_c_during_add_stops_cleanly_and_the_rerun_resumes(tmp_path, model_cache):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(150):
        paras = "\n\n".join(f"## Part {j}\n\n" + f"Note {i} part {j}. " * 40 for j in range(4))
        (corpus / f"note{i:03d}.md").write_text(f"# Note {i}\n\n{paras}\n")
    data = tmp_path / "data"
    env = dict(os.environ, KB_DATA_DIR=str(data), KB_MODEL_CACHE=str(model_cache))
    command = [sys.executable, "-m", "kb_search", "add", str(corpus), "--workers", "2"]
    process = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        # as at a terminal: Ctrl-C interrupts (a runner started in the background may have
        # handed down SIGINT ignored, and Python then never raises KeyboardInterrupt)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if document_count(data / "kb.db") >= 5:
            os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C does: the whole group
            break
        time.sleep(0.05)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    last = err.strip().splitlines()[-1]
    read = re.fullmatch(
        r"Interrupted: (\d+) of 150 files read, 0 of (\d+) chunks embedded; rerun to resume\.",
        last,
    )
    assert read, last
    summary = json.loads(out)  # what was done before the stop (stdout is not a terminal: JSON)
    assert summary["interrupted"] and summary["added"] <= int(read.group(1))
    assert summary["chunks"] == int(read.group(2))
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert document_count(data / "kb.db") == 150


def test_reindex_and_export_report_progress(tmp_path):
    notes = tmp_path / "notes"
    shutil.copytree(SAMPLE, notes)
    config = load_config(env={"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"})
    with KnowledgeBase(config, embedder=HashEmbedder(), cwd=tmp_path) as kb:
        kb.add([notes])
        embedding = Tally()
        summary = kb.reindex(full=True, progress=embedding)
        assert (embedding.unit, embedding.total) == ("chunks", summary.total_chunks)
        assert embedding.done == embedding.chunks == summary.embedded
        copying = Tally()
        kb.export(tmp_path / "copy.db", progress=copying)
        assert copying.unit == "MB" and copying.total >= 1


def test_files_count_as_they_are_read_and_a_prior_gives_a_first_estimate():
    from kb_search.cli.progress import ProgressView, expectations

    ticks = FakeClock()
    tally = Tally(clock=ticks, prior_rate=1000.0)
    tally.start(400)
    assert tally.eta() is None  # nothing to do is known yet
    tally.add_work(1_200_000)
    assert tally.eta() == pytest.approx(1200)  # before any measurement: the prior
    tally.read(52)
    assert status_text(tally).startswith("0% · 0/400 files · 52 read")
    said = expectations(tally)
    assert "400 files to read, about 1.2 MB of text: roughly 20:00" in said[0]
    assert "Ctrl-C is safe" in said[0] and "int8" in said[1]  # long: how to go faster
    ticks.now += 10
    tally.advance(1, work=100_000)
    # measured now: 1.1 MB at 10 KB/s, the prior (1 KB/s) worth a second of it
    rate = (100_000 + 1000 * PRIOR_PARSE_WORTH_S) / (10 + PRIOR_PARSE_WORTH_S)
    assert tally.eta() == pytest.approx(1_100_000 / rate)
    int8 = ProgressView("x", model="all-MiniLM-L6-v2@int8")
    assert int8.prior_embed_rate > ProgressView("x").prior_embed_rate
    short = Tally(clock=ticks, prior_rate=1e6)
    short.start(2)
    short.add_work(1000)
    assert expectations(short) == []  # a short job is not announced


def test_eta_adds_the_embedding_phase_estimated_from_chunks_per_byte_then_measured():
    """The keyword phase's time from its work (PDF pages cost more), plus the chunks it will
    leave to embed at the chunks per byte and per page seen so far, at the embedding rate
    (prior, then measured by batches embedded alongside, then by the embedding phase); the
    line shows both phases."""
    ticks = FakeClock()
    tally = Tally(clock=ticks, prior_rate=1000.0, prior_embed_rate=10.0)
    tally.start(4)
    tally.await_embedding(0)
    tally.add_work(60_000 + 2 * PDF_PAGE_WORK, pages=2)
    assert tally.keyword_eta() == pytest.approx((60_000 + 2 * PDF_PAGE_PARSE) / 1000)
    assert tally.eta() == pytest.approx(
        tally.keyword_eta() + (60_000 / PRIOR_CHUNK_BYTES + 2 * PRIOR_PAGE_CHUNKS) / 10
    )
    ticks.now += 10
    tally.await_embedding(50)  # 50 chunks in the first 11 KB written
    tally.advance(1, work=11_000, chunks=50)
    rate = (11_000 + 1000 * PRIOR_PARSE_WORTH_S) / (10 + PRIOR_PARSE_WORTH_S)  # prior: 1 s
    assert tally.keyword_eta() == pytest.approx((49_000 + 2 * PDF_PAGE_PARSE) / rate)
    prior_chunks = PRIOR_TEXT_WORTH_BYTES / PRIOR_CHUNK_BYTES  # the prior, worth 64 KB
    per_byte = (50 + prior_chunks) / (11_000 + PRIOR_TEXT_WORTH_BYTES)
    expected = 50 + 49_000 * per_byte + 2 * PRIOR_PAGE_CHUNKS
    assert tally.chunks_to_embed() == pytest.approx(expected)
    assert "keyword 1/4 files, searchable in" in status_text(tally)
    assert f"embedding 0/~{round(expected)} chunks" in status_text(tally)
    tally.embed_sample(20, 1.0)  # 20 chunks/s beside the parser: 40/s alone, not the prior
    assert tally.chunks_to_embed() == pytest.approx(expected - 20)
    assert tally.embed_rate() == pytest.approx(20 * tally.sample_slowdown)
    assert f"embedding 20/~{round(expected)} chunks" in status_text(tally)
    tally.advance(3, work=49_000 + 2 * PDF_PAGE_WORK, chunks=250, pages=2)
    tally.await_embedding(250)
    ticks.now += 50
    tally.embedding(280)
    assert tally.phase == "embedding" and tally.keyword_seconds == pytest.approx(60)
    assert tally.eta() == pytest.approx(7)  # 280 at the 40/s measured alongside
    ticks.now += 25.6
    tally.embedded(EMBED_WINDOW)  # a window of 256 chunks in 25.6 s
    # measured: 10 chunks/s, with the 40/s expected as EXPECTED_WORTH_S seconds of it
    rate = (256 + 40 * EXPECTED_WORTH_S) / (25.6 + EXPECTED_WORTH_S)
    assert tally.eta() == pytest.approx(24 / rate)
    line = f"keyword done · embedding 276/300 chunks · 10.0 chunks/s · ETA 0:{round(24 / rate):02d}"
    assert line in status_text(tally)
    assert tally.position() == "4/4 files, 276/300 chunks embedded"  # what Ctrl-C says


def test_ingest_reports_files_read_before_they_are_stored(tmp_path):
    recorder = Tally()
    config = load_config(env={"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"})
    with KnowledgeBase(config, embedder=HashEmbedder(), cwd=tmp_path) as kb:
        kb.add([SAMPLE], progress=recorder)
        assert recorder.files_read == recorder.total == recorder.done > 0
        kb.add([SAMPLE], progress=(again := Tally()))  # unchanged files are read at once
        assert again.files_read == again.total == again.done > 0


def test_the_ocr_phase_between_keyword_and_embedding():
    """Scanned pages queued in the keyword phase count in the ETA (at the prior until the OCR
    phase measures its own speed) and the line shows the OCR phase between the two others."""
    ticks = FakeClock()
    tally = Tally(clock=ticks, prior_rate=1000.0, prior_embed_rate=10.0)
    tally.start(2)
    tally.add_work(20_000)
    tally.await_embedding(0)
    ticks.now += 10
    tally.advance(1, work=10_000, chunks=20)
    tally.await_embedding(20)
    tally.await_ocr(3)  # a PDF's three scanned pages wait
    assert tally.ocr_eta() == pytest.approx(3 * PRIOR_OCR_PAGE_S)
    assert tally.eta() == pytest.approx(10 + 3 * PRIOR_OCR_PAGE_S + 40 / 10)
    assert "keyword 1/2 files" in status_text(tally) and "3 pages to OCR next" in status_text(tally)
    tally.advance(1, work=10_000, chunks=20)
    tally.await_embedding(20)
    ticks.now += 10
    tally.ocr(3)
    assert tally.phase == "ocr" and tally.keyword_seconds == pytest.approx(20)
    assert tally.keyword_eta() == 0
    ticks.now += 4
    tally.ocr_read(1)
    tally.await_embedding(5)
    assert tally.ocr_eta() == pytest.approx(8)  # 2 pages left at the 4 s measured
    assert "keyword done · OCR 1/3 pages · embedding 0/~45 chunks" in status_text(tally)
    tally.ocr_read(2)
    tally.embedding(45)
    assert tally.phase == "embedding" and tally.ocr_eta() == 0
    assert tally.keyword_seconds == pytest.approx(20)  # the keyword phase, not the OCR phase


def test_without_a_model_the_bar_waits_for_the_ocr_phase():
    """No embedding model: every file's text is written, then 10 scanned pages are read at 4 s
    each. One page in, the bar is at the share of the time spent (old: 100%, the keyword
    work done, from the end of the keyword phase on)."""
    ticks = FakeClock()
    tally = Tally(clock=ticks, prior_rate=1000.0)
    tally.start(2)
    tally.add_work(20_000)
    ticks.now += 20
    tally.advance(2, work=20_000, chunks=40)
    tally.await_ocr(10)
    assert not tally.embeds and fraction(tally) == pytest.approx(20 / (20 + 10 * PRIOR_OCR_PAGE_S))
    tally.ocr(10)
    ticks.now += 4
    tally.ocr_read(1)
    assert fraction(tally) == pytest.approx(24 / (24 + 9 * 4))
    assert "OCR 1/10 pages" in status_text(tally) and "ETA 0:36" in status_text(tally)


def test_the_eta_stays_on_an_80_column_line():
    """Old code: on an 80-column terminal 47 characters are left after the label and the bar,
    and the line "1% · keyword 61/70 files, searchable in 0:03 · embedding 0/~993 chunks · ..."
    lost its ETA to the ellipsis (seen on a real `kb add` in a pty)."""
    from kb_search.cli.progress import status_text as line_of

    ticks = FakeClock()
    tally = Tally(clock=ticks, prior_rate=300_000.0, prior_embed_rate=9.0)
    tally.start(70)
    tally.await_embedding(0)
    tally.add_work(2_000_000)
    ticks.now += 3
    tally.current("pluggy-1.5.0/src/pluggy/_manager.py")
    tally.read(62)
    tally.await_embedding(600)
    tally.advance(61, work=1_500_000, chunks=600)
    full = line_of(tally)
    assert "ETA" in full and len(full) > 47
    fitted = line_of(tally, 47)
    assert "ETA " in fitted[:47], fitted
    assert "_manager.py" not in fitted  # the file in hand goes first
    assert fitted.startswith(full.split(" · ")[0])  # the percentage still opens it
    assert line_of(tally, 500) == full
