"""SIGKILL `kb add` in its keyword phase and in its OCR phase (scanned PDF pages read after
every file's text): the DB stays consistent, the queue of pages to OCR survives, and the next
`kb add` / `kb sync` reads exactly the pages not read yet."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("reportlab")
pytest.importorskip("PIL")

from test_crash_resume import add_killed_when, make_corpus, run_json  # noqa: E402

from kb_search.formats.pdf import ocr  # noqa: E402
from pdf_samples import body, lines_of, words, write_pdf  # noqa: E402

pytestmark = pytest.mark.slow

SCANS = 4


@pytest.fixture(autouse=True)
def _needs_engine(monkeypatch: pytest.MonkeyPatch, model_cache: Path) -> None:
    if ocr.engine_installed() is None:
        pytest.skip("no OCR engine installed (pip install 'kb-search[ocr]')")
    monkeypatch.setenv("KB_TEST_MODEL_CACHE", str(model_cache))
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent.parent / "formats" / "pdf"))


def add_pdfs(root: Path) -> None:
    from test_pdf_ocr import write_scanned

    for i in range(SCANS):
        write_scanned(root / f"scan {i}.pdf", with_text_page=False)
    write_scanned(root / "mixed.pdf", with_text_page=True)
    write_pdf(root / "typed.pdf", [body(lines_of(words(80, "plain")))])


def db_state(db_path: Path) -> tuple[int, int, int]:
    """(documents, queued files, queued pages) of a DB another process writes; zeros until
    it is ready."""
    try:
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5)
        try:
            docs = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
            files, pages = conn.execute(
                "SELECT count(*), coalesce(sum(pages), 0) FROM ocr_queue"
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return 0, 0, 0
    return docs, files, pages


def documents_with(db_path: Path, word: str) -> list[str]:
    conn = sqlite3.connect(db_path)
    try:
        rows = conn.execute(
            "SELECT DISTINCT d.rel_path FROM chunks_fts f JOIN chunks c ON c.id = f.rowid"
            " JOIN documents d ON d.id = c.document_id WHERE chunks_fts MATCH ?",
            (word,),
        ).fetchall()
    finally:
        conn.close()
    return sorted(Path(r[0]).name for r in rows)


def kill_when(data_dir: Path, corpus: Path, ready) -> tuple[int, int, int]:
    db_path = data_dir / "kb.db"

    def probe():
        now = db_state(db_path)
        return now if ready(now) else None

    add_killed_when(data_dir, corpus, probe, 300, "not killed in time")
    return db_state(db_path)


def check_consistent(data_dir: Path) -> dict:
    _, doctor = run_json(data_dir, "doctor")
    assert doctor["ok"], doctor
    return {c["name"]: c for c in doctor["checks"]}


def check_finished(data_dir: Path, corpus_md: int) -> None:
    db_path = data_dir / "kb.db"
    scans = [f"scan {i}.pdf" for i in range(SCANS)]
    assert db_state(db_path) == (corpus_md + SCANS + 2, 0, 0)
    assert documents_with(db_path, "invoice") == sorted(["mixed.pdf", *scans])
    assert documents_with(db_path, "typed0") == ["mixed.pdf"]
    conn = sqlite3.connect(db_path)
    paths = [r[0] for r in conn.execute("SELECT path FROM documents")]
    conn.close()
    assert len(paths) == len(set(paths))
    check_consistent(data_dir)


def test_sigkill_in_the_keyword_phase_then_add_reads_the_scans(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    make_corpus(corpus)
    n_md = len(list(corpus.rglob("*.md")))
    add_pdfs(corpus)
    data_dir = tmp_path / "data"
    docs, _files, _pages = kill_when(data_dir, corpus, lambda s: s[0] >= 20)
    assert docs < n_md  # in the keyword phase
    check_consistent(data_dir)

    rerun, summary = run_json(data_dir, "add", str(corpus))
    assert rerun.returncode == 0, rerun.stderr
    assert summary["failed"] == [] and summary["ocr_pages"] == SCANS + 1
    check_finished(data_dir, n_md)


def test_sigkill_in_the_ocr_phase_then_sync_reads_only_what_is_left(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(5):
        (corpus / f"note {i}.md").write_text(f"# Note {i}\n\nplain words token{i}.\n")
    add_pdfs(corpus)
    data_dir = tmp_path / "data"
    # every file's text is written (all but the scans, which have no text layer) and some
    # pages were read by OCR (a scan's document exists), others wait
    docs, files, pages = kill_when(data_dir, corpus, lambda s: s[0] > 5 + 2 and s[1] > 0)
    assert 0 < files < SCANS + 1 and 5 + 2 < docs < 5 + 2 + SCANS
    checks = check_consistent(data_dir)
    assert checks["ocr_queue"]["warning"]
    assert checks["ocr_queue"]["detail"].startswith(f"{pages} scanned PDF page")
    assert documents_with(data_dir / "kb.db", "typed0") == ["mixed.pdf"]  # searchable now

    rerun, summary = run_json(data_dir, "sync")
    assert rerun.returncode == 0, rerun.stderr
    assert summary["failed"] == [] and summary["ocr_pages"] == pages  # none read twice
    check_finished(data_dir, 5)
    _, again = run_json(data_dir, "sync")
    assert again["ocr_pages"] == 0
