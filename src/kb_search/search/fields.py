"""Agent-sized search answers: only the result fields asked for, flat, on a lean envelope.

The full contract (`SearchResponse.to_dict`) spends most of its tokens on what an agent rarely
reads (the snippet repeats the text; absolute and relative paths; per-leg scores). A field
list keeps what it needs; `COMPACT` (chunk_id, citation, heading, score, text) is the profile
SKILL.md teaches: an openable citation, and the id `kb chunk`/`kb get chunk:ID` take; a
chunk of code, which has no heading, is headed by its symbol (`Class.method`). Source fields
are named without their `source.` prefix. Whatever the fields, a hit whose file changed
or is gone says so (`freshness`), and the answer keeps its `coverage`, `next_cursor` and
`budget`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from kb_search.errors import UserInputError

if TYPE_CHECKING:  # a warm `kb search --compact` validates fields without the search code
    from kb_search.search.results import SearchResponse

COMPACT = ("chunk_id", "citation", "heading", "score", "text")
RESULT_FIELDS = (
    "chunk_id",
    "score",
    "score_breakdown",
    "found_by",
    "text",
    "snippet",
    "citation",
    "source",
    "freshness",
    "evidence",
)
SOURCE_FIELDS = (
    "document_id",
    "title",
    "path",
    "rel_path",
    "type",
    "language",
    "page",
    "page_end",
    "lines",
    "heading",
    "symbol",
    "chunk_index",
    "total_chunks",
    "tags",
    "navigation",
)
FIELDS = RESULT_FIELDS + SOURCE_FIELDS
SCORE_DIGITS = 3


class FieldsConflict(UserInputError):
    """Both a field list and the compact profile were asked for."""


def chosen_fields(
    fields: str | Iterable[str] | None, compact: bool, names: tuple[str, str]
) -> list[str] | None:
    """What a search answer is cut to: the compact profile, the `fields` given, or None (the
    full contract). Both at once is FieldsConflict, naming them as the face calls them
    (`names`: the field list's, then compact's)."""
    if fields and compact:
        raise FieldsConflict(f"give {names[0]} or {names[1]}, not both: two ways to say one thing")
    if compact:
        return list(COMPACT)
    return parse_fields(fields) if fields is not None else None


def parse_fields(text: str | Iterable[str]) -> list[str]:
    """ "citation, text" (or a list) -> ["citation", "text"]; UserInputError names the
    valid fields when one is unknown."""
    items = text.split(",") if isinstance(text, str) else list(text)
    names = []
    for item in items:
        name = item.strip().removeprefix("source.")
        if not name:
            continue
        if name not in FIELDS:
            raise UserInputError(f"unknown field {item.strip()!r}: use any of {', '.join(FIELDS)}")
        if name not in names:
            names.append(name)
    if not names:
        raise UserInputError(f"give at least one field: any of {', '.join(FIELDS)}")
    return names


def project(response: SearchResponse, fields: Sequence[str] | None) -> dict[str, Any]:
    """The response with each result cut to `fields` (flat); legs only when one failed,
    notes only when there are some. No fields: the full contract."""
    full = response.to_dict()
    if not fields:
        return full
    results = []
    for result in full["results"]:
        source = result["source"]
        row = {}
        for name in fields:
            value = result.get(name) if name in RESULT_FIELDS else source[name]
            if name == "score":
                value = round(value, SCORE_DIGITS)
            elif name == "heading" and value is None:
                value = source["symbol"]  # code has no headings: its definition names it
            row[name] = value
        if "freshness" not in row and result.get("freshness") not in (None, "fresh"):
            row["freshness"] = result["freshness"]  # a changed or gone file is always said
        results.append(row)
    data: dict[str, Any] = {
        "schema_version": full["schema_version"],
        "query": full["query"],
        "mode": full["mode"],
        "results": results,
        "total_matches": full["total_matches"],
        "returned": full["returned"],
    }
    if full["variants"]:
        data["variants"] = [v["text"] for v in full["variants"]]
    failed = {leg: state for leg, state in full["legs"].items() if state not in ("ok", "empty")}
    if failed:
        data["legs"] = failed
    if full["notes"]:
        data["notes"] = full["notes"]
    for name in ("coverage", "next_cursor", "budget", "explain"):
        if name in full:
            data[name] = full[name]
    return data
