"""`kb doctor`'s chunk_quality check: junk an older chunker left in the index is reported
with counts and citations, as a warning that names the fix (`kb sync`), never a failure; what
the current chunker makes of the same shapes passes."""

from __future__ import annotations

from pathlib import Path

from kb_search.doctor import Check, run_checks
from kb_search.formats.markdown import parse_markdown
from kb_search.parsed import ChunkSettings, ParsedChunk, ParsedDocument
from kb_search.store.documents import DocumentRecord, write_document

SEPARATOR = "|" + "-" * 14 + "|" + "-" * 170 + "|"


def store(conn, rel_path: str, texts: list[str], doc_type: str = "markdown", line=None) -> None:
    chunks = [
        ParsedChunk(text=t, line_start=line or i + 1, line_end=line or i + 1, token_count=5)
        for i, t in enumerate(texts)
    ]
    document = ParsedDocument(title=rel_path, doc_type=doc_type, chunks=chunks)
    record = DocumentRecord(path=f"/kb/{rel_path}", rel_path=rel_path, content_hash=rel_path)
    write_document(conn, record, document)


def quality(conn) -> Check:
    return next(c for c in run_checks(conn) if c.name == "chunk_quality")


def test_what_the_chunker_makes_of_a_wide_table_passes(conn):
    rows = [f"| `Hook{i}` | Executes step {i} of the sync operation. |" for i in range(80)]
    text = "\n".join(["# Sync Phases and Waves", "", "| Hook | Description |", SEPARATOR, *rows])
    document = parse_markdown(text, Path("sync-waves.md"), ChunkSettings())
    assert len(document.chunks) > 3
    record = DocumentRecord(path="/kb/sync-waves.md", rel_path="sync-waves.md", content_hash="h")
    write_document(conn, record, document)
    store(conn, "tiny.md", ["ok"])  # a whole tiny document is not junk
    check = quality(conn)
    assert check.ok, check.detail


def test_table_junk_of_the_old_chunker_is_reported_with_citations(conn):
    header = f"# Sync Phases and Waves\n\n| Hook | Description |\n{SEPARATOR}\n"
    store(conn, "docs/sync-waves.md", [header + f"| {c}" for c in "Executes prior to"], line=12)
    check = quality(conn)
    assert check.ok and check.warning
    assert "17 chunks of almost no words, e.g. docs/sync-waves.md#L12" in check.detail
    assert "1 line ranges cut into 20+ chunks" not in check.detail  # 17 < 20
    store(conn, "docs/helm.md", [header + f"| {c}" for c in "x" * 25], line=7)
    assert "docs/helm.md#L7 (25 chunks)" in quality(conn).detail


def test_heading_only_chunks_are_reported_but_code_comments_are_not(conn):
    body = "Argo CD can pull Helm charts from OCI registries with credentials. " * 3
    store(conn, "docs/oci.md", ["# OCI", f"## Pulling\n\n{body}"])
    store(
        conn,
        "src/app.py",
        ["# comment about the module and what it does", "def run(): pass"],
        "code",
    )
    check = quality(conn)
    assert check.warning
    assert "1 heading-only chunks, e.g. docs/oci.md#L1" in check.detail
    assert "app.py" not in check.detail


def test_comment_blocks_of_a_script_read_as_text_are_not_heading_only(conn):
    """lsof's Perl examples are read as text: the old check took their `#` comment blocks
    for Markdown headings ("15 heading-only chunks, e.g. .../identd.pl#L7-L16")."""
    comments = "\n".join(f"#   option {n}: what it does to the ident server" for n in range(8))
    code = "use strict;\nuse Socket;\n" + "print STDERR 'lsof answered the query';\n" * 4
    store(conn, "examples/identd.pl", [comments, code], "text")
    check = quality(conn)
    assert check.ok and not check.warning, check.detail


def test_code_is_not_judged_by_its_words_but_by_its_line_ranges(conn):
    store(conn, "src/a.py", ["def handle(request): return respond(request)", "}"], "code")
    assert quality(conn).ok
    store(conn, "dist/app.min.js", ["var a=1" for _ in range(30)], "code", line=1)
    assert "dist/app.min.js#L1 (30 chunks)" in quality(conn).detail


def test_a_table_of_figures_is_not_junk(conn):
    figures = "\n".join(f"| {i} | {i * 7} | {i * 13} |" for i in range(20))
    store(
        conn,
        "report.pdf",
        ["Totals by region for the year, in thousands of units sold", figures],
        "pdf",
    )
    assert quality(conn).ok


def test_junk_the_current_chunker_made_is_a_warning_with_advice(conn):
    """A fresh index never fails doctor: re-adding would make the same pieces."""
    from kb_search.ingest.changes import CHUNKER_VERSION

    header = f"# Sync Phases and Waves\n\n| Hook | Description |\n{SEPARATOR}\n"
    chunks = [ParsedChunk(text=header + f"| {c}", line_start=12, line_end=12) for c in "abc"]
    document = ParsedDocument(title="t", doc_type="markdown", chunks=chunks)
    record = DocumentRecord(
        path="/kb/t.md", rel_path="t.md", content_hash="t", chunking=f"v{CHUNKER_VERSION}:200"
    )
    write_document(conn, record, document)
    check = quality(conn)
    assert check.ok and check.warning
    assert "3 chunks of almost no words, e.g. t.md#L12" in check.detail
    assert ".kbignore" in check.detail and "re-chunk" not in check.detail


def test_junk_an_older_kb_left_after_an_upgrade_is_a_warning_that_names_the_fix(conn):
    """Upgrading kb must not make `kb doctor` fail on what the old chunker made: the outcome
    is the files_in_sync warning's wording, with `kb sync` named (the old code failed)."""
    header = f"# Sync Phases and Waves\n\n| Hook | Description |\n{SEPARATOR}\n"
    store(conn, "docs/sync-waves.md", [header + f"| {c}" for c in "Executes"], line=12)
    store(conn, "docs/oci.md", ["# OCI", "## Pulling\n\n" + "Helm charts from registries. " * 5])
    store(conn, "docs/fine.md", ["Argo CD syncs applications from Git repositories. " * 3] * 2)
    checks = run_checks(conn)
    assert all(c.ok for c in checks if c.name != "vectors_in_sync"), checks
    check = next(c for c in checks if c.name == "chunk_quality")
    assert check.warning
    assert check.detail.startswith("2 files chunked by an older kb: run `kb sync` (")
    assert "8 chunks of almost no words, e.g. docs/sync-waves.md#L12" in check.detail
