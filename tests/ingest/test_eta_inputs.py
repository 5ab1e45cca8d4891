"""What an ingest tells its ETA (`progress.Tally`): a PDF that does not open is one page of
work, not its size in bytes; a file that fails or holds no text takes its work out of the
total instead of into the measured speed; the next run on the same index starts from the
speeds this one measured (`ingest/speeds.py`)."""

from __future__ import annotations

import shutil
from pathlib import Path

from pypdf import PdfWriter

from kb_search.config import load_config
from kb_search.ingest import speeds
from kb_search.ingest.changes import expected_work
from kb_search.knowledge_base import KnowledgeBase
from kb_search.progress import PDF_PAGE_WORK, Tally
from kb_testing import HashEmbedder

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample"


def make_kb(tmp_path: Path) -> KnowledgeBase:
    config = load_config(env={"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"})
    return KnowledgeBase(config, embedder=HashEmbedder(), cwd=tmp_path)


def encrypted_pdf(path: Path) -> Path:
    """A 300 KB PDF that opens only with its password (the old estimate: 100 pages)."""
    writer = PdfWriter()
    writer.add_blank_page(612, 792)
    writer.add_metadata({"/Subject": "padding " * 40_000})
    writer.encrypt("secret", algorithm="AES-256")
    with path.open("wb") as out:
        writer.write(out)
    return path


def test_a_pdf_that_does_not_open_is_one_page_and_leaves_the_work_when_it_fails(tmp_path):
    notes = tmp_path / "notes"
    shutil.copytree(SAMPLE, notes)
    locked = encrypted_pdf(notes / "locked.pdf")
    size = locked.stat().st_size
    assert size > 100 * PDF_PAGE_WORK
    assert expected_work(locked, size) == PDF_PAGE_WORK
    text = sum(p.stat().st_size for p in notes.rglob("*") if p.is_file() and p != locked)
    tally = Tally()
    with make_kb(tmp_path) as kb:
        summary = kb.add([notes], progress=tally)
    assert [Path(f.path).name for f in summary.failed] == ["locked.pdf"]
    # its work is neither done (the keyword speed) nor left (the ETA): it left the total
    assert tally.pages_done == tally.pages_total == 0
    assert tally.work_done == tally.work_total == text


def test_a_second_add_starts_from_the_speeds_this_index_measured(tmp_path, monkeypatch):
    monkeypatch.setattr(speeds, "MIN_SECONDS", 0.0)  # the sample folder takes milliseconds
    monkeypatch.setattr(speeds, "MIN_CHUNKS", 1)
    shutil.copytree(SAMPLE, tmp_path / "notes")
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "kites.md").write_text("# Kites\n\nA kite flies on the wind.\n")
    with make_kb(tmp_path) as kb:
        first = Tally()
        kb.add([tmp_path / "notes"], progress=first)
        assert not first.embed_rate_known  # a fresh index: the priors
        model = kb.writer().execute("SELECT value FROM meta WHERE key = 'model_name'").fetchone()
        parse, embed = speeds.recall(kb.writer(), model[0])
        assert parse and parse > 0 and embed and embed > 0
        second = Tally(prior_rate=1.0, prior_embed_rate=1.0)
        kb.add([tmp_path / "more"], progress=second)
    assert second.embed_rate_known
    assert (second.prior_rate, second.prior_embed_rate) == (parse, embed)


def test_remembered_speeds_are_read_safely(tmp_path):
    with make_kb(tmp_path) as kb:
        kb.add([SAMPLE])
        conn = kb.writer()
        for bad in ('{"per_s": -3}', '{"per_s": true}', "[1]", "not json", '{"per_s": 1e400}'):
            conn.execute("UPDATE meta SET value = ? WHERE key = 'model_name'", ("m",))
            conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (speeds.PARSE_KEY, bad)
            )
            assert speeds.recall(conn, None) == (None, None)
