"""Without an OCR engine, `kb add` says once per run how many scanned pages it left unread and
what to install; a failure remembered without an engine is retried once one is installed."""

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
    human = kb("sync", "--workers", "0", "--format", "human")
    assert human.stderr.count(NOTE_PREFIX) == 1
    assert "2 scanned PDF pages in 2 files" in human.stderr


def test_no_line_when_an_engine_is_installed(kb, folder: Path, monkeypatch) -> None:
    monkeypatch.setattr(ocr, "get_engine", lambda: None)
    kb.json("add", str(folder), "--workers", "0")
    monkeypatch.setattr(ocr, "engine_installed", lambda: "rapidocr")
    data = kb.json("sync", "--workers", "0")
    assert ocr_notes(data["notes"]) == []
    # the scan that failed without an engine is parsed again, not skipped as a known failure
    assert len(data["failed"]) == 1 and data["known_failures"] == 0
