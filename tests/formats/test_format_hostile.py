"""Hostile and broken inputs: one-line IngestError or a bounded parse, never a hang."""

from __future__ import annotations

import time
import zipfile
from pathlib import Path

import pytest

from kb_search.ingest.parse import parse_file
from kb_search.parsed import ChunkSettings, IngestError


def entity_bomb() -> str:
    entities = ['<!ENTITY lol0 "lol">'] + [
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)
    ]
    return f'<?xml version="1.0"?><!DOCTYPE x [{"".join(entities)}]><x>&lol9;</x>'


def test_xml_entity_expansion_in_an_odt_is_refused(tmp_path):
    path = tmp_path / "laughs.odt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        archive.writestr("content.xml", entity_bomb())
    with pytest.raises(IngestError, match="content.xml is not valid XML") as caught:
        parse_file(path, ChunkSettings())
    assert "\n" not in str(caught.value)


def test_yaml_alias_bomb_is_not_expanded(tmp_path):
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]"
              for i in range(8)]  # fmt: skip
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lines) + "\n")
    started = time.perf_counter()
    document = parse_file(path, ChunkSettings(max_tokens=40, min_tokens=1))
    assert time.perf_counter() - started < 5
    assert sum(len(c.text) for c in document.chunks) <= path.stat().st_size


def test_deeply_nested_json_falls_back_to_line_chunks(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    document = parse_file(path, ChunkSettings())
    assert document.metadata["parse_error"] == "invalid JSON"


def test_unterminated_csv_quote_is_one_line_error(tmp_path):
    path = tmp_path / "broken.csv"
    path.write_text('name,notes\nann,"' + "never closed " * 100_000 + "\n")
    with pytest.raises(IngestError, match="broken CSV near line 2") as caught:
        parse_file(path, ChunkSettings())
    assert "\n" not in str(caught.value)


def test_truncated_notebook_and_mbox_do_not_crash(tmp_path):
    notebook = tmp_path / "cut.ipynb"
    notebook.write_text('{"cells": [{"cell_type": "code", "source": "x = 1", "outp')
    with pytest.raises(IngestError, match="broken notebook"):
        parse_file(notebook, ChunkSettings())
    mbox = tmp_path / "cut.mbox"
    mbox.write_bytes(b"From a@b Tue Mar  5 10:15:00 2024\nSubject: cut\nContent-Type: multipart/mi")
    document = parse_file(mbox, ChunkSettings())
    assert document.chunks[0].heading == "cut"


def test_a_big_archive_member_count_is_refused(tmp_path: Path):
    path = tmp_path / "many.epub"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
        for i in range(20_001):
            archive.writestr(f"x/{i}", b"")
    with pytest.raises(IngestError, match="more than 20000 archive members"):
        parse_file(path, ChunkSettings())
