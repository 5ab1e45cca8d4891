"""`kb search QUERY --explain PATH`: why a file is, or is not, among the results.

For the file: indexed or not (and why not), and for its best chunks the rank and score in each
leg (read again `EXPLAIN_DEPTH` deep, past the search's own leg depth), in the fused ranking,
and what removed them: a filter, an exclusion, the leg depth, the score threshold, the top N
(each stage's cuts come from the pipeline's `Trace`).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kb_search.search.filters import filter_sql
from kb_search.search.legs import LegResult, VectorLeg, lexical_leg, vector_leg
from kb_search.search.pipeline import SearchOptions, Trace
from kb_search.search.query import Filters
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
    cwd: Path,
) -> Explanation:
    """Where `path`'s chunks stood at each stage of the search `trace` recorded."""
    from kb_search.reading import resolve_citation

    try:
        document, _ = resolve_citation(conn, path, cwd)
    except Exception:  # noqa: BLE001 - NotFound or a bad fragment: the file is not indexed
        return not_indexed(conn, path, cwd)
    chunk_ids = document_chunk_ids(conn, document.document_id)
    query = trace.query
    assert query is not None  # the pipeline recorded it
    filtered = failed_filters(conn, document.document_id, query.filters)
    deep_filters = Filters() if filtered else query.filters
    deep = deep_legs(conn, trace, options, deep_filters, vector)
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
    filters: Filters,
    vector: VectorLeg | None,
) -> dict[str, LegResult]:
    """Each leg the search ran, again `EXPLAIN_DEPTH` deep (without the filters when they
    removed the file: where it would have stood)."""
    query = trace.query
    assert query is not None
    depth = max(EXPLAIN_DEPTH, options.depth())
    legs: dict[str, LegResult] = {}
    if "lexical" in trace.legs:
        legs["lexical"] = lexical_leg(conn, query.parsed, filters, depth, query.excluded)
    if "vector" in trace.legs:
        legs["vector"] = vector_leg(
            conn, query.parsed, filters, depth, vector, "no embedding model", {}, query.excluded
        )
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
        where, params = filter_sql(Filters(**{name: list(given)}))
        if not document_passes(conn, document_id, where, params):
            failed.append(f"the {value} filter ({', '.join(map(str, given))})")
    return failed


def not_indexed(conn: Connection, path: str, cwd: Path) -> Explanation:
    """Why a file is not in the index, from what kb remembers and the file system."""
    full = Path(os.path.realpath(os.path.join(cwd, os.path.expanduser(path.split("#")[0]))))
    return Explanation(str(full), False, "not indexed", why_not_indexed(conn, full))


def why_not_indexed(conn: Connection, path: Path) -> str:
    from kb_search.formats.registry import classify
    from kb_search.ingest.pipeline import deepest_root
    from kb_search.ingest.walk import IgnoreRules
    from kb_search.store.roots import load_roots
    from kb_search.store.skipped import skipped_entry

    skipped = skipped_entry(conn, str(path))
    if skipped is not None:
        if skipped.kind == "failed":
            return f"it failed to index: {skipped.reason}"
        if skipped.kind == "empty":
            return "it held no text to index"
        return "it was removed with `kb remove`"
    if not path.is_file():
        return "no such file here"
    root = deepest_root(path, load_roots(conn))
    if root is None:
        return f"never added: no added folder holds it (`kb add {path}`)"
    if IgnoreRules(root).ignored_path(path):
        return f"ignored by a .kbignore (or a default ignore) under {root}"
    verdict = classify(path)
    if verdict.format is None:
        return "not a file type kb indexes"
    if verdict.left_out is not None:
        return f"left out as generated ({verdict.left_out}): `kb add --include-generated` reads it"
    return "not indexed yet: run `kb sync`"
