from kb_search.parsed import ParsedChunk, ParsedDocument
from kb_search.store.documents import DocumentRecord, delete_document, rebuild_fts, write_document


def doc(*texts: str, title: str = "Doc", tags=()) -> ParsedDocument:
    chunks = [
        ParsedChunk(text=t, line_start=i + 1, line_end=i + 1, token_count=3)
        for i, t in enumerate(texts)
    ]
    return ParsedDocument(title=title, doc_type="text", chunks=chunks, tags=list(tags))


def fts_ids(conn, term: str) -> list[int]:
    rows = conn.execute(
        "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rowid", (f'"{term}"',)
    )
    return [r[0] for r in rows]


def test_write_then_rewrite_keeps_id_and_fts_in_step(conn):
    rec = DocumentRecord(path="/x/a.txt", rel_path="x/a.txt", content_hash="h1")
    doc_id = write_document(conn, rec, doc("alpha beta", "gamma"), user_tags=["mine"])
    assert len(fts_ids(conn, "alpha")) == 1
    rec.content_hash = "h2"
    again = write_document(conn, rec, doc("delta", title="New"))
    assert again == doc_id
    assert fts_ids(conn, "alpha") == []
    assert len(fts_ids(conn, "delta")) == 1
    assert conn.execute("SELECT title, chunk_count FROM documents").fetchall() == [("New", 1)]
    tags = conn.execute(
        "SELECT t.name, dt.source FROM document_tags dt JOIN tags t ON t.id = dt.tag_id"
    ).fetchall()
    assert tags == [("mine", "user")]
    conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")


def test_delete_cascades(conn):
    rec = DocumentRecord(path="/x/a.txt", rel_path="x/a.txt", content_hash="h1")
    doc_id = write_document(conn, rec, doc("alpha", "東京タワー"), user_tags=["t"])
    assert delete_document(conn, doc_id)
    assert not delete_document(conn, doc_id)
    for table in ("documents", "chunks", "document_tags", "tags"):
        assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0
    assert fts_ids(conn, "alpha") == []
    conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
    conn.execute("INSERT INTO chunks_cjk(chunks_cjk, rank) VALUES ('integrity-check', 1)")


def test_title_and_path_are_indexed(conn):
    rec = DocumentRecord(path="/x/zebra-notes.txt", rel_path="x/zebra-notes.txt", content_hash="h")
    write_document(conn, rec, doc("body text", title="Quagga handbook"))
    assert len(fts_ids(conn, "quagga")) == 1
    assert len(fts_ids(conn, "zebra")) == 1


def test_rebuild_fts(conn):
    rec = DocumentRecord(path="/x/a.txt", rel_path="a.txt", content_hash="h")
    write_document(conn, rec, doc("alpha", "東京タワーの夜景"))
    rebuild_fts(conn)
    assert len(fts_ids(conn, "alpha")) == 1
    rows = conn.execute(
        "SELECT rowid FROM chunks_cjk WHERE chunks_cjk MATCH '\"タワー\"'"
    ).fetchall()
    assert len(rows) == 1


def test_lone_surrogates_are_scrubbed_and_a_bad_write_does_not_stop_the_batch(conn):
    from kb_search.formats.reader import scrub_document
    from kb_search.ingest.batch_writer import BatchWriter

    bad = doc("broken \udc80 text", title="t\ud800")
    assert scrub_document(doc("broken \udc80 text")).chunks[0].text == "broken \ufffd text"
    failures = []
    writer = BatchWriter(conn, on_error=lambda record, reason: failures.append(record.path))
    writer.add(DocumentRecord(path="/x/bad.txt", rel_path="bad.txt", content_hash="1"), bad)
    writer.add(DocumentRecord(path="/x/ok.txt", rel_path="ok.txt", content_hash="2"), doc("fine"))
    assert failures == ["/x/bad.txt"]
    assert [r[0] for r in conn.execute("SELECT path FROM documents")] == ["/x/ok.txt"]
    conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")


def test_connect_traces_every_statement():
    from kb_search.store import db

    seen: list[str] = []
    conn = db.connect(":memory:", trace=seen.append)
    conn.execute("SELECT count(*) FROM documents").fetchone()
    conn.close()
    assert any(s.startswith("PRAGMA") for s in seen)  # from the first: configure, migrate
    assert any(s.startswith("CREATE TABLE documents") for s in seen)
    assert seen[-1] == "SELECT count(*) FROM documents"


def test_kb_trace_sql_prints_each_statement_on_stderr(kb, environment, sample):
    quiet = kb("add", str(sample), "--format", "json")
    assert "sql: " not in quiet.stderr
    environment.env["KB_TRACE_SQL"] = "1"
    traced = kb("search", "deploy", "--mode", "lexical", "--format", "json")
    lines = traced.stderr.splitlines()
    assert any(line.startswith("sql: SELECT") and "chunks_fts" in line for line in lines)
    assert all("\x1b" not in line for line in lines)
    assert "sql: " not in traced.stdout  # the JSON answer stays clean


def test_an_index_of_the_last_schema_gains_the_navigation_mark(tmp_path):
    """Migration 7: chunks written before it read as content; new ones keep their mark."""
    from kb_search.store import db, records
    from kb_search.store.migrations import MIGRATIONS

    path = tmp_path / "kb.db"
    old = db.sqlite.connect(str(path), isolation_level=None)
    for script in MIGRATIONS[:4]:
        for statement in script:
            old.execute(statement)
    old.execute("PRAGMA user_version = 4")
    old.execute(
        "INSERT INTO documents(path, rel_path, title, doc_type, content_hash, indexed_at)"
        " VALUES ('/x/old.pdf', 'old.pdf', 'Old', 'pdf', 'h', 0)"
    )
    old.execute(
        "INSERT INTO chunks(document_id, chunk_index, text, token_count, content_hash)"
        " VALUES (1, 0, 'Contents 1 Intro … 2', 4, 'c')"
    )
    old.close()
    conn = db.connect(path)
    assert db.schema_version(conn) == len(MIGRATIONS)
    rec = DocumentRecord(path="/x/new.pdf", rel_path="new.pdf", content_hash="n")
    marked = ParsedChunk(text="Index alpha … 3", page_start=9, token_count=3, navigation=True)
    write_document(conn, rec, ParsedDocument(title="New", doc_type="pdf", chunks=[marked]))
    stored = records.chunks_by_id(conn, [1, 2])
    assert (stored[1].navigation, stored[2].navigation) == (0, 1)
    conn.close()
