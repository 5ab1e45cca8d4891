"""Docling conversions of DOCX, PPTX, XLSX and HTML files that the tests build themselves.

Runs only where the docling extra is installed (python-docx, python-pptx and openpyxl come
with it and are used here to write the inputs).
"""

from pathlib import Path

import pytest

pytest.importorskip("docling")
docx = pytest.importorskip("docx")
pptx = pytest.importorskip("pptx")
openpyxl = pytest.importorskip("openpyxl")

from kb_search.formats import docling as docling_convert  # noqa: E402
from kb_search.formats.docling import convert_with_docling, docling_available  # noqa: E402
from kb_search.ingest.parse import parse_file  # noqa: E402
from kb_search.parsed import ChunkSettings, IngestError  # noqa: E402

pytestmark = pytest.mark.skipif(
    docling_available("docx") is not None, reason=str(docling_available("docx"))
)


def words(text: str) -> int:
    return len(text.split())


def filler(n: int, word: str) -> str:
    return " ".join([word] * n)


def convert(path: Path, max_tokens: int = 60, min_tokens: int = 5):
    return convert_with_docling(path, ChunkSettings(max_tokens, min_tokens), count=words)


@pytest.fixture
def report_docx(tmp_path: Path) -> Path:
    document = docx.Document()
    document.core_properties.title = "Annual Report"
    document.add_heading("Overview", 1)
    document.add_paragraph(filler(30, "overview"))
    document.add_heading("Finances", 1)
    document.add_paragraph(filler(30, "finance"))
    document.add_heading("Revenue", 2)
    document.add_paragraph(filler(30, "revenue"))
    document.add_heading("By region", 3)
    table = document.add_table(rows=3, cols=2)
    for row, (region, amount) in enumerate(
        [("Region", "Amount"), ("North", "10"), ("South", "20")]
    ):
        table.cell(row, 0).text = region
        table.cell(row, 1).text = amount
    document.add_paragraph("snake_case_name stays searchable")
    path = tmp_path / "report.docx"
    document.save(str(path))
    return path


def test_docx_title_heading_chains_and_table(report_docx):
    doc = convert(report_docx)
    assert doc.title == "Annual Report"
    assert doc.doc_type == "docx"
    assert doc.metadata["converter"] == "docling"
    headings = [c.heading for c in doc.chunks]
    assert headings[:3] == ["Overview", "Finances", "Finances > Revenue"]
    assert "Finances > Revenue > By region" in headings
    text = "\n".join(c.text for c in doc.chunks)
    assert "| Region | Amount |\n|---|---|\n| North | 10 |\n| South | 20 |" in text
    assert "snake_case_name" in text
    assert all(c.line_start is None and c.page_start is None for c in doc.chunks)


def test_docx_title_falls_back_to_title_paragraph(tmp_path):
    document = docx.Document()
    document.add_heading("Paragraph Title", 0)
    document.add_heading("Section", 1)
    document.add_paragraph("body text")
    path = tmp_path / "untitled.docx"
    document.save(str(path))
    doc = convert(path)
    assert doc.title == "Paragraph Title"
    assert doc.chunks[0].heading.startswith("Paragraph Title")


@pytest.fixture
def deck_pptx(tmp_path: Path) -> Path:
    deck = pptx.Presentation()
    for title, body in [("Quarterly Review", "growth was strong"), ("Roadmap", "ship search v2")]:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    blank = deck.slides.add_slide(deck.slide_layouts[6])
    box = blank.shapes.add_textbox(pptx.util.Inches(1), pptx.util.Inches(1), 400, 100)
    box.text_frame.text = "untitled slide text"
    path = tmp_path / "deck.pptx"
    deck.save(str(path))
    return path


def test_pptx_slides_are_pages_with_their_text(deck_pptx):
    doc = convert(deck_pptx, max_tokens=12, min_tokens=1)
    assert doc.doc_type == "pptx"
    assert doc.page_count == 3
    by_heading = {c.heading: c for c in doc.chunks}
    assert set(by_heading) == {"Quarterly Review", "Roadmap", "Slide 3"}
    assert "growth was strong" in by_heading["Quarterly Review"].text
    assert (by_heading["Roadmap"].page_start, by_heading["Roadmap"].page_end) == (2, 2)
    assert "untitled slide text" in by_heading["Slide 3"].text
    assert by_heading["Slide 3"].page_start == 3


def test_pptx_small_slides_merge_into_a_page_range(deck_pptx):
    doc = convert(deck_pptx, max_tokens=200, min_tokens=50)
    assert len(doc.chunks) == 1
    assert (doc.chunks[0].page_start, doc.chunks[0].page_end) == (1, 3)


@pytest.fixture
def book_xlsx(tmp_path: Path) -> Path:
    book = openpyxl.Workbook()
    sales = book.active
    sales.title = "Sales"
    for row in [("Region", "Amount"), ("North", 10), ("South", 20)]:
        sales.append(row)
    costs = book.create_sheet("Costs")
    for row in [("Item", "Cost"), ("Rent", 5)]:
        costs.append(row)
    path = tmp_path / "book.xlsx"
    book.save(str(path))
    return path


def test_xlsx_sheets_become_headed_markdown_tables(book_xlsx):
    doc = convert(book_xlsx, max_tokens=30, min_tokens=1)
    assert doc.doc_type == "xlsx"
    by_heading = {c.heading: c for c in doc.chunks}
    assert set(by_heading) == {"Sales", "Costs"}
    assert "| Region | Amount |\n|---|---|\n| North | 10 |" in by_heading["Sales"].text
    assert by_heading["Sales"].page_start == 1
    assert by_heading["Costs"].page_start == 2


def test_html_is_read_by_the_lxml_reader_even_with_docling(tmp_path):
    # Docling's HTML backend gives no source lines; the lxml reader cites page.html#L3-L5.
    path = tmp_path / "page.html"
    path.write_text(
        "<html><head><title>Web Page</title></head><body><nav>NAVTEXT</nav>"
        "<h1>Main</h1><p>hello world</p><h2>Data</h2>"
        "<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>"
        "</body></html>",
        encoding="utf-8",
    )
    doc = parse_file(path, ChunkSettings(200, 5), count=words)
    assert doc.metadata["converter"] == "lxml"
    assert all(c.line_start == 1 for c in doc.chunks)
    assert doc.doc_type == "html"
    assert doc.title == "Web Page"
    text = "\n".join(c.text for c in doc.chunks)
    assert "| k | v |\n|---|---|\n| a | 1 |" in text
    assert "NAVTEXT" not in text


def test_parse_file_routes_office_files_to_docling(report_docx):
    doc = parse_file(report_docx, ChunkSettings(60, 5), count=words)
    assert doc.doc_type == "docx"
    assert doc.title == "Annual Report"


def test_docx_without_docling_gives_the_install_hint(report_docx, monkeypatch):
    monkeypatch.setattr(
        docling_convert, "docling_available", lambda doc_type="docx": "docling is not installed"
    )
    with pytest.raises(IngestError, match=r"^DOCX needs the docling extra: pip install"):
        parse_file(report_docx, ChunkSettings(), count=words)


@pytest.mark.parametrize("suffix", [".docx", ".pptx", ".xlsx"])
def test_corrupt_office_file_is_one_clear_error(tmp_path, suffix):
    path = tmp_path / f"broken{suffix}"
    path.write_bytes(b"PK\x03\x04 this is not a zip archive")
    with pytest.raises(IngestError) as info:
        parse_file(path, ChunkSettings(), count=words)
    assert "\n" not in str(info.value)
    assert suffix[1:].upper() in str(info.value)
