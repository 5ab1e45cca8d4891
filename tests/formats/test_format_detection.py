"""Which format a file is: by name and extension, and by its first bytes when those say
nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb_search.formats.registry import format_for, sniff_extension
from kb_search.ingest import SUPPORTED_EXTENSIONS, detect_type
from kb_search.ingest.parse import parse_file
from kb_search.parsed import ChunkSettings

BY_NAME = {
    "book.epub": "epub", "letter.odt": "odt", "sheet.ods": "ods", "talk.odp": "odp",
    "memo.rtf": "rtf", "analysis.ipynb": "notebook", "mail.eml": "email",
    "inbox.mbox": "email", "notes.org": "org", "paper.tex": "latex", "guide.adoc": "asciidoc",
    "guide.asciidoc": "asciidoc", "data.csv": "csv", "data.tsv": "csv", "config.json": "code",
    "values.yaml": "code", "values.yml": "code", "pyproject.toml": "code",
}  # fmt: skip


@pytest.mark.parametrize(("name", "doc_type"), sorted(BY_NAME.items()))
def test_extensions(name, doc_type):
    assert detect_type(Path(name), sniff=False) == doc_type
    assert Path(name).suffix in SUPPORTED_EXTENSIONS


def test_config_formats_keep_their_language():
    assert format_for(Path("a.json")).language == "json"
    assert format_for(Path("a.yml")).language == "yaml"
    assert format_for(Path("a.toml")).language == "toml"


MAIL = "Return-Path: <ann@example.org>\nFrom: Ann <ann@example.org>\nTo: bob@example.org\n"
SNIFFED = {
    "paper": (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "pdf"),
    "memo": (b"{\\rtf1\\ansi Hello}", "rtf"),
    "Inbox": (b"From ann@example.org Tue Mar  5 10:15:00 2024\nSubject: hi\n\nbody\n", "email"),
    "message": ((MAIL + "Subject: hi\n\nHello Bob\n").encode(), "email"),
    "settings": (b'  {\n  "name": "kb"\n}\n', "code"),
    "list": (b"[1, 2, 3]\n", "code"),
    "thesis": (b"% !TEX program = pdflatex\n\\documentclass{report}\n", "latex"),
    "todo": (b"#+TITLE: Things to do\n* Buy milk\n", "org"),
    # GnuPG's HACKING and DETAILS: Org by their Emacs mode line (old code: plain text, titled
    # by the mode line, their `* ` headings lost)
    "HACKING": (b"# HACKING          -*- org -*-\n#+TEXT: notes\n* How to contribute\n", "org"),
    "NOTES": (b"-*- mode: org; coding: utf-8 -*-\n* Garden\n", "org"),
    "page": (b"<!DOCTYPE html><html><body><p>x</p></body></html>", "html"),
    "deploy": (b"#!/usr/bin/env bash\necho hi\n", "code"),
    # A Maildir file name: its "suffix" is no extension.
    "1700000000.M1P2.host,S=1234:2,S": ((MAIL + "\nbody\n").encode(), "email"),
}


@pytest.mark.parametrize("name", sorted(SNIFFED))
def test_content_sniffing_when_the_name_says_nothing(tmp_path, name):
    data, doc_type = SNIFFED[name]
    path = tmp_path / name
    path.write_bytes(data)
    assert detect_type(path) == doc_type
    assert detect_type(path, sniff=False) is None


@pytest.mark.parametrize(
    "text",
    [
        "MIT License\n\nCopyright (c) 2024\n",
        "[1] Smith, J. A paper.\n",  # a reference list, not JSON
        "Subject: one header is not a mail\n\nhello\n",
        "From the desk of Ann\n",  # prose, not an mbox From_ line
        "Note: this line has a colon\nAnd this: too\n",
        "# TODO          -*- outline -*-\n* src/base64\n",  # outline mode is not Org
        "The org -*- chart -*- of the team\n",
    ],
)
def test_plain_text_is_not_mistaken_for_a_format(tmp_path, text):
    path = tmp_path / "README"
    path.write_text(text)
    assert detect_type(path) == "text"  # text without a format of its own: plain text
    assert parse_file(path, ChunkSettings()).doc_type == "text"


def test_an_extension_is_trusted_over_content(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text(MAIL + "Subject: hi\n\nHello\n")
    assert detect_type(path) == "text"  # a .txt that is really a mail stays text


def test_binary_files_without_extension_are_unknown(tmp_path):
    path = tmp_path / "blob"
    path.write_bytes(bytes(range(256)) * 4)
    assert detect_type(path) is None
    assert sniff_extension(b"PK\x03\x04" + bytes(40)) is None  # a zip of unknown kind


def test_sniffing_reads_only_the_head(tmp_path, monkeypatch):
    from kb_search.formats import registry

    path = tmp_path / "big"
    path.write_bytes(b"%PDF-1.4\n" + b"x" * 5_000_000)
    reads: list[int] = []
    real_read = registry.read_document

    def counting_read(where, limit=None):
        data = real_read(where, limit)
        reads.append(len(data))
        return data

    monkeypatch.setattr(registry, "read_document", counting_read)
    assert detect_type(path) == "pdf"
    assert reads and all(0 < size <= 8192 for size in reads)


def test_a_sniffed_file_is_parsed_by_its_format(tmp_path):
    path = tmp_path / "message"
    path.write_bytes((MAIL + "Subject: Lunch plans\n\nPizza on Friday.\n").encode())
    document = parse_file(path, ChunkSettings())
    assert document.doc_type == "email"
    assert document.title == "Lunch plans"
    path = tmp_path / "settings"
    path.write_text('{"server": {"port": 8080}}')
    document = parse_file(path, ChunkSettings())
    assert (document.doc_type, document.language) == ("code", "json")


def test_a_file_with_an_unknown_extension_is_sniffed(tmp_path):
    path = tmp_path / "message.out"
    path.write_bytes((MAIL + "Subject: Saved mail\n\nHello.\n").encode())
    assert detect_type(path) == "email"  # in a folder as when named: one classification
    assert parse_file(path, ChunkSettings()).doc_type == "email"
    script = tmp_path / "deploy.v2"
    script.write_text("#!/bin/sh\necho hi\n")
    assert parse_file(script, ChunkSettings()).language == "bash"
