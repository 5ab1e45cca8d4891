"""Health checks for `kb doctor`."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import asdict, dataclass
from itertools import islice
from typing import Any

from kb_search.errors import ConfigError, ModelError
from kb_search.regular import read_regular
from kb_search.store import health
from kb_search.store.db import Connection, DatabaseError, load_vec_extension, schema_version
from kb_search.store.inventory import chunk_count
from kb_search.store.migrations import MIGRATIONS
from kb_search.text import plural


@dataclass
class Check:
    """One check's outcome; a warning is ok (doctor exits 0) but tells what to look at."""

    name: str
    ok: bool
    detail: str
    warning: bool = False  # ok (exit 0), but something the user should act on (detail says how)

    def to_dict(self) -> dict:
        return asdict(self)


class Advice(Exception):
    """Not broken, worth a look: what the chunker could not avoid, with what helps."""


FILE_EXAMPLES = 3


def files_check(conn: Connection) -> Check:
    """Does every indexed file still hold what was indexed? A stat per document; a file is read
    and hashed only when its size or mtime moved (a `touch`, a checkout). A warning, not a
    failure: editing a file without `kb watch` running is normal, and `kb sync` catches up."""
    try:
        stale, missing, total, older = _stale_files(conn)
    except DatabaseError as exc:
        return Check("files_in_sync", False, f"{type(exc).__name__}: {exc}")
    if not stale and not missing and not older:
        return Check("files_in_sync", True, f"{plural(total, 'indexed file')} match the disk")
    if not stale and not missing:
        shown = ", ".join(older[:FILE_EXAMPLES])
        detail = (
            f"{plural(len(older), 'file')} chunked by an older kb (e.g. {shown}): their titles"
            " and chunks are not what kb makes now; run `kb sync`"
        )
        return Check("files_in_sync", True, detail, warning=True)
    parts = []
    if stale:
        shown = ", ".join(stale[:FILE_EXAMPLES])
        parts.append(f"{plural(len(stale), 'file')} changed since indexed (e.g. {shown})")
    if missing:
        shown = ", ".join(missing[:FILE_EXAMPLES])
        parts.append(f"{plural(len(missing), 'file')} gone or unreadable (e.g. {shown})")
    if older:
        parts.append(f"{plural(len(older), 'file')} chunked by an older kb")
    detail = "; ".join(parts) + ": the index holds their old text; run `kb sync`"
    return Check("files_in_sync", True, detail, warning=True)


def _stale_files(conn: Connection) -> tuple[list[str], list[str], int, list[str]]:
    """Files changed since indexed, files gone, the count, and files chunked by an older kb."""
    from kb_search.ingest.changes import CHUNKER_VERSION
    from kb_search.store.documents import content_hash

    stale: list[str] = []
    missing: list[str] = []
    older: list[str] = []
    current = f"v{CHUNKER_VERSION}:"
    total = 0
    for path, rel_path, size, mtime, digest, chunking in health.document_files(conn):
        total += 1
        if not os.path.isabs(path):
            continue  # an imported collection (BEIR): no file behind it
        if not chunking.startswith(current):
            older.append(rel_path)
        try:
            st = os.stat(path)  # never blocks, even on a FIFO
        except OSError:
            missing.append(rel_path)
            continue
        if not stat.S_ISREG(st.st_mode):
            stale.append(rel_path)
        elif st.st_size != size or st.st_mtime != mtime:
            try:
                same = content_hash(read_regular(path, follow_symlinks=False)) == digest
            except OSError:
                missing.append(rel_path)
                continue
            if not same:
                stale.append(rel_path)
    return stale, missing, total, older


def _check(name: str, fn: Callable[[], str]) -> Check:
    try:
        return Check(name, True, fn())
    except Advice as exc:
        return Check(name, True, str(exc), warning=True)
    except AssertionError as exc:
        return Check(name, False, str(exc))
    except DatabaseError as exc:
        return Check(name, False, f"{type(exc).__name__}: {exc}")


def _integrity(conn: Connection) -> str:
    rows = health.integrity_problems(conn)
    assert rows == ["ok"], "; ".join(rows[:5])
    return "ok"


def _fts_in_sync(conn: Connection) -> str:
    # 'integrity-check' with rank=1 also compares the index against the content rows; it is
    # an INSERT command, which a read-only database refuses without anything being wrong.
    try:
        health.check_fts_indexes(conn)
    except DatabaseError as exc:
        if "readonly" in str(exc) or "read-only" in str(exc):
            return "not checked: the database is read-only here"
        raise
    return f"{chunk_count(conn)} chunks indexed"


def _chunk_counts(conn: Connection) -> str:
    bad, orphans = health.chunk_count_mismatches(conn)
    assert bad == 0, f"{bad} documents whose chunk count does not match their chunks"
    assert orphans == 0, f"{orphans} chunks without a document"
    return "documents and chunks agree"


def _schema(conn: Connection) -> str:
    version = schema_version(conn)
    assert version == len(MIGRATIONS), f"schema v{version}, expected v{len(MIGRATIONS)}"
    return f"v{version}"


def _vec_extension(conn: Connection) -> str:
    problem = load_vec_extension(conn)
    assert problem is None, f"sqlite-vec does not load: {problem}"
    return f"sqlite-vec {health.vec_version(conn)}"


def _sqlite(conn: Connection) -> str:
    return f"SQLite {health.sqlite_version(conn)}, FTS5 + trigram available"


_WORD_LIKE = re.compile(r"\w+")  # numbers count: a table of figures is not junk
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(\s|$)")
# Fewer word-like tokens than this in a chunk of a multi-chunk text document is junk (a
# repeated table header and one character of a row has 6). Code is not judged by its words:
# `class MailSender:` alone is a poor chunk, but one its chunker decides on.
JUNK_MIN_WORDS = 8
SAME_SPAN_LIMIT = 20  # chunks cut from one line range (a minified or binary-like line)
EXAMPLES = 3
JUNK_ADVICE = (
    "pieces the chunker could not merge with a neighbour: a short section between long ones,"
    " a table row or a line over the chunk budget; search still finds them. If a file's pieces"
    " are noise, list it in .kbignore; a larger chunking.max_tokens leaves room to merge them"
)


def _chunk_quality(conn: Connection) -> str:
    """Junk chunks in documents of more than one chunk: almost no words (a table separator,
    a lone character), headings alone, or many chunks cut from one line range.

    Never a failure: junk an older chunker left is a warning that names the fix (after an
    upgrade, `kb sync` re-chunks those files); what this chunker made is a warning with
    advice (re-adding would make the same pieces)."""
    from kb_search.ingest.changes import CHUNKER_VERSION

    current = f"v{CHUNKER_VERSION}:"
    old, old_files = _junk(conn, current, False)
    found, _ = _junk(conn, current, True)
    advice = []
    if old:
        advice.append(
            f"{plural(len(old_files), 'file')} chunked by an older kb: run `kb sync`"
            f" ({'; '.join(old)})"
        )
    if found:
        advice.append("; ".join(found) + f" ({JUNK_ADVICE})")
    if advice:
        raise Advice(". ".join(advice))
    return "no junk chunks"


def _junk(conn: Connection, current: str, by_current: bool) -> tuple[list[str], set[str]]:
    """Findings in documents chunked by this chunker (`by_current`) or by an older one, and
    the files they are in."""
    junk: list[str] = []
    headings: list[str] = []
    files: set[str] = set()
    rows = health.chunk_texts_for_quality(conn, current, by_current)
    for text, doc_type, rel_path, line_start, line_end, page in rows:
        is_code = doc_type == "code"
        # In plain text a `#` line is a comment (a Perl or awk script, a config file read as
        # text), not a heading: a block of them is the file's own words.
        hashes_head = doc_type not in ("code", "text")
        if hashes_head and text.lstrip().startswith("#") and _only_headings(text):
            headings.append(_citation(rel_path, line_start, line_end, page))
            files.add(rel_path)
        elif not is_code and _few_words(text, JUNK_MIN_WORDS):
            junk.append(_citation(rel_path, line_start, line_end, page))
            files.add(rel_path)
    spans = health.repeated_spans(conn, current, by_current, SAME_SPAN_LIMIT)
    files.update(p for p, _, _, _ in spans)
    problems = [
        _finding("chunks of almost no words", junk),
        _finding("heading-only chunks", headings),
        _finding(
            f"line ranges cut into {SAME_SPAN_LIMIT}+ chunks",
            [f"{_citation(p, a, b, None)} ({n} chunks)" for p, a, b, n in spans],
        ),
    ]
    return [problem for problem in problems if problem], files


def _few_words(text: str, enough: int) -> bool:
    """Fewer than `enough` words; stops reading at the `enough`-th (chunks run to 4,000 chars)."""
    return next(islice(_WORD_LIKE.finditer(text), enough - 1, None), None) is None


def _only_headings(text: str) -> bool:
    return all(_HEADING_LINE.match(line) for line in text.split("\n") if line.strip())


def _citation(rel_path: str, start: int | None, end: int | None, page: int | None) -> str:
    if start is not None:
        return f"{rel_path}#L{start}" + (f"-L{end}" if end is not None and end != start else "")
    return f"{rel_path}#page={page}" if page is not None else rel_path


def _finding(what: str, citations: list[str]) -> str:
    if not citations:
        return ""
    shown = ", ".join(citations[:EXAMPLES])
    return f"{len(citations)} {what}, e.g. {shown}"


def _parsers() -> list[Check]:
    """Which PDF and office paths `kb add` uses here (informational: never a failure)."""
    from kb_search.formats.docling import docling_available, pdf_path_report

    office = docling_available("docx")
    detail = "Docling" if office is None else f"unavailable ({office})"
    return [Check("pdf_path", True, pdf_path_report()), Check("office_documents", True, detail)]


def model_checks(conn: Connection, choice: Any, load: Callable[[str], Any]) -> list[Check]:
    """The model loads and matches the DB. `choice` is the configured ModelChoice,
    `load(name)` loads an embedder."""
    from kb_search.embedding.providers import short_name
    from kb_search.models.embedders import resolve_db_model

    try:
        name = resolve_db_model(conn, choice)
    except ModelError as exc:
        return [Check("model", False, str(exc))]
    # No model bound yet (a DB whose first `kb add` stopped before it embedded, or one only ever
    # searched lexically): healthy if the model the next add will bind loads.
    unbound = name is None
    name = choice.name if unbound else name
    try:
        embedder = load(name)
        if getattr(embedder, "endpoint", None):
            embedder.embed_query("kb doctor")  # a remote model: does its server answer?
        dim = embedder.dim
    except (ModelError, ConfigError) as exc:
        return [Check("model", False, str(exc))]
    source = getattr(embedder, "source", None) or getattr(
        getattr(embedder, "info", None), "source", "in process"
    )
    if provider := getattr(embedder, "provider", None):
        source += f"; onnxruntime {short_name(provider)}"
    bound = "not bound yet: the next `kb add` binds it, " if unbound else ""
    return [Check("model", True, f"{name} ({bound}{dim} dims, {source})")]


def reranker_check(name: str, depth: int, load: Callable[[str], Any]) -> Check:
    """The configured rerank stage loads (`load(name)` builds it; ConfigError when it cannot)."""
    if name == "none":
        return Check("reranker", True, "none (search.reranker): results in fused order")
    try:
        reranker = load(name)
    except ConfigError as exc:
        return Check("reranker", False, str(exc))
    info = getattr(getattr(reranker, "model", None), "info", None)
    source = getattr(info, "source", "") or getattr(reranker, "source", "") or "in process"
    return Check("reranker", True, f"{reranker.name} ({source}; reranks the top {depth})")


def _vectors_in_sync(conn: Connection) -> str:
    from kb_search.store.inventory import chunk_count
    from kb_search.store.vectors import db_model
    from kb_search.vectors.binding import AWAITING, vector_sync_detail

    name = db_model(conn)
    if name is None:
        chunks = chunk_count(conn)
        if chunks:  # a first `kb add` stopped before its embedding phase bound the model
            raise Advice(f"{chunks} {AWAITING}")
        return "no embedding model bound: lexical search only"
    ok, detail = vector_sync_detail(conn, name)
    assert ok, detail
    if AWAITING in detail:
        raise Advice(detail)
    return detail


def _ocr_queue(conn: Connection) -> str:
    """Scanned PDF pages queued for OCR: read after the text by `kb add`/`kb sync`, so some
    wait only when a run was stopped, or when the OCR engine is gone or OCR is off; without
    an engine, also the pages each file's parse left unread."""
    from kb_search.formats.pdf.ocr import OCR_INSTALL_HINT, engine_installed
    from kb_search.ingest.ocr_notice import unread_files
    from kb_search.store.ocr_queue import waiting_pages

    if engine_installed() is None:  # also the pages read without an engine (each run names
        unread = unread_files(conn)  # only its own files)
        pages, files = sum(f.count for f in unread), len(unread)
    else:
        pages, files = waiting_pages(conn)
    if not pages:
        return "no scanned PDF page waits for OCR"
    what = f"{plural(pages, 'scanned PDF page')} in {plural(files, 'file')} wait for OCR"
    if engine_installed() is None:
        raise Advice(f"{what}; no OCR engine is installed: {OCR_INSTALL_HINT}, then `kb sync`")
    raise Advice(
        f"{what} (a run was stopped before it read them, or OCR is off:"
        " `ingestion.enable_ocr: never`): run `kb sync` with OCR on"
    )


def _ann_index(conn: Connection, policy: tuple[str, int] | None = None) -> Check:
    """The approximate index's file (informational: a stale or missing one is rebuilt or
    updated on the next search that uses it). `policy`: (vectors.index, ann_min_chunks)."""
    from kb_search.store.vectors import db_model, table_for
    from kb_search.vectors.ann import ann_available, ann_state

    name = db_model(conn)
    table = table_for(conn, name) if name else None
    if table is None:
        return Check("ann_index", True, "no vectors")
    state = ann_state(conn, table)
    parts = [_ann_use(conn, state.state, policy)]
    if state.count is not None:
        parts.append(f"{state.count:,} vectors")
    if state.detail:
        parts.append(state.detail)
    if state.path and state.state != "missing":
        parts.append(state.path)
    missing = ann_available()
    if missing is not None:
        parts.append(f"approximate search unavailable: {missing}")
    return Check("ann_index", True, "; ".join(parts))


def _ann_use(conn: Connection, state: str, policy: tuple[str, int] | None) -> str:
    """The index's state, said so that "missing" reads true: not used, or built when needed."""
    if state != "missing":
        return state
    if policy is None:
        return "not built (a search that uses it builds it)"
    setting, threshold = policy
    chunks = chunk_count(conn)
    if setting == "auto" and (threshold == 0 or chunks < threshold):
        below = "never (vectors.ann_min_chunks 0)" if threshold == 0 else f"below {threshold:,}"
        return f"not used: exact vector search {below} chunks ({chunks:,} here)"
    if setting not in ("auto", "ann"):
        return f"not used: vectors.index is {setting}"
    return "not built yet: the next vector search builds it"


def _paths_here(conn: Connection) -> str:
    """Informational: an exported DB opened on another machine names files that are not here."""
    from kb_search.store.inventory import paths_here

    found = paths_here(conn)
    return found.note or f"{found.checked} sampled indexed files found here"


def storage_checks(conn: Connection) -> list[Check]:
    """What the file itself must satisfy: no model needed (the consistency tests use these)."""
    return [
        _check("sqlite", lambda: _sqlite(conn)),
        _check("schema", lambda: _schema(conn)),
        _check("integrity_check", lambda: _integrity(conn)),
        _check("fts_in_sync", lambda: _fts_in_sync(conn)),
        _check("chunk_counts", lambda: _chunk_counts(conn)),
        _check("chunk_quality", lambda: _chunk_quality(conn)),
        _check("vec_extension", lambda: _vec_extension(conn)),
        _check("indexed_paths", lambda: _paths_here(conn)),
        _check("ocr_queue", lambda: _ocr_queue(conn)),
        _check("vectors_in_sync", lambda: _vectors_in_sync(conn)),
    ]


def run_checks(
    conn: Connection,
    model: list[Check] | None = None,
    ann_policy: tuple[str, int] | None = None,
) -> list[Check]:
    """Every check: the file's, the model's (given), then which parsers this install uses.
    `ann_policy`: (vectors.index, vectors.ann_min_chunks), to say whether the index is used."""
    checks = storage_checks(conn)
    try:
        ann = _ann_index(conn, ann_policy)
    except DatabaseError as exc:
        ann = Check("ann_index", False, f"{type(exc).__name__}: {exc}")
    files = files_check(conn)
    return checks[:-1] + (model or []) + checks[-1:] + [ann, files] + _parsers()
