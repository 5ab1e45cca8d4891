"""Filters in SQL (type, tag, path glob, language, dates) and the chunk sets for legs that
cannot filter in SQL (the vector leg): applied before ranking on every leg."""

from __future__ import annotations

from typing import Any

from kb_search.cjk import has_cjk
from kb_search.errors import SearchError
from kb_search.search.query import Filters, ParsedQuery, date_timestamp
from kb_search.store.db import Connection


def check_filter_values(conn: Connection, filters: Filters) -> None:
    """A type, tag or language the index has never seen is a typo more often than a question:
    an error naming the nearest values, not an empty answer. A known file type with no
    documents indexed yet is a fair question and passes."""
    checks = (
        ("type", filters.types, "SELECT DISTINCT doc_type FROM documents", _known_types),
        ("tag", filters.tags, "SELECT name FROM tags", tuple),
        ("language", filters.languages, "SELECT DISTINCT language FROM documents", tuple),
    )
    for name, values, sql, more in checks:
        if not values:
            continue
        present = {str(row[0]).lower() for row in conn.execute(sql) if row[0]}
        for value in values:
            if value.lower() in present or value.lower() in more():
                continue
            raise SearchError(_unknown(name, value, sorted(present | set(more()))))


def _known_types() -> tuple[str, ...]:
    from kb_search.formats.registry import FORMATS

    return tuple(sorted({fmt.doc_type for fmt in FORMATS}))


def _unknown(name: str, value: str, known: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(value.lower(), known, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    listed = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "")
    return f"no {name} {value!r} in the index: {hint}({name}s: {listed or 'none yet'})"


def filter_sql(filters: Filters) -> tuple[str, list[Any]]:
    """SQL conditions over `c` (chunks) and `d` (documents) for the given filters."""
    clauses: list[str] = []
    params: list[Any] = []

    def any_of(column: str, values: list[str]) -> None:
        clauses.append(f"{column} IN ({','.join('?' * len(values))})")
        params.extend(values)

    if filters.types:
        any_of("d.doc_type", [t.lower() for t in filters.types])
    if filters.languages:
        any_of("lower(d.language)", [x.lower() for x in filters.languages])
    if filters.tags:
        marks = ",".join("?" * len(filters.tags))
        clauses.append(
            "d.id IN (SELECT dt.document_id FROM document_tags dt JOIN tags t"
            f" ON t.id = dt.tag_id WHERE t.name IN ({marks}))"
        )
        params.extend(filters.tags)
    for dates, op, pick in ((filters.after, ">=", max), (filters.before, "<", min)):
        if dates:
            clauses.append(f"d.mtime {op} ?")
            params.append(pick(date_timestamp(d) for d in dates))
    if filters.paths:
        clauses.append(
            "(" + " OR ".join("kb_path_match(?, d.rel_path, d.path)" for _ in filters.paths) + ")"
        )
        params.extend(filters.paths)
    return " AND ".join(clauses), params


def allowed_chunks(conn: Connection, filters: Filters) -> set[int] | None:
    """Chunk ids passing the filters (None = no filter), for legs that cannot filter in SQL."""
    if filters.is_empty():
        return None
    where, params = filter_sql(filters)
    sql = f"SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id WHERE {where}"
    return {r[0] for r in conn.execute(sql, params)}


def excluded_chunks(conn: Connection, parsed: ParsedQuery) -> set[int]:
    """Chunks that a `-term` / `-"phrase"` rules out, for the legs FTS5 NOT cannot reach
    (the vector leg, CJK substring hits)."""
    if not parsed.excluded or parsed.raw_fts is not None:
        return set()
    expr = " OR ".join('"' + x.replace('"', '""') + '"' for x in parsed.excluded)
    ids = {
        r[0] for r in conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (expr,))
    }
    for term in parsed.excluded:
        if has_cjk(term):
            ids |= {
                r[0]
                for r in conn.execute(
                    "SELECT id FROM chunks WHERE has_cjk = 1 AND text LIKE ?", (f"%{term}%",)
                )
            }
    return ids
