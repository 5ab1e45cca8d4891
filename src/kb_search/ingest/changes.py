"""Whether a file must be read again: size and mtime, then content hash, the chunking
fingerprint, and what earlier runs remembered of it."""

from __future__ import annotations

import os
from pathlib import Path

from kb_search.formats.reader import open_user_file, read_user_file
from kb_search.ingest.executor import AddOptions, Candidate
from kb_search.ingest.walk import Found, rel_path_for
from kb_search.parsed import IngestError
from kb_search.progress import PDF_PAGE_WORK
from kb_search.sanitize import path_text
from kb_search.store.db import Connection, DatabaseError
from kb_search.store.documents import (
    DocumentRecord,
    content_hash,
    touch_document,
)
from kb_search.store.inventory import document_state
from kb_search.store.skipped import (
    EMPTY,
    REMOVED,
    Skipped,
    remember_skipped,
    touch_skipped,
)

UNCHANGED, KNOWN_FAILURE, LEFT_OUT = "unchanged", "known failure", "removed"
KNOWN_EMPTY = "known empty"  # empty before and unchanged since: not a failure
# Bump when an ingester changes how it splits or titles documents: `kb add` and `kb sync` read
# every document chunked by an older version again (unchanged chunk texts keep their vectors).
# 4: Markdown titles from front matter or the first heading; a section merged into headless
#    text names its chunk; PDF running heads, reading order and headings (issue 37); titles of
#    package metadata files (PKG-INFO); generated and sniffed files judged again.
# 5: PDF tables of contents and indexes marked as navigation (issue 37).
# 6: a `.txt` written in AsciiDoc read as AsciiDoc, two-line AsciiDoc titles (issue 32); PDF
#    reading order on margin notes, parallel pairs and bands (issue 37).
# 7: PDF reading order (code line numbers, contents pages, tables), TeX accents, short notes'
#    folios, fifth-line numbers, version lines, labels and 'Contents' as headings, cards read by
#    column, TeX math symbols, headings never from bold body, dates or crowded lines (issue 37).
# 8: DocBook XML read as markup, pinned requirements files a tool wrote left out as lock files,
#    no title from an XML prolog or a template's `{{ }}` (issue 32).
# 9: plain TeX's setup lines (assignments, definitions) are no text, so a reference card's
#    title is its first line; gettext catalogs left out as translation catalogs (issue 32).
# 10: well-known licence texts (LICENSE, COPYING: Apache-2.0, MIT, BSD, GPL...) one chunk;
#     Texinfo read as sections; HTML redirect stubs, mdBook print copies and one-line JSON
#     dumps left out; a `<br>` paragraph's pieces cite their own lines; notebooks of nbformat
#     2/3, Org by its mode line, titles of change logs and Debian copyright files (issue 32); PDF
#     side-by-side paragraphs, landscape books no slide decks, heads and titles measured by
#     line boxes, foreign 'Contents' headings, margin labels no headings; a chunk that spans
#     pages cites the page holding most of its text (`cited_page`, migration 9) (issue 37).
# 11: plain text without a terminal's escape codes and overstrikes (grotty's manuals), scripts
#     read as text titled by their name, reST fields (`:orphan:`) no title, a README titled by
#     its HTML banner, Debian and release-headed change logs by package and file (issue 32).
#     PDF: a short column beside a long one judged where both run; a wrapped contents entry's
#     first line, an author after initials, a figure's large label no headings; a justified
#     line with wide word spaces no table row; titles from a man page's name line and
#     wrapped after a comma (issue 37).
#     PDF titles beside a contents box, after a colon, stacked in two sizes or wrapped after a
#     German or French word; UTF-8 Title fields read as PDFDocEncoding repaired, Title fields
#     with TeX source set aside; slide decks at screen size, and a deck's sidebar of sections
#     dropped (issue 37).
CHUNKER_VERSION = 11
# The last version whose change reached plain-text chunks (`formats/text.parse_text`), the
# cut BEIR corpora go through: their cached eval indexes (evaluate/beir.py) outlive other bumps.
TEXT_CHUNKER_VERSION = 3


def chunking_fingerprint(options: AddOptions) -> str:
    counter = "model" if options.tokenizer_path else "heuristic"
    s = options.settings
    return f"v{CHUNKER_VERSION}:{s.max_tokens}:{s.min_tokens}:{counter}"


def outcome_fingerprint(options: AddOptions) -> str:
    """What else decides whether a file fails: a new kb, another size cap, OCR setting or OCR
    engine (one installed since) retries the files that failed under the old ones."""
    from kb_search import __version__
    from kb_search.formats.pdf.ocr import engine_installed

    cap = options.max_file_bytes
    ocr = f"{options.ocr}+{engine_installed() or 'no-engine'}"
    return f"{chunking_fingerprint(options)}:{cap}:{ocr}:{__version__}"


def remember_outcome(
    conn: Connection,
    path: Path,
    kind: str,
    reason: str,
    options: AddOptions,
    record: DocumentRecord | None = None,
) -> None:
    """Remember a failure or an empty file with what it looked like (`record`, else a stat),
    so that reruns skip it until it changes."""
    if record is None:
        try:
            stat = path.stat()
        except OSError:
            return
        size, mtime, digest = stat.st_size, stat.st_mtime, None
    else:
        size, mtime, digest = record.size, record.mtime, record.content_hash
    entry = Skipped(kind, reason, size, mtime, digest, outcome_fingerprint(options))
    try:
        remember_skipped(conn, path_text(path), entry)
    except DatabaseError:
        pass  # memory is an optimisation: the failure itself is logged


def expected_work(path: Path, size: int) -> float:
    """Bytes of text a file is expected to hold: its size, or its pages for a PDF (one page
    for a PDF that does not open: encrypted or broken, it fails at once in its parser; its
    size in bytes counted as text made a 2.8 MB encrypted file 939 pages of work)."""
    if path.suffix.lower() != ".pdf":
        return float(size)
    try:
        import pypdfium2

        document = pypdfium2.PdfDocument(open_user_file(path), autoclose=True)
        try:
            return float(len(document) * PDF_PAGE_WORK)
        finally:
            document.close()
    except Exception:  # noqa: BLE001 - a broken PDF fails later, in its parser
        return float(PDF_PAGE_WORK)


def check_file(
    conn: Connection,
    item: Found,
    options: AddOptions,
    skipped: Skipped | None = None,
    explicit: set[Path] | frozenset[Path] = frozenset(),
) -> Candidate | str:
    """What to parse, or why not: UNCHANGED, KNOWN_FAILURE (failed before, same file) or
    LEFT_OUT (removed by the user). Raises IngestError."""
    path = item.path
    try:
        stat = path.stat()
    except OSError as exc:
        raise IngestError(f"cannot stat file: {exc.strerror or exc}") from exc
    key = path_text(path)
    row = document_state(conn, key)
    chunking = chunking_fingerprint(options)
    same_chunking = row is not None and row[4] == chunking
    if same_chunking and row[2] == stat.st_size and row[3] == stat.st_mtime:
        return UNCHANGED
    if skipped is not None:
        verdict = _still_skipped(conn, key, skipped, stat, options, path in explicit)
        if verdict is not None:
            return verdict
    _check_size(stat.st_size, options)
    try:
        with open_user_file(path) as handle:
            stat = os.fstat(handle.fileno())  # the bytes hashed are the ones recorded
            _check_size(stat.st_size, options)
            digest = content_hash(handle.read())
    except OSError as exc:
        raise IngestError(f"cannot read file: {exc.strerror or exc}") from exc
    if same_chunking and row[1] == digest:
        touch_document(conn, row[0], stat.st_size, stat.st_mtime)
        return UNCHANGED
    record = DocumentRecord(
        path=key,
        rel_path=rel_path_for(path, item.root),
        content_hash=digest,
        size=stat.st_size,
        mtime=stat.st_mtime,
        chunking=chunking,
    )
    work = expected_work(path, stat.st_size)
    rechunk = row is not None and row[1] == digest
    return Candidate(
        item, record, row is not None, work, forget=skipped is not None, rechunk=rechunk
    )


def _check_size(size: int, options: AddOptions) -> None:
    if size > options.max_file_bytes:
        cap = options.max_file_bytes / 1e6
        raise IngestError(f"file too large: {size / 1e6:.1f} MB > cap {cap:.0f} MB")


def _still_skipped(
    conn: Connection,
    key: str,
    skipped: Skipped,
    stat: os.stat_result,
    options: AddOptions,
    explicit: bool,
) -> str | None:
    """LEFT_OUT, KNOWN_FAILURE or KNOWN_EMPTY while what the user said or the file's outcome
    still holds. A file named on its own (`kb add FILE`) is always tried again."""
    if explicit:
        return None
    if skipped.kind == REMOVED:
        return LEFT_OUT
    if options.retry_failed or skipped.chunking != outcome_fingerprint(options):
        return None
    known = KNOWN_EMPTY if skipped.kind == EMPTY else KNOWN_FAILURE
    if skipped.size == stat.st_size and skipped.mtime == stat.st_mtime:
        return known
    if skipped.content_hash and skipped.size == stat.st_size:
        try:
            same = content_hash(read_user_file(Path(key))) == skipped.content_hash
        except OSError:
            return None
        if same:
            touch_skipped(conn, key, stat.st_size, stat.st_mtime)
            return known
    return None
