"""OCR follows the text: a PDF's text layer is keyword-searchable when the keyword phase ends;
its scanned pages are queued in the database and read after it (ingest/ocr_phase.py), with
the chunks a parse in one go gives; reruns neither read a page twice nor lose the queue."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("reportlab")
pytest.importorskip("PIL")

from kb_search.formats.pdf import ocr  # noqa: E402
from kb_search.ingest import pipeline  # noqa: E402
from kb_search.ingest import sync as sync_module  # noqa: E402
from kb_search.ingest.parse import parse_file  # noqa: E402
from kb_search.parsed import ChunkSettings  # noqa: E402
from pdf_samples import body, lines_of, words, write_pdf  # noqa: E402

sys_path_pdf = Path(__file__).resolve().parent.parent / "formats" / "pdf"


@pytest.fixture(autouse=True)
def _pdf_tests_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(sys_path_pdf))


def needs_engine() -> None:
    if ocr.engine_installed() is None or ocr.get_engine() is None:
        pytest.skip("no OCR engine installed (pip install 'kb-search[ocr]')")


def make_folder(root: Path) -> Path:
    from test_pdf_ocr import write_scanned

    root.mkdir()
    write_scanned(root / "scan.pdf", with_text_page=False)
    write_scanned(root / "mixed.pdf", with_text_page=True)
    write_pdf(root / "typed.pdf", [body(lines_of(words(80, "plain")))])
    return root


def found(db_path: Path, word: str) -> list[str]:
    """The files whose chunks match `word` by keyword, read from the file as another process
    would see it."""
    conn = sqlite3.connect(db_path)
    try:
        rows = conn.execute(
            "SELECT DISTINCT d.rel_path FROM chunks_fts f JOIN chunks c ON c.id = f.rowid"
            " JOIN documents d ON d.id = c.document_id WHERE chunks_fts MATCH ?"
            " ORDER BY d.rel_path",
            (word,),
        ).fetchall()
    finally:
        conn.close()
    return [Path(r[0]).name for r in rows]


def queue(db_path: Path) -> dict[str, int]:
    conn = sqlite3.connect(db_path)
    try:
        return {Path(p).name: n for p, n in conn.execute("SELECT path, pages FROM ocr_queue")}
    finally:
        conn.close()


@pytest.mark.slow
def test_text_layer_is_searchable_before_its_ocr_runs(
    kb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    needs_engine()
    folder = make_folder(tmp_path / "papers")
    db_path = tmp_path / "data dir" / "kb.db"
    before_ocr: dict = {}
    real_phase = pipeline.read_queued_scans

    def look_first(conn, *args, **kwargs):
        before_ocr["typed"] = found(db_path, "typed0")  # the mixed PDF's text-layer words
        before_ocr["invoice"] = found(db_path, "invoice")  # on its scanned page, and the scan's
        before_ocr["queue"] = queue(db_path)
        return real_phase(conn, *args, **kwargs)

    monkeypatch.setattr(pipeline, "read_queued_scans", look_first)
    data = kb.json("add", str(folder), "--workers", "0")

    assert before_ocr == {
        "typed": ["mixed.pdf"],
        "invoice": [],
        "queue": {"mixed.pdf": 1, "scan.pdf": 1},
    }
    assert data["failed"] == [] and data["added"] == 3 and data["ocr_pages"] == 2
    assert found(db_path, "invoice") == ["mixed.pdf", "scan.pdf"]
    assert queue(db_path) == {}
    # the chunks are those of a parse in one go
    conn = sqlite3.connect(db_path)
    stored = conn.execute(
        "SELECT c.text, c.page_start, c.page_end FROM chunks c JOIN documents d"
        " ON d.id = c.document_id WHERE d.rel_path LIKE '%mixed.pdf' ORDER BY c.chunk_index"
    ).fetchall()
    metadata = conn.execute(
        "SELECT metadata FROM documents WHERE rel_path LIKE '%mixed.pdf'"
    ).fetchone()[0]
    conn.close()
    whole = parse_file(folder / "mixed.pdf", ChunkSettings())
    assert stored == [(c.text, c.page_start, c.page_end) for c in whole.chunks]
    assert '"ocr_pages": [2]' in metadata and "ocr_queued_pages" not in metadata

    again = kb.json("add", str(folder), "--workers", "0")
    assert again["skipped"] == 3 and again["ocr_pages"] == 0  # nothing read twice
    synced = kb.json("sync", "--workers", "0")
    assert synced["ocr_pages"] == 0 and synced["added"] == synced["updated"] == 0


def test_pages_wait_in_the_queue_without_an_engine_and_doctor_counts_them(
    kb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Queued while an engine was installed, then it is gone: the pages wait (kb doctor and
    kb stats count them, the OCR note names them), and nothing is lost."""
    folder = make_folder(tmp_path / "papers")
    db_path = tmp_path / "data dir" / "kb.db"
    monkeypatch.setattr(ocr, "engine_installed", lambda: "rapidocr")  # queued ...
    monkeypatch.setattr(pipeline, "read_queued_scans", lambda *a, **k: None)  # ... then stopped
    kb.json("add", str(folder), "--workers", "0")
    assert queue(db_path) == {"mixed.pdf": 1, "scan.pdf": 1}
    assert found(db_path, "typed0") == ["mixed.pdf"]

    monkeypatch.undo()
    monkeypatch.setattr(ocr, "engine_installed", lambda: None)
    monkeypatch.setattr(ocr, "get_engine", lambda: None)
    checks = {c["name"]: c for c in kb.json("doctor")["checks"]}
    assert checks["ocr_queue"]["warning"]
    assert checks["ocr_queue"]["detail"].startswith(
        "2 scanned PDF pages in 2 files wait for OCR; no OCR engine is installed"
    )
    assert kb.json("stats")["ocr_waiting"] == {"pages": 2, "files": 2}
    synced = kb.json("sync", "--workers", "0")
    # the scan, never written, is read again and fails as it does without an engine; the
    # mixed PDF's page waits for one
    assert queue(db_path) == {"mixed.pdf": 1}
    assert "no OCR engine is installed" in synced["failed"][0]["reason"]
    (note,) = [n for n in synced["notes"] if n.startswith("OCR: ")]
    assert "2 scanned PDF pages in 2 files left unread" in note  # the one read, the one queued


def test_a_changed_file_leaves_the_queue_with_its_old_entry(
    kb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scan removed before the OCR phase reads it is not read, and leaves the queue."""
    folder = make_folder(tmp_path / "papers")
    db_path = tmp_path / "data dir" / "kb.db"
    monkeypatch.setattr(ocr, "engine_installed", lambda: "rapidocr")
    real_phase = pipeline.read_queued_scans

    def remove_scan_first(*args, **kwargs):
        (folder / "scan.pdf").unlink()
        (folder / "mixed.pdf").write_bytes((folder / "typed.pdf").read_bytes())
        return real_phase(*args, **kwargs)

    monkeypatch.setattr(pipeline, "read_queued_scans", remove_scan_first)
    data = kb.json("add", str(folder), "--workers", "0")
    assert data["ocr_pages"] == 0 and queue(db_path) == {}
    # the next run reads the changed file again
    monkeypatch.setattr(pipeline, "read_queued_scans", real_phase)
    synced = kb.json("sync", "--workers", "0")
    assert synced["updated"] == 1 and synced["deleted"] == 0
    assert found(db_path, "plain0") == ["mixed.pdf", "typed.pdf"]


def test_a_scan_queued_in_a_removed_folder_is_not_read(
    kb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kb remove FOLDER` while its scans wait: the next run's OCR phase drops them unread
    (they have no document yet for the removal to delete)."""
    folder = make_folder(tmp_path / "papers")
    other = tmp_path / "other"
    other.mkdir()
    write_pdf(other / "notes.pdf", [body(lines_of(words(80, "other")))])
    db_path = tmp_path / "data dir" / "kb.db"
    monkeypatch.setattr(ocr, "engine_installed", lambda: "rapidocr")
    real_phase = pipeline.read_queued_scans
    monkeypatch.setattr(pipeline, "read_queued_scans", lambda *a, **k: None)  # stopped
    kb.json("add", str(folder), "--workers", "0")
    assert queue(db_path) == {"mixed.pdf": 1, "scan.pdf": 1}
    kb.json("remove", str(folder))
    assert queue(db_path) == {"scan.pdf": 1}  # the mixed PDF's row left with its document

    monkeypatch.setattr(pipeline, "read_queued_scans", real_phase)
    engines = []
    monkeypatch.setattr(ocr, "get_engine", lambda: engines.append(1))  # no OCR may run
    data = kb.json("add", str(other), "--workers", "0")
    assert data["ocr_pages"] == 0 and data["added"] == 1 and data["failed"] == []
    assert queue(db_path) == {} and found(db_path, "invoice") == [] and engines == []


def test_a_touched_or_renamed_file_keeps_its_queued_pages(
    kb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Old code: the queue row kept the old mtime or path, so the OCR phase took it for a
    changed or vanished file and dropped it, and the unchanged content was never read again."""
    import os

    folder = make_folder(tmp_path / "papers")
    db_path = tmp_path / "data dir" / "kb.db"
    monkeypatch.setattr(ocr, "engine_installed", lambda: "rapidocr")  # queued ...
    monkeypatch.setattr(pipeline, "read_queued_scans", lambda *a, **k: None)  # ... not read yet
    monkeypatch.setattr(sync_module, "read_queued_scans", lambda *a, **k: None)
    kb.json("add", str(folder), "--workers", "0")
    mixed = folder / "mixed.pdf"
    os.utime(mixed, (mixed.stat().st_atime, mixed.stat().st_mtime + 100))
    kb.json("sync", "--workers", "0")
    conn = sqlite3.connect(db_path)
    try:
        (mtime,) = conn.execute(
            "SELECT mtime FROM ocr_queue WHERE path = ?", (str(mixed),)
        ).fetchone()
        assert mtime == mixed.stat().st_mtime
    finally:
        conn.close()
    mixed.rename(folder / "renamed.pdf")
    kb.json("sync", "--workers", "0")
    assert queue(db_path).get("renamed.pdf") == 1 and "mixed.pdf" not in queue(db_path)


def test_tags_of_a_scan_survive_the_rechunk_after_an_upgrade(
    kb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Old code: re-reading a scan-only PDF whose content did not change (a new chunker after an
    upgrade) deleted its document before queuing it: `kb tag` tags and its id were lost."""
    folder = make_folder(tmp_path / "papers")
    scan = folder / "scan.pdf"
    monkeypatch.setattr(ocr, "engine_installed", lambda: "rapidocr")
    monkeypatch.setattr(pipeline, "read_queued_scans", lambda *a, **k: None)
    kb.json("add", str(folder), "--workers", "0")
    monkeypatch.undo()
    needs_engine()
    kb.json("sync", "--workers", "0")  # the OCR phase writes the scan's document
    kb("tag", str(scan), "keep")
    def scan_source() -> dict:
        hits = kb.json("search", "invoice", "--mode", "lexical")["results"]
        return next(r["source"] for r in hits if r["source"]["path"] == str(scan))

    before = scan_source()
    assert before["tags"] == ["keep"]
    conn = sqlite3.connect(tmp_path / "data dir" / "kb.db")
    try:  # as if an older kb had chunked it
        conn.execute("UPDATE documents SET chunking = 'old' WHERE path = ?", (str(scan),))
        conn.commit()
    finally:
        conn.close()
    kb.json("sync", "--workers", "0")
    after = scan_source()
    assert (after["document_id"], after["tags"]) == (before["document_id"], ["keep"])


def test_a_scan_left_by_a_stopped_run_takes_no_tags_of_a_later_command(
    kb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Old code: `kb add ~/scans` stopped before its OCR phase, then `kb add todo.md --tag work
    --type memo`: the queued scan was written with tag `work` and type `memo`."""
    folder = make_folder(tmp_path / "papers")
    scan = folder / "scan.pdf"
    monkeypatch.setattr(ocr, "engine_installed", lambda: "rapidocr")
    monkeypatch.setattr(pipeline, "read_queued_scans", lambda *a, **k: None)  # stopped
    kb.json("add", str(folder), "--workers", "0")
    monkeypatch.undo()
    needs_engine()
    todo = tmp_path / "todo.md"
    todo.write_text("# Todo\n\nFile the invoice.\n", encoding="utf-8")
    kb.json("add", str(todo), "--tag", "work", "--type", "memo", "--workers", "0")
    hits = kb.json("search", "invoice", "--mode", "lexical")["results"]
    by_path = {r["source"]["path"]: r["source"] for r in hits}
    assert (by_path[str(scan)]["tags"], by_path[str(scan)]["type"]) == ([], "pdf")
    assert (by_path[str(todo)]["tags"], by_path[str(todo)]["type"]) == (["work"], "memo")


def test_pages_of_a_scan_queued_again_count_once_in_the_estimate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Old code: a run stopped before its OCR phase left 2 pages queued (scan.pdf, mixed.pdf);
    the next `kb add` found them queued, parsed scan.pdf again (it has no document) and queued
    it again: its page counted twice, 3 pages to OCR for 2."""
    from kb_search.config import load_config
    from kb_search.knowledge_base import KnowledgeBase
    from kb_search.progress import Tally
    from kb_testing import HashEmbedder

    folder = make_folder(tmp_path / "papers")
    config = load_config(env={"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"})
    monkeypatch.setattr(ocr, "engine_installed", lambda: "rapidocr")
    monkeypatch.setattr(pipeline, "read_queued_scans", lambda *a, **k: None)  # stopped
    with KnowledgeBase(config, embedder=HashEmbedder(), cwd=tmp_path) as kb:
        kb.add([folder])
        assert queue(tmp_path / "data" / "kb.db") == {"mixed.pdf": 1, "scan.pdf": 1}
        again = Tally()
        kb.add([folder], progress=again)
    assert again.ocr_waiting == 2
