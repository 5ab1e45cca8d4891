"""The smallest valid file of every registered format is a document, not an empty file.

One case per extension the registry knows (generated from `FORMATS`): a new format without a
smallest sample here fails `test_every_extension_has_a_sample`."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from kb_search.formats.registry import FORMATS
from kb_search.ingest.parse import parse_file
from kb_search.parsed import ChunkSettings

WORD = "burrows"
SENTENCE = "Bilbies dig burrows."


def _zip(mimetype: str, members: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mimetype", mimetype, compress_type=zipfile.ZIP_STORED)
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _epub() -> bytes:
    container = (
        '<?xml version="1.0"?><container version="1.0" '
        'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
        '<rootfile full-path="c.opf" media-type="application/oebps-package+xml"/>'
        "</rootfiles></container>"
    )
    opf = (
        '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
        '<metadata/><manifest><item id="a" href="a.xhtml" media-type="application/xhtml+xml"/>'
        '</manifest><spine><itemref idref="a"/></spine></package>'
    )
    page = f'<html xmlns="http://www.w3.org/1999/xhtml"><body><p>{SENTENCE}</p></body></html>'
    return _zip(
        "application/epub+zip",
        {"META-INF/container.xml": container, "c.opf": opf, "a.xhtml": page},
    )


def _odf(kind: str) -> bytes:
    ns = (
        'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
        'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
        'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
        'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"'
    )
    bodies = {
        "text": f"<office:text><text:p>{SENTENCE}</text:p></office:text>",
        "spreadsheet": (
            '<office:spreadsheet><table:table table:name="S"><table:table-row>'
            f"<table:table-cell><text:p>{SENTENCE}</text:p></table:table-cell>"
            "</table:table-row></table:table></office:spreadsheet>"
        ),
        "presentation": (
            '<office:presentation><draw:page draw:name="P"><draw:frame><draw:text-box>'
            f"<text:p>{SENTENCE}</text:p></draw:text-box></draw:frame></draw:page>"
            "</office:presentation>"
        ),
    }
    content = f"<office:document-content {ns}><office:body>{bodies[kind]}</office:body>"
    content += "</office:document-content>"
    return _zip(f"application/vnd.oasis.opendocument.{kind}", {"content.xml": content})


def _pdf() -> bytes:
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    page = canvas.Canvas(buffer)
    page.drawString(72, 720, SENTENCE)
    page.save()
    return buffer.getvalue()


def _notebook() -> str:
    cell = {"cell_type": "code", "source": [f"print('{SENTENCE}')"], "metadata": {},
            "outputs": [], "execution_count": None}  # fmt: skip
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def _docx() -> bytes:
    import docx

    buffer = io.BytesIO()
    document = docx.Document()
    document.add_paragraph(SENTENCE)
    document.save(buffer)
    return buffer.getvalue()


def _pptx() -> bytes:
    import pptx

    buffer = io.BytesIO()
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = SENTENCE
    deck.save(buffer)
    return buffer.getvalue()


def _xlsx() -> bytes:
    import openpyxl

    buffer = io.BytesIO()
    book = openpyxl.Workbook()
    book.active["A1"] = SENTENCE
    book.save(buffer)
    return buffer.getvalue()


MBOX = f"From a@b Mon Jan  1 00:00:00 2024\n\n{SENTENCE}\n"
COMMENT = f"// {SENTENCE}\n"
HASH_COMMENT = f"# {SENTENCE}\n"

# Smallest valid file per extension: the least a person could save and expect to find.
SAMPLES: dict[str, Callable[[], str | bytes]] = {
    **dict.fromkeys([".md", ".markdown", ".mdown", ".mkd", ".mdx"], lambda: SENTENCE),
    **dict.fromkeys([".txt", ".text", ".rst"], lambda: SENTENCE),
    ".org": lambda: SENTENCE,  # no heading, no #+TITLE
    **dict.fromkeys([".adoc", ".asciidoc"], lambda: SENTENCE),
    **dict.fromkeys([".texi", ".texinfo", ".txi"], lambda: SENTENCE),
    **dict.fromkeys(
        [".tex", ".ltx", ".latex"],
        lambda: "\\documentclass{article}\\begin{document}\\section{Bilby habitat}"
        f"{SENTENCE}\\end{{document}}",
    ),
    ".rtf": lambda: "{\\rtf1 " + SENTENCE + "}",
    ".epub": _epub,
    **dict.fromkeys([".odt", ".ott"], lambda: _odf("text")),
    **dict.fromkeys([".ods", ".ots"], lambda: _odf("spreadsheet")),
    **dict.fromkeys([".odp", ".otp"], lambda: _odf("presentation")),
    ".ipynb": _notebook,  # one code cell, nothing else
    ".eml": lambda: f"Subject: x\n\n{SENTENCE}\n",
    **dict.fromkeys([".mbox", ".mbx"], lambda: MBOX),
    ".csv": lambda: f"animal\n{SENTENCE}\n",  # one header, one row
    **dict.fromkeys([".tsv", ".tab"], lambda: f"animal\tnote\nbilby\t{SENTENCE}\n"),
    **dict.fromkeys([".py", ".pyi", ".pyw"], lambda: HASH_COMMENT),
    ".pdf": _pdf,
    **dict.fromkeys([".html", ".htm", ".xhtml"], lambda: f"<p>{SENTENCE}</p>"),
    ".docx": _docx,
    ".pptx": _pptx,
    ".xlsx": _xlsx,
    **dict.fromkeys(
        [".go", ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts", ".rs", ".java",
         ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".cs", ".php", ".kt", ".kts",
         ".swift", ".scala"],
        lambda: COMMENT,
    ),  # fmt: skip
    **dict.fromkeys(
        [".sh", ".bash", ".zsh", ".ksh", ".rb", ".mk", ".ini", ".cfg", ".yaml", ".yml", ".toml"],
        lambda: HASH_COMMENT,
    ),
    ".lua": lambda: f"-- {SENTENCE}\n",
    ".sql": lambda: f"-- {SENTENCE}\n",
    ".json": lambda: json.dumps({"note": SENTENCE}),
}
OFFICE = {".docx": "docx", ".pptx": "pptx", ".xlsx": "openpyxl"}


def _extensions() -> list[str]:
    return sorted({ext for fmt in FORMATS for ext in fmt.extensions})


def test_every_extension_has_a_sample():
    assert sorted(set(_extensions()) - set(SAMPLES)) == []


@pytest.mark.parametrize("extension", _extensions())
def test_smallest_file_is_a_document(tmp_path: Path, extension: str):
    if extension in OFFICE:
        pytest.importorskip("docling", reason="office formats need the docling extra")
        pytest.importorskip(OFFICE[extension], reason="writing the sample needs its library")
    if extension == ".pdf":
        pytest.importorskip("reportlab", reason="the PDF sample is written with reportlab")
    data = SAMPLES[extension]()
    path = tmp_path / f"smallest{extension}"
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    document = parse_file(path, ChunkSettings())
    text = " ".join(chunk.text for chunk in document.chunks).lower()
    assert WORD in text, f"{extension}: {[c.text for c in document.chunks]}"
