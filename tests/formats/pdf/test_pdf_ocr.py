from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("reportlab")
Image = pytest.importorskip("PIL.Image")

from PIL import ImageDraw, ImageFont  # noqa: E402
from reportlab.lib.pagesizes import A4  # noqa: E402
from reportlab.lib.utils import ImageReader  # noqa: E402
from reportlab.pdfgen.canvas import Canvas  # noqa: E402

from kb_search.formats.pdf import ocr  # noqa: E402
from kb_search.formats.pdf.parse import parse_pdf  # noqa: E402
from kb_search.parsed import ChunkSettings, IngestError  # noqa: E402
from pdf_samples import HEIGHT, WIDTH, body, lines_of, words  # noqa: E402

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


# ----------------------------------------------------------------- text layer + scanned body

HEADER = [
    "ACME Corporation records office internal memo reference",
    "Filed for the finance team by the archive clerk",
]
BODY_TOP = 160  # points from the top: the scanned body starts here


def write_header_over_scan(path: Path, header: list[str] = HEADER) -> Path:
    """A typed header (a real text layer) above a scanned body (an image)."""
    canvas = Canvas(str(path), pagesize=A4)
    for i, line in enumerate(header):
        canvas.setFont("Helvetica", 12)
        canvas.drawString(72, HEIGHT - 70 - i * 18, line)
    scan = scanned_page_image().crop((0, 100, 1240, 1754))
    canvas.drawImage(ImageReader(scan), 0, 0, width=WIDTH, height=HEIGHT - BODY_TOP)
    canvas.showPage()
    canvas.save()
    return path


class BoxesEngine:
    """An engine that 'recognises' given lines at given boxes (points), the way RapidOCR reports
    them: for the merge logic, where the real engine is not installed."""

    name = "boxes"

    def __init__(self, lines: list[tuple[str, float, float, float, float]]) -> None:
        self.lines = lines

    def recognize(self, image) -> list:
        scale = ocr.render_scale(WIDTH, HEIGHT)
        out = []
        for text, x0, y0, x1, y1 in self.lines:
            box = [[x * scale, y * scale] for x, y in ((x0, y0), (x1, y0), (x1, y1), (x0, y1))]
            out.append((box, text, 0.9))
        return out


def test_scanned_body_is_merged_under_the_text_layer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = BoxesEngine(
        [
            # the typed header as OCR reads it (worse): the text layer's version must win
            ("ACME Corporatlon records offce internal memo reference", 72, 60, 400, 74),
            ("Quarterly invoice summary", 60, 200, 300, 222),
            ("Payment received in March", 60, 245, 300, 267),
        ]
    )
    monkeypatch.setattr(ocr, "get_engine", lambda: engine)
    doc = parse_pdf(write_header_over_scan(tmp_path / "memo.pdf"), SETTINGS)
    text = " ".join(c.text for c in doc.chunks)
    assert doc.metadata["ocr_pages"] == [1]
    assert "Corporatlon" not in text and text.count("ACME Corporation records office") == 1
    assert text.index("archive clerk") < text.index("Quarterly invoice") < text.index("Payment")


@pytest.mark.slow
def test_typed_header_and_scanned_body_are_both_read(tmp_path: Path) -> None:
    if ocr.get_engine() is None:
        pytest.skip("no OCR engine installed (pip install 'kb-search[ocr]')")
    doc = parse_pdf(write_header_over_scan(tmp_path / "memo.pdf"), SETTINGS)
    text = " ".join(c.text for c in doc.chunks)
    lower = text.lower()
    assert doc.metadata["ocr_pages"] == [1]
    assert text.count("records office internal memo") == 1  # once: from the text layer
    assert lower.index("archive clerk") < lower.index("invoice") < lower.index("payment")


def test_short_text_layer_is_kept_not_replaced_by_ocr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = BoxesEngine(
        [
            ("ACME rnemo ref 7", 72, 60, 180, 74),  # the header, misread
            ("Quarterly invoice summary", 60, 200, 300, 222),
        ]
    )
    monkeypatch.setattr(ocr, "get_engine", lambda: engine)
    path = write_header_over_scan(tmp_path / "memo.pdf", header=["ACME memo ref 7"])
    text = " ".join(c.text for c in parse_pdf(path, SETTINGS).chunks)
    assert "rnemo" not in text
    assert text.index("ACME memo ref 7") < text.index("Quarterly invoice summary")


# ----------------------------------------------------------------- what is not a scan


def write_blank_and_figure(path: Path) -> Path:
    """Page 1 typed text, page 2 blank (a verso), page 3 a vector figure with a short label."""
    canvas = Canvas(str(path), pagesize=A4)
    for x, y, text, font, size in body(lines_of(words(80, "typed"))):
        canvas.setFont(font, size)
        canvas.drawString(x, HEIGHT - y, text)
    canvas.showPage()
    canvas.showPage()
    for i in range(40):
        canvas.line(72 + i * 10, 200, 300, 600 - i * 5)
    canvas.rect(100, 300, 300, 200, fill=1)
    canvas.setFont("Helvetica", 9)
    canvas.drawString(110, 180, "Fig. 2")
    canvas.showPage()
    canvas.save()
    return path


@pytest.mark.usefixtures("no_engine")
def test_blank_and_vector_figure_pages_are_not_scans(tmp_path: Path) -> None:
    """Fails on the old code: any page without letters counted as scanned."""
    doc = parse_pdf(write_blank_and_figure(tmp_path / "figure.pdf"), SETTINGS)
    assert "ocr_skipped_pages" not in doc.metadata
    assert doc.page_count == 3


def write_slide_over_picture(path: Path) -> Path:
    """A slide: a full-page background picture with a short title typed over it."""
    canvas = Canvas(str(path), pagesize=A4)
    canvas.drawImage(ImageReader(Image.new("RGB", (400, 560), "navy")), 0, 0, WIDTH, HEIGHT)
    canvas.setFont("Helvetica-Bold", 28)
    canvas.drawString(72, HEIGHT - 120, "Results so far")
    canvas.setFont("Helvetica", 18)
    canvas.drawString(72, HEIGHT - 200, "Recall is up by a tenth")
    canvas.showPage()
    canvas.save()
    return path


@pytest.mark.usefixtures("no_engine")
def test_slide_text_over_a_background_picture_is_not_a_scan(tmp_path: Path) -> None:
    """Fails on the old code: fewer than 50 letters over a big image counted as a scan."""
    doc = parse_pdf(write_slide_over_picture(tmp_path / "slide.pdf"), SETTINGS)
    assert "ocr_skipped_pages" not in doc.metadata
    assert "Recall is up" in " ".join(c.text for c in doc.chunks)


def write_pictures_with_words(path: Path, size: float, typed_pages: int) -> Path:
    """`typed_pages` pages of text, then two full-page pictures with a few words over each."""
    canvas = Canvas(str(path), pagesize=A4)
    for _ in range(typed_pages):
        for x, y, text, font, font_size in body(lines_of(words(80, "typed"))):
            canvas.setFont(font, font_size)
            canvas.drawString(x, HEIGHT - y, text)
        canvas.showPage()
    for slogan in ("YOUR POINT", "THANK YOU"):
        canvas.drawImage(ImageReader(scanned_page_image()), 0, 0, width=WIDTH, height=HEIGHT)
        canvas.setFont("Helvetica-Bold", size)
        canvas.drawString(72, HEIGHT - 120, slogan)
        canvas.showPage()
    canvas.save()
    return path


@pytest.mark.usefixtures("no_engine")
def test_display_text_over_a_picture_is_not_a_stamp(tmp_path: Path) -> None:
    """Fails on the old code: a slide's short slogan over a photo counted as a stamp on a scan
    (born-digital slides were OCR'd into junk)."""
    doc = parse_pdf(write_pictures_with_words(tmp_path / "s.pdf", 40, typed_pages=0), SETTINGS)
    assert "ocr_skipped_pages" not in doc.metadata
    assert "YOUR POINT" in " ".join(c.text for c in doc.chunks)


@pytest.mark.usefixtures("no_engine")
def test_a_few_words_over_a_picture_in_a_born_digital_document_are_not_a_stamp(
    tmp_path: Path,
) -> None:
    """Fails on the old code: most pages have their text, so small words over a picture on two
    of them are that page's text, not a stamp on a scanned page."""
    doc = parse_pdf(write_pictures_with_words(tmp_path / "d.pdf", 10, typed_pages=3), SETTINGS)
    assert "ocr_skipped_pages" not in doc.metadata


@pytest.mark.usefixtures("no_engine")
def test_stamped_scans_are_still_scans(tmp_path: Path) -> None:
    """A scanned document with a small stamp on every page is read by OCR."""
    doc = parse_pdf(write_pictures_with_words(tmp_path / "b.pdf", 10, typed_pages=1), SETTINGS)
    assert doc.metadata["ocr_skipped_pages"] == [2, 3]
