"""Any file contents (random bytes, broken encodings, deep Markdown/HTML structure, giant
lines) under any text-ish name: parsed into chunks that keep the chunker's invariants or
refused with one line, and ingested without breaking the database."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from chunk_invariants import check_document
from fuzz_invariants import check_error_text, check_kb_error
from fuzz_kb import make_kb
from fuzz_strategies import SUFFIXES, document_bytes, markdown_document
from hypothesis import example, given
from hypothesis import strategies as st

from kb_search.chunking.tokens import count_tokens
from kb_search.doctor import storage_checks
from kb_search.errors import KbError
from kb_search.formats.markdown import front_matter
from kb_search.ingest.parse import parse_file
from kb_search.parsed import ChunkSettings

SETTINGS = ChunkSettings(max_tokens=64, min_tokens=12)
# The consistency checks; chunk_quality judges the user's text (a 300 KB line of one word is
# junk by design), not the file.
CONSISTENCY = {"sqlite", "schema", "integrity_check", "fts_in_sync", "chunk_counts",
               "vectors_in_sync"}  # fmt: skip
_serial = itertools.count()


def parse_or_refuse(path: Path):
    try:
        return parse_file(path, SETTINGS)
    except KbError as exc:
        check_kb_error(exc)
        return None
    except Exception as exc:  # noqa: BLE001 - anything else is a parser crash
        check_kb_error(exc)


def check_chunks(document, settings: ChunkSettings) -> None:
    assert 0 < len(document.chunks) <= settings.max_chunks
    for chunk in document.chunks:
        assert chunk.text.strip()
        chunk.text.encode("utf-8")
        (chunk.heading or "").encode("utf-8")
        assert chunk.token_count <= settings.max_tokens
        assert len(chunk.text) <= settings.char_limit
        if chunk.line_start is not None:
            assert 1 <= chunk.line_start <= (chunk.line_end or chunk.line_start)
    document.title.encode("utf-8")


@given(content=document_bytes, suffix=st.sampled_from(SUFFIXES))
@example(content=b"\xff\xfe\x00", suffix=".md")
@example(content=b"# a\n\n```\n" + b"x" * 50_000, suffix=".md")
@example(content=b"---\na: &a [*a, *a, *a]\n---\n# T\n\nbody\n", suffix=".md")
def test_any_file_parses_or_is_refused_in_one_line(tmp_path, content, suffix):
    path = tmp_path / f"f{next(_serial)}{suffix}"
    path.write_bytes(content)
    document = parse_or_refuse(path)
    if document is not None:
        check_chunks(document, SETTINGS)


@given(text=markdown_document(hostile=False), suffix=st.sampled_from([".md", ".txt"]))
def test_markdown_structure_keeps_the_chunk_invariants(tmp_path, text, suffix):
    """The chunker's invariants (tests/chunking/chunk_invariants.py) on random structure; the
    hostile shapes (unclosed fences, words longer than a chunk) are in the crash tests."""
    path = tmp_path / f"m{next(_serial)}{suffix}"
    path.write_text(text, encoding="utf-8", newline="")
    document = parse_or_refuse(path)
    if document is None:
        return
    check_chunks(document, SETTINGS)
    if "\r" in text or len(document.chunks) >= SETTINGS.max_chunks:
        return  # line numbers count \r\n as one break; a capped document drops its tail
    markdown = suffix == ".md"
    lines = text.split("\n")
    body_start = front_matter(lines)[1] if markdown else 0
    check_document(document, text, SETTINGS, count_tokens, body_start, markdown)


@pytest.fixture(scope="module")
def ingest_kb(tmp_path_factory):
    root = tmp_path_factory.mktemp("ingest")
    (root / "files").mkdir()
    with make_kb(root, KB_CHUNK_MAX_TOKENS="64", KB_CHUNK_MIN_TOKENS="12") as kb:
        yield kb, root / "files"


@given(content=document_bytes, suffix=st.sampled_from(SUFFIXES))
def test_any_file_ingests_and_the_database_stays_consistent(ingest_kb, content, suffix):
    kb, folder = ingest_kb
    path = folder / f"d{next(_serial)}{suffix or '.txt'}"
    path.write_bytes(content)
    summary = kb.add([path])
    assert summary.added + len(summary.failed) + summary.skipped + summary.empty == 1, summary
    for failure in summary.failed:
        check_error_text(failure.reason)
    checks = {c.name: c for c in storage_checks(kb.writer())}
    bad = [f"{n}: {checks[n].detail}" for n in CONSISTENCY if not checks[n].ok]
    assert not bad, bad
