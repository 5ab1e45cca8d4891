"""Without an OCR engine, `kb add` says in one line how many scanned pages of the files it read
it left unread, naming them, and what to install; a later run of other files says nothing of
them (`kb doctor` counts them); a failure remembered without an engine is retried once one is
installed."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("reportlab")
pytest.importorskip("PIL")

from test_pdf_ocr import write_scanned  # noqa: E402

from kb_search.formats.pdf import ocr  # noqa: E402
from kb_search.ingest.ocr_notice import NOTE_PREFIX  # noqa: E402
from pdf_samples import body, lines_of, words, write_pdf  # noqa: E402


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "papers"
    root.mkdir()
    write_scanned(root / "scan.pdf", with_text_page=False)
    write_scanned(root / "mixed.pdf", with_text_page=True)
    write_pdf(root / "typed.pdf", [body(lines_of(words(80, "typed")))])
    return root


@pytest.fixture
def no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ocr, "get_engine", lambda: None)
    monkeypatch.setattr(ocr, "engine_installed", lambda: None)


def ocr_notes(notes: list[str]) -> list[str]:
    return [n for n in notes if n.startswith(NOTE_PREFIX)]


@pytest.mark.usefixtures("no_engine")
def test_one_line_per_run_counts_unread_pages(kb, folder: Path) -> None:
    data = kb.json("add", str(folder), "--workers", "0")
    assert data["added"] == 2 and len(data["failed"]) == 1
    assert "no text layer on 1 page and no OCR engine" in data["failed"][0]["reason"]
    (note,) = ocr_notes(data["notes"])
    assert "2 scanned PDF pages in 2 files left unread" in note
    # the files and pages are named, so a person can check that they are scans
    assert "mixed.pdf (page 2), scan.pdf (1 page)" in note
    assert "pip install 'kb-search[ocr]'" in note
    # named once per file: the run that read them said so; a sync that reads nothing does not
    human = kb("sync", "--workers", "0", "--format", "human")
    assert NOTE_PREFIX not in human.stderr


@pytest.mark.usefixtures("no_engine")
def test_a_later_run_names_only_the_files_it_read(kb, folder: Path, tmp_path: Path) -> None:
    kb.json("add", str(folder), "--workers", "0")
    other = tmp_path / "other"
    other.mkdir()
    write_pdf(other / "notes.pdf", [body(lines_of(words(80, "notes")))])
    assert ocr_notes(kb.json("add", str(other), "--workers", "0")["notes"]) == []
    write_scanned(other / "late.pdf", with_text_page=True)
    (note,) = ocr_notes(kb.json("sync", "--workers", "0")["notes"])
    assert "1 scanned PDF page in 1 file left unread" in note and "late.pdf (page 2)" in note
    assert "mixed.pdf" not in note
    # the whole index's count stays where a person looks for it
    doctor = kb.json("doctor")
    (check,) = [c for c in doctor["checks"] if c["name"] == "ocr_queue"]
    assert "3 scanned PDF pages in 3 files wait for OCR" in check["detail"]


def test_no_line_when_an_engine_is_installed(kb, folder: Path, monkeypatch) -> None:
    monkeypatch.setattr(ocr, "get_engine", lambda: None)
    kb.json("add", str(folder), "--workers", "0")
    monkeypatch.setattr(ocr, "engine_installed", lambda: "rapidocr")
    data = kb.json("sync", "--workers", "0")
    assert ocr_notes(data["notes"]) == []
    # the scan that failed without an engine is parsed again, not skipped as a known failure
    assert len(data["failed"]) == 1 and data["known_failures"] == 0
