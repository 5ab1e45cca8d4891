"""`kb search QUERY --explain PATH`: why a file is, or is not, among the results.

For the file: indexed or not (and why not), and for its best chunks the rank and score in each
leg (read again `EXPLAIN_DEPTH` deep, past the search's own leg depth), in the fused ranking,
and what removed them: a filter, an exclusion, the leg depth, the score threshold, the top N
(each stage's cuts come from the pipeline's `Trace`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kb_search.errors import KbError
from kb_search.locating import NOT_UNDER_ROOTS, under_roots
from kb_search.sanitize import valid_text
from kb_search.search.filters import store_filter
from kb_search.search.legs import LegResult, VectorLeg, lexical_leg, vector_leg
from kb_search.search.pipeline import SearchOptions, Trace
from kb_search.search.query import Filters
from kb_search.store.chunk_filter import NO_FILTER, ChunkFilter
from kb_search.store.db import Connection
from kb_search.store.records import chunks_by_id, document_chunk_ids, document_passes

EXPLAIN_DEPTH = 1000
BEST_CHUNKS = 3
LEGS = ("lexical", "vector")


@dataclass
class Place:
    rank: int
    score: float


@dataclass
class ChunkTrace:
    chunk_id: int
    citation: str
    lexical: Place | None = None
    vector: Place | None = None
    fused: Place | None = None
    returned: int | None = None  # its rank among the results
    cut: list[str] = field(default_factory=list)


@dataclass
class Explanation:
    path: str
    indexed: bool
    status: str  # returned, cut, filtered, not found, not indexed
    reason: str
    document_id: int | None = None
    chunks: list[ChunkTrace] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def explain_path(
    conn: Connection,
    path: str,
    options: SearchOptions,
    trace: Trace,
    returned: list[int],
    vector: VectorLeg | None,
    cwd: Path | None,
) -> Explanation:
    """Where `path`'s chunks stood at each stage of the search `trace` recorded. `cwd` None:
    a relative path is relative to the added folders (`locating`)."""
    from kb_search.reading import resolve_citation

    try:
        document, _ = resolve_citation(conn, path, cwd)
    except KbError:  # NotFound or a bad fragment: the file is not indexed
        return not_indexed(conn, path, cwd)
    chunk_ids = document_chunk_ids(conn, document.document_id)
    query = trace.query
    assert query is not None  # the pipeline recorded it
    filtered = failed_filters(conn, document.document_id, query.filters)
    deep_filter = NO_FILTER if filtered else query.chunk_filter
    deep = deep_legs(conn, trace, options, deep_filter, vector)
    places = {name: ranks(leg.hits) for name, leg in deep.items()}
    places["fused"] = ranks([(c.chunk_id, c.score) for c in trace.ranked])
    traces = [
        chunk_trace(cid, trace, places, returned, options, filtered, query.excluded)
        for cid in chunk_ids
    ]
    best = sorted(traces, key=_best_first)[:BEST_CHUNKS]
    stored = chunks_by_id(conn, [t.chunk_id for t in best])
    citations = {cid: chunk.citation for cid, chunk in stored.items()}
    for item in best:
        item.citation = citations.get(item.chunk_id, document.path)
    status, reason = verdict(best, filtered)
    return Explanation(document.path, True, status, reason, document.document_id, best)


def deep_legs(
    conn: Connection,
    trace: Trace,
    options: SearchOptions,
    chunk_filter: ChunkFilter,
    vector: VectorLeg | None,
) -> dict[str, LegResult]:
    """Each leg the search ran, again `EXPLAIN_DEPTH` deep (without the filters when they
    removed the file: where it would have stood)."""
    query = trace.query
    assert query is not None
    depth = max(EXPLAIN_DEPTH, options.depth())
    legs: dict[str, LegResult] = {}
    if "lexical" in trace.legs:
        legs["lexical"] = lexical_leg(conn, query.parsed, chunk_filter, depth, query.excluded)
    if "vector" in trace.legs:
        legs["vector"] = vector_leg(
            conn, query.parsed, chunk_filter, depth, vector, "no embedding model", {},
            query.excluded,
        )  # fmt: skip
    return legs


def chunk_trace(
    chunk_id: int,
    trace: Trace,
    places: dict[str, dict[int, Place]],
    returned: list[int],
    options: SearchOptions,
    filtered: list[str],
    excluded: set[int],
) -> ChunkTrace:
    item = ChunkTrace(chunk_id, "")
    item.lexical = places.get("lexical", {}).get(chunk_id)
    item.vector = places.get("vector", {}).get(chunk_id)
    item.fused = places["fused"].get(chunk_id)
    if chunk_id in returned:
        item.returned = returned.index(chunk_id) + 1
        return item
    item.cut = cut_reasons(item, trace, options, filtered, chunk_id in excluded)
    return item


def cut_reasons(
    item: ChunkTrace, trace: Trace, options: SearchOptions, filtered: list[str], excluded: bool
) -> list[str]:
    """Why a chunk that is not among the results is not: in pipeline order."""
    if filtered:
        return [f"filtered out by {', '.join(filtered)}"]
    if excluded:
        return ["excluded by a -term of the query"]
    reasons = []
    depth = options.depth()
    for name in LEGS:
        if name not in trace.legs:
            continue
        place = getattr(item, name)
        if place is None:
            missing = "has none of the query's words" if name == "lexical" else "is not near"
            reasons.append(f"{name} leg: {missing}" + ("" if name == "lexical" else
                           f" (not in its nearest {max(EXPLAIN_DEPTH, depth)})"))  # fmt: skip
        elif place.rank > depth:
            reasons.append(f"{name} leg: rank {place.rank}, past its depth of {depth}")
    for cut in trace.cuts:
        if item.chunk_id in cut.chunk_ids:
            reasons.append(cut.reason)
    return reasons


def ranks(hits: list[tuple[int, float]]) -> dict[int, Place]:
    """Each chunk's place in a ranking (best first)."""
    return {cid: Place(rank, round(score, 6)) for rank, (cid, score) in enumerate(hits, 1)}


def _best_first(item: ChunkTrace) -> tuple:
    far = 10**9
    legs = min((p.rank for p in (item.lexical, item.vector) if p is not None), default=far)
    return (item.returned or far, item.fused.rank if item.fused else far, legs, item.chunk_id)


def verdict(best: list[ChunkTrace], filtered: list[str]) -> tuple[str, str]:
    if filtered:
        return "filtered", f"filtered out by {', '.join(filtered)}"
    if not best:
        return "not found", "the document has no chunks"
    first = best[0]
    if first.returned:
        return "returned", f"returned at rank {first.returned}"
    if first.fused is not None:
        return "cut", f"fused rank {first.fused.rank}: {'; '.join(first.cut)}"
    if first.lexical or first.vector:
        return "cut", "; ".join(first.cut)
    return "not found", "; ".join(first.cut) or "neither leg found it"


def failed_filters(conn: Connection, document_id: int, filters: Filters) -> list[str]:
    """The filters (type, tag, path, language, dates) the document does not pass."""
    failed = []
    for name, value in (
        ("types", "type"), ("tags", "tag"), ("paths", "path"), ("languages", "language"),
        ("after", "--after"), ("before", "--before"),
    ):  # fmt: skip
        given = getattr(filters, name)
        if not given:
            continue
        if not document_passes(conn, document_id, store_filter(Filters(**{name: list(given)}))):
            failed.append(f"the {value} filter ({', '.join(map(str, given))})")
    return failed


def not_indexed(conn: Connection, path: str, cwd: Path | None) -> Explanation:
    """Why a file is not in the index, from what kb remembers and the file system; only for
    a path under an added folder (of any other, not even whether it exists)."""
    given = path.split("#")[0]
    found = under_roots(conn, given, cwd)
    if found is None:
        return Explanation(valid_text(given), False, "not indexed", NOT_UNDER_ROOTS)
    full, root = found
    return Explanation(str(full), False, "not indexed", why_not_indexed(conn, full, root))


# A settings file left out of a folder's walk for what it holds: true, and no word on what
# (naming which file holds a credential to an MCP client would be a leak).
SETTINGS_LEFT_OUT = "left out: a settings file (see docs/formats.md)"


def _passed_by(reason: str, name: str, root: Path) -> str:
    from kb_search.ingest.walk import IGNORE_RULES

    if reason == IGNORE_RULES:
        return f"ignored by a .kbignore or .gitignore rule ({name}) under {root}"
    return f"left out by the walk under {root}: {reason} ({name})"


def why_not_indexed(conn: Connection, path: Path, root: Path) -> str:
    from kb_search.formats.registry import HIDDEN, SECRET, classify
    from kb_search.ingest.walk import IgnoreRules
    from kb_search.store.skipped import skipped_entry

    skipped = skipped_entry(conn, str(path))
    if skipped is not None:
        if skipped.kind == "failed":
            return f"it failed to index: {skipped.reason}"
        if skipped.kind == "empty":
            return "it held no text to index"
        return "it was removed with `kb remove`"
    try:
        if not path.is_file():
            return "no such file here"
    except OSError as exc:
        return f"it cannot be read here ({exc.strerror or type(exc).__name__})"
    ignored = IgnoreRules(root).ignored_because(path)
    if ignored is not None:
        return _passed_by(*ignored, root)
    verdict = classify(path, root=root)  # judged as the walk from that root judges it
    if verdict.kind in (SECRET, HIDDEN):
        return SETTINGS_LEFT_OUT
    if verdict.format is None:
        return "not a file type kb indexes"
    if verdict.left_out is not None:
        return f"left out as generated ({verdict.left_out}): `kb add --include-generated` reads it"
    return "not indexed yet: run `kb sync`"
