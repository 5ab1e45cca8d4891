"""What a search may ask store to filter by, as a typed value: store turns it into its own
WHERE conditions, so no SQL text is built, held or passed above store/."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ChunkFilter:
    """Chunks of documents that pass every given condition (an empty field does not filter):
    a type (or a file name ending, any case, in one of `name_endings`: `--type rst` is the
    files named `*.rst`), a programming language or tag among those given (any case for types
    and languages),
    modified at or after `after` and before `before` (Unix timestamps), a path matching one of
    the `paths` globs."""

    types: tuple[str, ...] = ()
    name_endings: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    after: float | None = None
    before: float | None = None
    paths: tuple[str, ...] = ()

    def is_empty(self) -> bool:
        return self == NO_FILTER


NO_FILTER = ChunkFilter()
# A document whose path ends in a (lower-case) ending: substr, not LIKE, so no character of
# the ending is a wildcard.
ENDS_WITH = "substr(lower(d.path), -length(?)) = ?"


def where_sql(chunk_filter: ChunkFilter) -> tuple[str, list[Any]]:
    """SQL conditions over `c` (chunks) and `d` (documents); "" when nothing filters."""
    clauses: list[str] = []
    params: list[Any] = []

    def any_of(column: str, values: tuple[str, ...]) -> None:
        clauses.append(f"{column} IN ({','.join('?' * len(values))})")
        params.extend(values)

    if chunk_filter.types or chunk_filter.name_endings:
        kinds = [f"d.doc_type IN ({','.join('?' * len(chunk_filter.types))})"]
        params.extend(t.lower() for t in chunk_filter.types)
        for ending in chunk_filter.name_endings:
            kinds.append(ENDS_WITH)
            params.extend((ending.lower(), ending.lower()))
        clauses.append(f"({' OR '.join(kinds)})")
    if chunk_filter.languages:
        any_of("lower(d.language)", tuple(x.lower() for x in chunk_filter.languages))
    if chunk_filter.tags:
        marks = ",".join("?" * len(chunk_filter.tags))
        clauses.append(
            "d.id IN (SELECT dt.document_id FROM document_tags dt JOIN tags t"
            f" ON t.id = dt.tag_id WHERE t.name IN ({marks}))"
        )
        params.extend(chunk_filter.tags)
    for value, op in ((chunk_filter.after, ">="), (chunk_filter.before, "<")):
        if value is not None:
            clauses.append(f"d.mtime {op} ?")
            params.append(value)
    if chunk_filter.paths:
        matches = " OR ".join("kb_path_match(?, d.rel_path, d.path)" for _ in chunk_filter.paths)
        clauses.append(f"({matches})")
        params.extend(chunk_filter.paths)
    return " AND ".join(clauses), params
