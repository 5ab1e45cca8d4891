"""Numbered schema migrations; MIGRATIONS[n-1] takes a file from user_version n-1 to n.

Never edit a released migration: append a new one.
"""

from __future__ import annotations

MIGRATION_1 = (
    """CREATE TABLE IF NOT EXISTS meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )""",
    # Roots remembered by `kb add` so that `kb sync` can rescan them.
    """CREATE TABLE roots (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,
        added_at REAL NOT NULL
    )""",
    """CREATE TABLE documents (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,
        rel_path TEXT NOT NULL,
        title TEXT NOT NULL,
        doc_type TEXT NOT NULL,
        language TEXT,
        content_hash TEXT NOT NULL,
        size INTEGER NOT NULL DEFAULT 0,
        mtime REAL NOT NULL DEFAULT 0,
        page_count INTEGER,
        metadata TEXT NOT NULL DEFAULT '{}',
        chunk_count INTEGER NOT NULL DEFAULT 0,
        indexed_at REAL NOT NULL
    )""",
    "CREATE INDEX documents_type ON documents(doc_type)",
    "CREATE INDEX documents_hash ON documents(content_hash)",
    """CREATE TABLE chunks (
        id INTEGER PRIMARY KEY,
        document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        chunk_index INTEGER NOT NULL,
        text TEXT NOT NULL,
        heading TEXT,
        symbol TEXT,
        line_start INTEGER,
        line_end INTEGER,
        page_start INTEGER,
        page_end INTEGER,
        token_count INTEGER NOT NULL,
        content_hash TEXT NOT NULL,
        has_cjk INTEGER NOT NULL DEFAULT 0,
        UNIQUE (document_id, chunk_index)
    )""",
    "CREATE INDEX chunks_hash ON chunks(content_hash)",
    """CREATE TABLE tags (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE
    )""",
    """CREATE TABLE document_tags (
        document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        tag_id INTEGER NOT NULL REFERENCES tags(id) ON DELETE CASCADE,
        source TEXT NOT NULL DEFAULT 'user',
        PRIMARY KEY (document_id, tag_id)
    )""",
    "CREATE INDEX document_tags_tag ON document_tags(tag_id)",
    # The FTS index reads title/path from documents and heading/body from chunks.
    """CREATE VIEW fts_source AS
        SELECT c.id AS id, c.document_id AS document_id, d.title AS title,
               d.rel_path AS path, c.heading AS heading, c.text AS body,
               c.has_cjk AS has_cjk
        FROM chunks c JOIN documents d ON d.id = c.document_id""",
    """CREATE VIRTUAL TABLE chunks_fts USING fts5(
        title, path, heading, body,
        content='fts_source', content_rowid='id',
        tokenize='porter unicode61 remove_diacritics 2'
    )""",
    # unicode61 does not segment Chinese/Japanese/Korean: those chunks also go to a trigram index.
    """CREATE VIEW fts_cjk_source AS
        SELECT id, document_id, body FROM fts_source WHERE has_cjk = 1""",
    """CREATE VIRTUAL TABLE chunks_cjk USING fts5(
        body, content='fts_cjk_source', content_rowid='id', tokenize='trigram'
    )""",
    # One vec0 table per embedding model (created when a model is provisioned); this says which.
    """CREATE TABLE vector_tables (
        model TEXT PRIMARY KEY,
        table_name TEXT NOT NULL UNIQUE,
        dim INTEGER NOT NULL,
        created_at REAL NOT NULL
    )""",
)

# How a document was chunked (chunker version, sizes, token counter): a change re-chunks it
# on the next `kb add` even when the file itself did not change.
MIGRATION_2 = ("ALTER TABLE documents ADD COLUMN chunking TEXT NOT NULL DEFAULT ''",)

# What the user said about files, so that `kb sync` and `kb add` honour it without re-reading:
# files that failed to parse or held no text stay skipped until their size+mtime (then content
# hash) or the chunking changes; files removed with `kb remove` under a root stay out until they
# are added again by name. A root's --tag/--type also apply to files sync finds later.
MIGRATION_3 = (
    """CREATE TABLE skipped_files (
        path TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('failed', 'empty', 'removed')),
        reason TEXT NOT NULL DEFAULT '',
        size INTEGER,
        mtime REAL,
        content_hash TEXT,
        chunking TEXT NOT NULL DEFAULT '',
        recorded_at REAL NOT NULL
    )""",
    "ALTER TABLE roots ADD COLUMN tags TEXT NOT NULL DEFAULT '[]'",
    "ALTER TABLE roots ADD COLUMN doc_type TEXT",
)

# Folders `kb remove` forgot: a writer that started before the removal (an `add` of the same
# folder still running, a `sync`) may not write under them (store.documents.write_document).
MIGRATION_6 = (
    """CREATE TABLE removed_roots (
        path TEXT PRIMARY KEY,
        removed_at REAL NOT NULL
    )""",
)

# Chunks that are navigation (a table of contents, a list of figures, an index): search ranks
# them below content that matches about as well (formats/navigation.py, search/shaping.py).
MIGRATION_7 = ("ALTER TABLE chunks ADD COLUMN navigation INTEGER NOT NULL DEFAULT 0",)

# PDF pages that need OCR wait here: the text layer is written (keyword-searchable) at once and
# the scans are read after the keyword phase (ingest/ocr_phase.py); a file with no text layer at
# all has a row and no document yet. A document's row goes in the transaction that writes it
# with its OCR text, so a crash or Ctrl-C keeps the queue and nothing is read twice.
MIGRATION_8 = (
    """CREATE TABLE ocr_queue (
        path TEXT PRIMARY KEY,
        rel_path TEXT NOT NULL,
        pages INTEGER NOT NULL,
        size INTEGER NOT NULL,
        mtime REAL NOT NULL,
        content_hash TEXT NOT NULL,
        chunking TEXT NOT NULL DEFAULT '',
        queued_at REAL NOT NULL
    )""",
)

# The page a chunk's citation opens when it spans pages: the one holding most of its text, not
# the first (a heading at the foot of a page, a section's title slide). NULL: page_start.
MIGRATION_9 = ("ALTER TABLE chunks ADD COLUMN cited_page INTEGER",)

# Documents that hold each other's text (a guide as PDF and as HTML, a book and one of its
# chapters): each document's sketch (shingles.sketch: a fixed sample of its word-shingle hashes)
# and, per pair that shares at least half of one's sketch, that share and whether the document
# is a copy of the other (store/copies.py: one document in two formats, or a part of it). A
# document written before this migration has `sketched` 0 until `kb add`/`kb sync` fills it in.
MIGRATION_10 = (
    """CREATE TABLE document_sketches (
        hash INTEGER NOT NULL,
        document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        PRIMARY KEY (hash, document_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX document_sketches_document ON document_sketches(document_id)",
    """CREATE TABLE document_copies (
        document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        other_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        share REAL NOT NULL,
        copy INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (document_id, other_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX document_copies_other ON document_copies(other_id)",
    "ALTER TABLE documents ADD COLUMN sketched INTEGER NOT NULL DEFAULT 0",
)

MIGRATIONS: list[tuple[str, ...]] = [
    MIGRATION_1,
    MIGRATION_2,
    MIGRATION_3,
    MIGRATION_6,
    MIGRATION_7,
    MIGRATION_8,
    MIGRATION_9,
    MIGRATION_10,
]
