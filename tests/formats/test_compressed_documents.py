"""Documents stored compressed (Debian's `README.gz`, `changelog.Debian.gz`, a `manual.pdf.gz`)
are read as the file inside, named by the name without the suffix; a bomb stops at its limit."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
from pathlib import Path

import pytest
from tests.pdf_samples import body, lines_of, words, write_pdf

from kb_search.formats import compressed
from kb_search.formats.reader import open_document, read_document, read_text_file
from kb_search.formats.registry import UNSUPPORTED, classify
from kb_search.parsed import IngestError

NEWS = "Release 4.2\n\nThe marmalade option now sorts entries by their quince value.\n"


def gz(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data))
    return path


@pytest.mark.parametrize(
    "name, data, doc_type, language",
    [
        ("NEWS.gz", NEWS.encode(), "text", None),
        ("changelog.Debian.gz", NEWS.encode(), "text", None),
        ("guide.md.gz", b"# Guide\n\nSome words.\n", "markdown", None),
        ("index.html.gz", b"<html><body><h1>Hi</h1><p>words</p></body></html>", "html", None),
        ("check.sh.gz", b"#!/bin/sh\necho hi\n", "code", "bash"),
        ("tool.py.gz", b"def f():\n    return 1\n", "code", "python"),
    ],
)
def test_a_compressed_file_has_the_format_of_the_file_inside(
    tmp_path, name, data, doc_type, language
):
    verdict = classify(gz(tmp_path / name, data))
    assert verdict.left_out is None and verdict.format is not None
    assert (verdict.format.doc_type, verdict.format.language) == (doc_type, language)


@pytest.mark.parametrize(
    "name, data",
    [
        ("refcard.ps.gz", b"%!PS-Adobe-2.0\n%%Pages: 2\n/Times-Roman findfont\n" * 20),
        ("refcard.dvi.gz", bytes([0xF7, 2, 1, 0x83, 0x92, 0xC0, 0x1C, 0x3B, 0]) + bytes(300)),
        ("sources.tar.gz", b"src/a.c" + bytes(100) + b"0000644\x00" + bytes(400)),
        ("book.epub.gz", b"PK\x03\x04" + bytes(26) + b"mimetypeapplication/epub+zip"),
        ("notes.txt.gz.part", b"not a document"),
    ],
)
def test_compressed_programs_archives_and_containers_are_unsupported(tmp_path, name, data):
    path = gz(tmp_path / name, data)
    assert classify(path).left_out == UNSUPPORTED


def test_postscript_is_not_read_as_text(tmp_path):
    plain = tmp_path / "card.out"
    plain.write_bytes(b"%!PS-Adobe-3.0\n/Helvetica findfont 12 scalefont setfont\n" * 10)
    assert classify(plain).left_out == UNSUPPORTED
    assert classify(tmp_path / "refcard.ps").left_out == UNSUPPORTED


@pytest.mark.parametrize("suffix, pack", [(".bz2", bz2.compress), (".xz", lzma.compress)])
def test_bzip2_and_xz_read_as_gzip_does(tmp_path, suffix, pack):
    path = tmp_path / f"README{suffix}"
    path.write_bytes(pack(NEWS.encode()))
    assert classify(path).format.doc_type == "text"
    assert read_text_file(path) == NEWS


def test_a_bomb_stops_at_the_limit_and_a_broken_stream_is_a_one_line_error(tmp_path):
    bomb = gz(tmp_path / "big.txt.gz", b"a" * 5_000_000)
    assert bomb.stat().st_size < 20_000
    with pytest.raises(compressed.BadCompressedFile, match="inflates to more than 1 MB"):
        open_document(bomb, limit=1_000_000)
    with pytest.raises(IngestError, match="inflates to more than 2 MB"):
        read_text_file(bomb, max_bytes=2_000_000)
    broken = tmp_path / "cut.txt.gz"
    broken.write_bytes(gzip.compress(NEWS.encode() * 50)[:40])
    with pytest.raises(IngestError, match="cannot read file: broken compressed file"):
        read_text_file(broken)
    with pytest.raises(compressed.BadCompressedFile):
        read_document(broken, 100)
    assert classify(broken).left_out == UNSUPPORTED  # in a folder: of no type kb reads
    wrong = tmp_path / "notes.bz2"
    wrong.write_text("not bzip2 at all\n")
    assert classify(wrong).left_out == UNSUPPORTED


def test_sniffing_reads_a_bounded_prefix_of_a_hostile_stream(tmp_path):
    """A gzip name field with no NUL consumes input without giving output: a sniff stops at
    HEAD_INPUT compressed bytes however long the field runs."""
    hostile = tmp_path / "x.gz"
    hostile.write_bytes(b"\x1f\x8b\x08\x08" + bytes(6) + b"A" * (3 * compressed.HEAD_INPUT))
    reads: list[int] = []

    class Counting(io.BytesIO):
        def read(self, size=-1):
            data = super().read(size)
            reads.append(len(data))
            return data

    head = compressed.inflated_head(Counting(hostile.read_bytes()), hostile, 8192)
    assert head == b"" and sum(reads) <= compressed.HEAD_INPUT


def test_names_inside_decide_titles_and_suffix_rules(kb, tmp_path):
    """`notes.md.gz` is titled `notes` (not `notes.md`); `table.tsv.gz` is split on tabs."""
    folder = tmp_path / "docs"
    gz(folder / "notes.md.gz", b"Plain words about the kumquat harvest.\n")
    gz(folder / "table.tsv.gz", b"fruit\tseason\nkumquat\twinter\nfig\tsummer\n")
    gz(folder / "guide.rst.gz", b"Guide\n=====\n\nPrune the kumquat.\n\nLater\n-----\n\nFigs.\n")
    kb("add", str(folder))
    hits = kb.json("search", "kumquat", "--mode", "lexical", "--top", "5")["results"]
    titles = {Path(r["source"]["path"]).name: r["source"]["title"] for r in hits}
    assert titles["notes.md.gz"] == "notes"
    assert titles["table.tsv.gz"] == "table"
    assert titles["guide.rst.gz"] == "Guide"
    table = next(r for r in hits if r["source"]["path"].endswith("table.tsv.gz"))
    assert "kumquat | winter" in table["text"] or "season: winter" in table["text"], table["text"]


def test_a_gzipped_folder_is_indexed_and_searchable(kb, tmp_path):
    """Old code: every `.gz` of a Debian doc folder was an unsupported type (40 of 332 files)."""
    folder = tmp_path / "doc" / "quince"
    gz(folder / "NEWS.gz", NEWS.encode())
    gz(folder / "guide.md.gz", b"# Pruning\n\nCut the persimmon shoots in late winter.\n")
    pdf = write_pdf(tmp_path / "manual.pdf", [body(lines_of(words(60, "walrus")))])
    gz(folder / "manual.pdf.gz", pdf.read_bytes())
    pdf.unlink()
    gz(folder / "refcard.ps.gz", b"%!PS-Adobe-2.0\n/Times-Roman findfont\n" * 10)
    summary = kb.json("add", str(folder))
    assert (summary["added"], summary["unsupported"], summary["failed"]) == (3, 1, [])
    for query, name, doc_type in [
        ("marmalade quince", "NEWS.gz", "text"),
        ("persimmon shoots", "guide.md.gz", "markdown"),
        ("walrus0", "manual.pdf.gz", "pdf"),
    ]:
        hit = kb.json("search", query, "--mode", "lexical")["results"][0]
        assert Path(hit["source"]["path"]).name == name
        assert hit["source"]["type"] == doc_type
    assert kb.json("add", str(folder))["skipped"] == 3  # unchanged files are not read again


def test_a_compressed_log_is_left_out_as_a_log(tmp_path):
    """gdb's `check.log.gz` (a test run's output) became 5,000 chunks of a 332-file folder."""
    log = gz(tmp_path / "check.log.gz", b"Running gdb.base/break.exp ...\nPASS: gdb.base\n" * 50)
    assert classify(log).left_out == "log"
    assert classify(log, include_generated=True).left_out is None


@pytest.mark.parametrize("name", ["NEWS.gz", "app.js.gz", "guide.md.gz"])
def test_classifying_a_compressed_file_inflates_its_head_once(tmp_path, monkeypatch, name):
    calls = []
    real = compressed.inflated_head

    def counting(handle, path, size):
        calls.append(size)
        return real(handle, path, size)

    monkeypatch.setattr(compressed, "inflated_head", counting)
    verdict = classify(gz(tmp_path / name, NEWS.encode()))
    assert verdict.left_out is None
    assert len(calls) == 1


def test_a_compressed_text_is_inflated_in_memory_not_through_a_temp_file(tmp_path, monkeypatch):
    path = gz(tmp_path / "NEWS.gz", NEWS.encode())

    def no_temp_file(*args, **kwargs):
        raise AssertionError("a text document went through a temp file")

    monkeypatch.setattr(compressed.tempfile, "TemporaryFile", no_temp_file)
    assert read_text_file(path) == NEWS
    assert read_document(path) == NEWS.encode()
