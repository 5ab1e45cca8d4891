from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("reportlab")
Image = pytest.importorskip("PIL.Image")

from pdf_samples import HEIGHT, WIDTH, body, lines_of, words  # noqa: E402
from PIL import ImageDraw, ImageFont  # noqa: E402
from reportlab.lib.pagesizes import A4  # noqa: E402
from reportlab.lib.utils import ImageReader  # noqa: E402
from reportlab.pdfgen.canvas import Canvas  # noqa: E402

from kb_search.ingest.formats import ocr  # noqa: E402
from kb_search.ingest.formats.pdf import parse_pdf  # noqa: E402
from kb_search.models import ChunkSettings, IngestError  # noqa: E402

SETTINGS = ChunkSettings()
SCANNED_LINES = ["Quarterly invoice summary", "Payment received in March"]


def scanned_page_image() -> Image.Image:
    image = Image.new("RGB", (1240, 1754), "white")  # A4 at 150 dpi
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=48)
    for i, line in enumerate(SCANNED_LINES):
        draw.text((120, 200 + i * 90), line, fill="black", font=font)
    return image


def write_scanned(path: Path, with_text_page: bool) -> Path:
    canvas = Canvas(str(path), pagesize=A4)
    if with_text_page:
        for x, y, text, font, size in body(lines_of(words(80, "typed"))):
            canvas.setFont(font, size)
            canvas.drawString(x, HEIGHT - y, text)
        canvas.showPage()
    canvas.drawImage(ImageReader(scanned_page_image()), 0, 0, width=WIDTH, height=HEIGHT)
    canvas.showPage()
    canvas.save()
    return path


@pytest.fixture
def no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ocr, "get_engine", lambda: None)


@pytest.mark.slow
def test_image_only_page_is_recognised(tmp_path: Path) -> None:
    if ocr.get_engine() is None:
        pytest.skip("no OCR engine installed (pip install 'kb-search[ocr]')")
    doc = parse_pdf(write_scanned(tmp_path / "scan.pdf", with_text_page=False), SETTINGS)
    text = " ".join(c.text for c in doc.chunks).lower()
    assert "invoice" in text and "payment" in text
    assert doc.metadata["ocr_pages"] == [1]
    assert all(c.page_start == 1 for c in doc.chunks)


def test_ocr_never_on_scan_is_an_error(tmp_path: Path) -> None:
    path = write_scanned(tmp_path / "scan.pdf", with_text_page=False)
    with pytest.raises(IngestError, match="no text layer and OCR is disabled"):
        parse_pdf(path, SETTINGS, ocr="never")


@pytest.mark.usefixtures("no_engine")
def test_scan_without_engine_says_how_to_enable(tmp_path: Path) -> None:
    path = write_scanned(tmp_path / "scan.pdf", with_text_page=False)
    with pytest.raises(IngestError, match=r"no OCR engine is installed.*pip install"):
        parse_pdf(path, SETTINGS)


@pytest.mark.usefixtures("no_engine")
def test_mixed_document_reports_skipped_pages(tmp_path: Path) -> None:
    doc = parse_pdf(write_scanned(tmp_path / "mixed.pdf", with_text_page=True), SETTINGS)
    assert doc.page_count == 2
    assert doc.metadata["ocr_skipped_pages"] == [2]
    assert "pip install" in doc.metadata["ocr_hint"]
    assert all(c.page_start == 1 for c in doc.chunks)
