from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("reportlab")

from kb_search.formats.pdf.parse import parse_pdf  # noqa: E402
from kb_search.parsed import ChunkSettings, IngestError  # noqa: E402
from pdf_samples import HEIGHT, body, lines_of, words, write_pdf  # noqa: E402

SETTINGS = ChunkSettings(max_tokens=200, min_tokens=40)


def all_text(doc) -> str:
    return "\n\n".join(c.text for c in doc.chunks)


def test_one_column_pages_are_numbered(tmp_path: Path) -> None:
    pages = [body(lines_of(words(120, f"pg{n}x"))) for n in (1, 2, 3)]
    path = write_pdf(tmp_path / "three.pdf", pages, title="Three Page Report")
    doc = parse_pdf(path, SETTINGS)
    assert doc.doc_type == "pdf"
    assert doc.page_count == 3
    assert doc.title == "Three Page Report"
    assert doc.metadata["author"] == "Test Author"
    for chunk in doc.chunks:
        assert chunk.page_start is not None and chunk.page_end is not None
        assert chunk.page_start == chunk.page_end  # each page holds > min_tokens
        assert f"pg{chunk.page_start}x0" in chunk.text or f"pg{chunk.page_start}x" in chunk.text
        assert 0 < chunk.token_count <= SETTINGS.max_tokens
    assert {c.page_start for c in doc.chunks} == {1, 2, 3}


def test_two_columns_read_left_then_right(tmp_path: Path) -> None:
    left = lines_of(words(150, "left"), per_line=5)
    right = lines_of(words(150, "right"), per_line=5)
    page = []
    for i, (a, b) in enumerate(zip(left, right, strict=True)):
        y = 90 + i * 14
        # stream order interleaves the columns line by line; reading order must not
        page.append((60, y, a, "Helvetica", 10))
        page.append((320, y, b, "Helvetica", 10))
    path = write_pdf(tmp_path / "columns.pdf", [page])
    text = all_text(parse_pdf(path, SETTINGS))
    last_left = max(text.index(f"left{i}") for i in range(0, 150, 7))
    first_right = min(text.index(f"right{i}") for i in range(0, 150, 7))
    assert last_left < first_right
    assert "left0 index query" in text  # a column line is not glued to its neighbour


def test_table_page_keeps_cells_and_rows(tmp_path: Path) -> None:
    from reportlab.lib.pagesizes import A4
    from reportlab.platypus import SimpleDocTemplate, Table

    rows = [["Name", "Quantity", "Price"]]
    rows += [[f"item{i}", str(i * 3), f"{i}.50"] for i in range(12)]
    path = tmp_path / "table.pdf"
    SimpleDocTemplate(str(path), pagesize=A4).build([Table(rows)])
    text = all_text(parse_pdf(path, SETTINGS))
    assert "Name | Quantity | Price\nitem0 | 0 | 0.50\n" in text
    assert "\nitem4 | 12 | 4.50\n" in text
    assert text.index("item1 ") < text.index("item2 ") < text.index("item11 ")


def test_repeated_header_and_footer_are_removed(tmp_path: Path) -> None:
    pages = []
    for n in range(1, 6):
        page = [(72, 40, "ACME Corp Confidential Quarterly Report", "Helvetica", 9)]
        page += body(lines_of(words(80, f"{'abcde'[n - 1]}mark")))
        page.append((280, HEIGHT - 40, f"Page {n} of 5", "Helvetica", 9))
        pages.append(page)
    path = write_pdf(tmp_path / "headers.pdf", pages)
    text = all_text(parse_pdf(path, SETTINGS))
    assert "Confidential" not in text
    assert "of 5" not in text
    assert "cmark0" in text


def test_bare_page_numbers_are_removed(tmp_path: Path) -> None:
    pages = [
        body(lines_of(words(60, f"n{n}x"))) + [(290, HEIGHT - 40, str(n + 40), "Helvetica", 9)]
        for n in range(1, 4)
    ]
    path = write_pdf(tmp_path / "numbers.pdf", pages)
    chunks = parse_pdf(path, SETTINGS).chunks
    assert not any(c.text.rstrip().endswith(("41", "42", "43")) for c in chunks)


def test_dehyphenation_joins_broken_words_only(tmp_path: Path) -> None:
    lines = [
        "Retrieval systems need good infor-",
        "mation about a well-known corpus to rank docu-",
        "ments, and state-of-the-art models help a lot.",
    ]
    path = write_pdf(tmp_path / "hyphen.pdf", [body(lines)])
    text = all_text(parse_pdf(path, SETTINGS))
    assert "good information about a well-known corpus to rank documents," in text
    assert "state-of-the-art" in text


def test_hyphen_of_a_compound_word_survives_a_line_break(tmp_path: Path) -> None:
    lines = [
        "This is a well-known problem with a long history in the field of search.",
        "Everyone agrees that it is a well-",
        "known problem and that nobody has solved it so far in practice.",
    ]
    path = write_pdf(tmp_path / "compound.pdf", [body(lines)])
    assert "it is a well-known problem and" in all_text(parse_pdf(path, SETTINGS))


def test_headings_become_chain_and_title(tmp_path: Path) -> None:
    page = [(72, 80, "Search Engine Design Notes", "Helvetica-Bold", 20)]
    page.append((72, 120, "1. Introduction", "Helvetica-Bold", 14))
    page += body(lines_of(words(70, "intro")), top=140)
    page.append((72, 300, "1.1 Background", "Helvetica-Bold", 12))
    page += body(lines_of(words(70, "back")), top=320)
    path = write_pdf(tmp_path / "headings.pdf", [page])
    doc = parse_pdf(path, SETTINGS)
    assert doc.title == "Search Engine Design Notes"
    by_marker = {c.heading for c in doc.chunks if "back0" in c.text}
    assert by_marker == {"1. Introduction > 1.1 Background"}
    assert any(c.heading == "1. Introduction" and "intro0" in c.text for c in doc.chunks)


def test_long_text_is_split_under_max_tokens(tmp_path: Path) -> None:
    text = " ".join(f"Sentence number {i} talks about {words(12)}." for i in range(60))
    path = write_pdf(tmp_path / "long.pdf", [body(lines_of(text, per_line=12)[:55])])
    settings = ChunkSettings(max_tokens=60, min_tokens=10)
    doc = parse_pdf(path, settings)
    assert len(doc.chunks) > 3
    assert all(c.token_count <= settings.max_tokens for c in doc.chunks)


# ----------------------------------------------------------------------------- broken inputs


def encrypted(tmp_path: Path, user: str, owner: str) -> Path:
    pypdf = pytest.importorskip("pypdf")
    source = write_pdf(tmp_path / "plain.pdf", [body(lines_of(words(60, "secret")))])
    writer = pypdf.PdfWriter(clone_from=str(source))
    writer.encrypt(user_password=user, owner_password=owner, algorithm="RC4-128")
    target = tmp_path / "locked.pdf"
    with target.open("wb") as fh:
        writer.write(fh)
    return target


def test_user_password_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="^encrypted PDF: password required$"):
        parse_pdf(encrypted(tmp_path, user="user", owner="owner"), SETTINGS)


def test_owner_password_only_is_ingested(tmp_path: Path) -> None:
    doc = parse_pdf(encrypted(tmp_path, user="", owner="owner"), SETTINGS)
    assert "secret0" in all_text(doc)


def test_truncated_file_is_an_error(tmp_path: Path) -> None:
    source = write_pdf(tmp_path / "whole.pdf", [body(lines_of(words(200)))] * 3)
    data = source.read_bytes()
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(IngestError, match="broken PDF"):
        parse_pdf(cut, SETTINGS)


def test_text_file_named_pdf_is_an_error(tmp_path: Path) -> None:
    fake = tmp_path / "notes.pdf"
    fake.write_text("just some notes, not a PDF at all\n")
    with pytest.raises(IngestError, match="not a PDF"):
        parse_pdf(fake, SETTINGS)


def test_empty_file_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")
    with pytest.raises(IngestError, match="empty file"):
        parse_pdf(empty, SETTINGS)


def test_zero_pages_is_an_error(tmp_path: Path) -> None:
    pypdf = pytest.importorskip("pypdf")
    path = tmp_path / "nopages.pdf"
    with path.open("wb") as fh:
        pypdf.PdfWriter().write(fh)
    with pytest.raises(IngestError, match="no pages"):
        parse_pdf(path, SETTINGS)


def test_unknown_ocr_mode_is_rejected(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "a.pdf", [body(["hello world"])])
    with pytest.raises(ValueError):
        parse_pdf(path, SETTINGS, ocr="sometimes")
