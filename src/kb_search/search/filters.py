"""Filters (type, tag, path glob, language, dates): their values checked against the index,
turned into the typed `ChunkFilter` store filters by, and the chunk sets for legs that cannot
filter in SQL (the vector leg): applied before ranking on every leg."""

from __future__ import annotations

from kb_search.cjk import has_cjk, kanji_variants
from kb_search.errors import SearchError
from kb_search.search.query import Filters, ParsedQuery, date_timestamp
from kb_search.store import retrieval
from kb_search.store.chunk_filter import ChunkFilter
from kb_search.store.db import Connection


def check_filter_values(conn: Connection, filters: Filters) -> list[str]:
    """One rule for every filter of values (type, tag, language): a value the index does not
    hold is an error that lists the values it holds (the nearest first when one is close), not
    an empty answer. A type kb reads but the index has no document of is no exception: an
    agent told "nothing matched" would take the index to lack the answer, not the type.
    A type named by a file extension kb reads under another type (`rst`, read as `text`) is
    the files of that extension, and the notes returned say so."""
    notes: list[str] = []
    checks = (("type", filters.types), ("tag", filters.tags), ("language", filters.languages))
    for name, values in checks:
        if not values:
            continue
        present = retrieval.indexed_values(conn, name)
        for value in values:
            ending = type_extension(value) if name == "type" else None
            if ending is not None:
                notes.append(_check_extension(conn, value, ending, sorted(present)))
            elif not present.intersection(_meant(name, value)):
                raise SearchError(_unknown(name, value, sorted(present)))
    return notes


def type_extension(value: str) -> str | None:
    """The extension a `--type` value names when it is no type kb stores but an extension kb
    reads (`rst`, `.adoc`, `md`, `yml`): `.rst`; None for a type (`pdf`, `markdown`)."""
    from kb_search.formats.registry import SUPPORTED_EXTENSIONS

    key = value.strip().lower()
    if key in _readable("type"):
        return None
    ext = "." + key.lstrip(".")
    return ext if ext in SUPPORTED_EXTENSIONS else None


def name_endings(ext: str) -> tuple[str, ...]:
    """The file names of an extension as kb reads them: plain or compressed (`.rst.gz`)."""
    from kb_search.formats.compressed import SUFFIXES

    return (ext, *(ext + suffix for suffix in SUFFIXES))


def _check_extension(conn: Connection, value: str, ext: str, known: list[str]) -> str:
    """The note for a type named by its extension, or the error when no file has it."""
    from kb_search.formats.registry import format_for_extension

    stored = format_for_extension(ext).doc_type
    if not retrieval.documents_named(conn, name_endings(ext)):
        listed = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "")
        raise SearchError(
            f"no type {value!r} in the index: kb reads {ext} files (as type {stored}), but none"
            f" was added. It has types: {listed or 'none'}"
        )
    return f"type {value!r} read as the files named *{ext} (kb indexes them as type {stored})"


def _meant(name: str, value: str) -> tuple[str, ...]:
    """The values a filter value stands for: a language family (`shell`) is its members."""
    if name == "language":
        from kb_search.formats.registry import languages_meant

        return languages_meant(value)
    return (_canonical(name, value),)


def _canonical(name: str, value: str) -> str:
    """The value as the index holds it: lower-cased; a language by kb's name for it (`js` is
    `javascript`, `golang` is `go`, `yml` is `yaml`)."""
    if name == "language":
        from kb_search.formats.registry import canonical_language

        return canonical_language(value)
    return value.lower()


def _unknown(name: str, value: str, known: list[str]) -> str:
    import difflib

    meant = " and ".join(_meant(name, value))
    named = f"{value!r}" if meant == value.lower() else f"{value!r} ({meant})"
    close = difflib.get_close_matches(meant, known, n=3, cutoff=0.6)
    if set(_meant(name, value)) <= _readable(name):
        why = f": kb reads {meant} files, but none was added."
    elif close:
        why = f"; did you mean {' or '.join(repr(c) for c in close)}?"
    else:
        why = "."
    listed = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "")
    what = "languages of code" if name == "language" else f"{name}s"
    return f"no {name} {named} in the index{why} It has {what}: {listed or 'none'}"


def _readable(name: str) -> set[str]:
    """The types or languages kb reads (whether or not this index has any)."""
    from kb_search.formats.registry import FORMATS, code_languages

    if name == "type":
        return {fmt.doc_type for fmt in FORMATS}
    return code_languages() if name == "language" else set()


def store_filter(filters: Filters) -> ChunkFilter:
    """The filters as the typed value store filters by (built once per search): the latest
    `after` date and the earliest `before` date bound the modification time."""
    endings = {value: type_extension(value) for value in filters.types}
    return ChunkFilter(
        types=tuple(value for value, ext in endings.items() if ext is None),
        name_endings=tuple(e for ext in endings.values() if ext for e in name_endings(ext)),
        languages=tuple(m for x in filters.languages for m in _meant("language", x)),
        tags=tuple(filters.tags),
        after=max(date_timestamp(d) for d in filters.after) if filters.after else None,
        before=min(date_timestamp(d) for d in filters.before) if filters.before else None,
        paths=tuple(filters.paths),
    )


def allowed_chunks(conn: Connection, chunk_filter: ChunkFilter) -> set[int] | None:
    """Chunk ids passing the filter (None = no filter), for legs that cannot filter in SQL."""
    if chunk_filter.is_empty():
        return None
    return retrieval.filtered_chunk_ids(conn, chunk_filter)


def excluded_chunks(conn: Connection, parsed: ParsedQuery) -> set[int]:
    """Chunks that a `-term` / `-"phrase"` rules out, for the legs FTS5 NOT cannot reach
    (the vector leg, CJK substring hits)."""
    if not parsed.excluded or parsed.raw_fts is not None:
        return set()
    expr = " OR ".join('"' + x.replace('"', '""') + '"' for x in parsed.excluded)
    ids = retrieval.fts_match_ids(conn, expr)
    for term in parsed.excluded:
        if has_cjk(term):
            ids |= set(retrieval.cjk_substring_ids(conn, kanji_variants(term)))
    return ids
