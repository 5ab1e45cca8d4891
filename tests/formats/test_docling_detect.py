"""Availability checks and model detection: no Docling needed (they must work without it)."""

import importlib.util
from pathlib import Path

import pytest

from kb_search.formats import docling as docling_convert
from kb_search.formats.docling import (
    LAYOUT_MODEL_DIR,
    TABLE_MODEL_DIR,
    docling_models_dir,
    pdf_path_report,
)


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for name in ("KB_DOCLING_MODELS", "DOCLING_ARTIFACTS_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DOCLING_CACHE_DIR", str(tmp_path / "docling-cache"))
    docling_convert._backend_unavailable.cache_clear()
    yield tmp_path
    docling_convert._backend_unavailable.cache_clear()


def fake_models(root: Path) -> Path:
    for name in (LAYOUT_MODEL_DIR, TABLE_MODEL_DIR):
        (root / name).mkdir(parents=True)
        (root / name / "model.safetensors").write_bytes(b"\0")
    return root


def test_not_installed_is_reported_in_one_line(clean_env, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "docling" else real(name, *a)
    )
    assert docling_convert.docling_available("docx") == "docling is not installed"
    assert docling_convert.docling_available("pdf") == "docling is not installed"
    hint = docling_convert.docling_hint("pptx")
    assert hint == (
        "PPTX needs the docling extra: pip install 'kb-search[docling]' (docling is not installed)"
    )


def test_models_are_found_only_with_weights(clean_env, monkeypatch):
    assert docling_models_dir() is None
    empty = clean_env / "empty"
    (empty / LAYOUT_MODEL_DIR).mkdir(parents=True)
    (empty / TABLE_MODEL_DIR).mkdir(parents=True)
    monkeypatch.setenv("KB_DOCLING_MODELS", str(empty))
    assert docling_models_dir() is None
    monkeypatch.setenv("KB_DOCLING_MODELS", str(fake_models(clean_env / "models")))
    assert docling_models_dir() == clean_env / "models"


def test_docling_cache_dir_is_searched(clean_env):
    fake_models(clean_env / "docling-cache" / "models")
    assert docling_models_dir() == clean_env / "docling-cache" / "models"


def test_pdf_report_without_models_keeps_pypdfium2(clean_env):
    report = pdf_path_report()
    assert report.startswith("pypdfium2 text layer")
    assert "Docling not used: " in report


def test_pdf_report_with_models_and_pipeline_names_docling(clean_env, monkeypatch):
    monkeypatch.setenv("KB_DOCLING_MODELS", str(fake_models(clean_env / "models")))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    assert pdf_path_report() == f"Docling layout models (in {clean_env / 'models'})"


def test_pdf_falls_back_to_text_layer_when_docling_fails(tmp_path, monkeypatch):
    canvas = pytest.importorskip("reportlab.pdfgen.canvas")
    from kb_search.ingest.parse import parse_file
    from kb_search.parsed import ChunkSettings, IngestError

    path = tmp_path / "one.pdf"
    pdf = canvas.Canvas(str(path))
    pdf.drawString(72, 720, "text layer words")
    pdf.save()
    calls = []

    def failing(*args, **kwargs):
        calls.append(args[0])
        raise IngestError("docling failed on the PDF: boom")

    monkeypatch.setattr(docling_convert, "docling_available", lambda doc_type="docx": None)
    monkeypatch.setattr(docling_convert, "convert_with_docling", failing)
    doc = parse_file(path, ChunkSettings(), count=lambda text: len(text.split()))
    assert calls == [path]
    assert doc.doc_type == "pdf"
    assert "text layer words" in doc.chunks[0].text
    assert doc.chunks[0].page_start == 1
