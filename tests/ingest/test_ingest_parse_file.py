from pathlib import Path

import pytest

import kb_search.formats.pdf.parse as pdf_module
from kb_search.chunking.tokens import count_tokens
from kb_search.ingest import SUPPORTED_EXTENSIONS, detect_type
from kb_search.ingest.parse import parse_file
from kb_search.parsed import ChunkSettings, IngestError, ParsedChunk, ParsedDocument

SETTINGS = ChunkSettings(max_tokens=60, min_tokens=10)


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def test_detect_type_by_extension_and_name(tmp_path):
    assert detect_type(Path("a/README.md")) == "markdown"
    assert detect_type(Path("notes.TXT")) == "text"
    assert detect_type(Path("doc.rst")) == "text"
    assert detect_type(Path("x.py")) == "code"
    assert detect_type(Path("main.go")) == "code"
    assert detect_type(Path("Makefile")) == "code"
    assert detect_type(Path("paper.pdf")) == "pdf"
    assert detect_type(Path("photo.png")) is None
    assert detect_type(write(tmp_path, "deploy", "#!/usr/bin/env bash\necho hi\n")) == "code"
    assert detect_type(write(tmp_path, "LICENSE", "MIT License\n")) == "text"  # any text
    assert {".md", ".py", ".go", ".pdf", ".txt"} <= SUPPORTED_EXTENSIONS
    assert ".png" not in SUPPORTED_EXTENSIONS


def test_routes_by_extension(tmp_path):
    assert parse_file(write(tmp_path, "a.md", "# Hi\n\ntext\n"), SETTINGS).doc_type == "markdown"
    assert parse_file(write(tmp_path, "a.txt", "hello\n"), SETTINGS).doc_type == "text"
    py = parse_file(write(tmp_path, "a.py", "def f():\n    return 1\n"), SETTINGS)
    assert (py.language, py.chunks[0].symbol) == ("python", "f")
    go = parse_file(write(tmp_path, "a.go", "package a\n\nfunc F() {}\n"), SETTINGS)
    assert (go.language, go.chunks[-1].symbol) == ("go", "F")


def test_shebang_sniffing_for_extensionless_scripts(tmp_path):
    script = write(tmp_path, "tool", "#!/usr/bin/env python3\ndef main():\n    pass\n")
    doc = parse_file(script, SETTINGS)
    assert doc.language == "python" and doc.chunks[-1].symbol == "main"
    shell = parse_file(write(tmp_path, "run", "#!/bin/bash\nup() {\n  echo\n}\n"), SETTINGS)
    assert shell.language == "bash" and shell.chunks[-1].symbol == "up"


def test_unknown_extension_with_text_is_text(tmp_path):
    doc = parse_file(write(tmp_path, "notes.weird", "just some words\n"), SETTINGS)
    assert doc.doc_type == "text" and doc.chunks[0].text == "just some words"


def test_binary_and_empty_files_raise(tmp_path):
    with pytest.raises(IngestError, match="binary"):
        parse_file(write(tmp_path, "blob.md", b"\x00\x01\x02abc"), SETTINGS)
    with pytest.raises(IngestError, match="empty file"):
        parse_file(write(tmp_path, "empty.py", ""), SETTINGS)
    with pytest.raises(IngestError, match="too large"):
        parse_file(write(tmp_path, "big.txt", "x" * 100), SETTINGS, max_bytes=10)


def test_front_matter_only_markdown_raises(tmp_path):
    with pytest.raises(IngestError, match="no indexable text"):
        parse_file(write(tmp_path, "fm.md", "---\ntitle: x\n---\n"), SETTINGS)


def test_pdf_routes_to_pdf_parser(tmp_path, monkeypatch):
    calls = []

    def fake_parse_pdf(path, settings, count=count_tokens, ocr="auto", ocr_later=False):
        calls.append((path, settings, count, ocr, ocr_later))
        return ParsedDocument(title="p", doc_type="pdf", chunks=[ParsedChunk("text")])

    monkeypatch.setattr(pdf_module, "parse_pdf", fake_parse_pdf)
    path = write(tmp_path, "paper.pdf", b"%PDF-1.4")
    assert parse_file(path, SETTINGS, ocr="never").doc_type == "pdf"
    assert parse_file(path, SETTINGS, ocr_later=True).doc_type == "pdf"
    assert calls == [
        (path, SETTINGS, count_tokens, "never", False),
        (path, SETTINGS, count_tokens, "auto", True),
    ]


def test_every_chunk_is_complete_and_within_budget(tmp_path):
    long_md = "# T\n\n" + "\n\n".join(f"Paragraph {i} " + "word " * 30 for i in range(12))
    files = {
        "a.md": long_md,
        "b.txt": "\n\n".join("sentence " * 25 for _ in range(8)),
        "c.py": "\n\n".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(20)),
        "d.js": "\n".join(f"function f{i}() {{ return {i}; }}" for i in range(40)),
        "e.json": "{\n" + ",\n".join(f'  "k{i}": {i}' for i in range(100)) + "\n}\n",
    }
    for name, content in files.items():
        doc = parse_file(write(tmp_path, name, content), SETTINGS)
        assert doc.chunks, name
        for chunk in doc.chunks:
            assert chunk.text.strip(), name
            # A chunk's count is the sum of its parts' (exact for the model's tokenizer, an
            # upper bound for the estimate, which rounds each part up).
            assert count_tokens(chunk.text) <= chunk.token_count <= SETTINGS.max_tokens, name
            assert 1 <= chunk.line_start <= chunk.line_end <= content.count("\n") + 1, name
