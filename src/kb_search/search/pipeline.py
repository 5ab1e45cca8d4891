"""The search pipeline: lexical (FTS5 BM25) and vector legs, fused with normalised RRF."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from kb_search.search.query import Filters, ParsedQuery, parse_query
from kb_search.store.db import Connection, OperationalError
from kb_search.store.documents import has_cjk

SCHEMA_VERSION = 1
MODES = ("hybrid", "lexical", "vector")
# BM25 column weights: title, path, heading, body.
BM25_WEIGHTS = (3.0, 1.5, 2.0, 1.0)
MAX_KNN = 4096  # sqlite-vec's largest k
_HL_OPEN, _HL_CLOSE = "\x02", "\x03"


class SearchError(Exception):
    """A query that cannot run (bad explicit FTS5 syntax, nothing to search for, ...)."""


class VectorLeg(Protocol):
    """Nearest chunks to a query; supplied by the embedding layer."""

    def embed_query(self, text: str) -> Any: ...

    def nearest(
        self, conn: Connection, vector: Any, k: int, allowed: set[int] | None
    ) -> list[tuple[int, float]]: ...


@dataclass
class SearchOptions:
    mode: str = "hybrid"
    top: int = 10
    filters: Filters = field(default_factory=Filters)
    min_score: float | None = None
    rrf_k: int = 60
    snippets: bool = True  # evaluation turns them off: it only needs the ranking


@dataclass
class LegResult:
    status: str  # "ok", "empty" or "error: ..."
    hits: list[tuple[int, float]] = field(default_factory=list)  # (chunk_id, score), best first
    total: int = 0


@dataclass
class Source:
    document_id: int
    title: str
    path: str
    type: str
    page: int | None
    lines: list[int] | None
    heading: str | None
    symbol: str | None
    chunk_index: int
    total_chunks: int
    tags: list[str]
    language: str | None = None
    rel_path: str = ""
    page_end: int | None = None


@dataclass
class Result:
    chunk_id: int
    score: float
    score_breakdown: dict[str, Any]
    text: str
    snippet: str
    citation: str
    source: Source

    def to_dict(self) -> dict[str, Any]:
        source = {
            "document_id": self.source.document_id,
            "title": self.source.title,
            "path": self.source.path,
            "rel_path": self.source.rel_path,
            "type": self.source.type,
            "language": self.source.language,
            "page": self.source.page,
            "page_end": self.source.page_end,
            "lines": self.source.lines,
            "heading": self.source.heading,
            "symbol": self.source.symbol,
            "chunk_index": self.source.chunk_index,
            "total_chunks": self.source.total_chunks,
            "tags": self.source.tags,
        }
        return {
            "chunk_id": self.chunk_id,
            "score": round(self.score, 6),
            "score_breakdown": self.score_breakdown,
            "text": self.text,
            "snippet": self.snippet.replace(_HL_OPEN, "").replace(_HL_CLOSE, ""),
            "citation": self.citation,
            "source": source,
        }


@dataclass
class SearchResponse:
    query: str
    mode: str
    results: list[Result]
    total_matches: int
    legs: dict[str, str]
    timings_ms: dict[str, float]
    filters: Filters = field(default_factory=Filters)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "query": self.query,
            "mode": self.mode,
            "results": [r.to_dict() for r in self.results],
            "total_matches": self.total_matches,
            "returned": len(self.results),
            "legs": self.legs,
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
        }


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
            params.append(pick(_timestamp(d) for d in dates))
    if filters.paths:
        clauses.append(
            "(" + " OR ".join("kb_path_match(?, d.rel_path, d.path)" for _ in filters.paths) + ")"
        )
        params.extend(filters.paths)
    return " AND ".join(clauses), params


def _timestamp(date: str) -> float:
    """An ISO date or datetime (local time when no zone is given) as a Unix timestamp."""
    try:
        return datetime.fromisoformat(date.strip()).timestamp()
    except ValueError as exc:
        raise SearchError(f"not a date: {date!r} (use YYYY-MM-DD)") from exc


def leg_label(leg: str) -> str:
    """The leg's key in `score_breakdown` ("fts", "vector"), as the JSON contract names it."""
    return "fts" if leg == "lexical" else leg


def lexical_score(bm25: float) -> float:
    x = -bm25
    return x / (1.0 + abs(x))


def _run_match(
    conn: Connection, table: str, expr: str, filters: Filters, k: int, weights: str
) -> tuple[list[tuple[int, float]], int]:
    where, params = filter_sql(filters)
    if not where:
        # Fastest path: FTS5 alone, and a count that skips scoring.
        rows = conn.execute(
            f"SELECT rowid, bm25({table}{weights}) AS s FROM {table} WHERE {table} MATCH ?"
            " ORDER BY s, rowid LIMIT ?",
            (expr, k),
        ).fetchall()
        total = len(rows)
        if total == k:
            total = conn.execute(
                f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (expr,)
            ).fetchone()[0]
        return [(r[0], lexical_score(r[1])) for r in rows], total
    # bm25() cannot run inside a join or window query: score the matches first.
    sql = (
        f"WITH m AS MATERIALIZED (SELECT rowid AS id, bm25({table}{weights}) AS s FROM {table}"
        f" WHERE {table} MATCH ?)"
        " SELECT m.id, m.s, count(*) OVER () FROM m"
        " JOIN chunks c ON c.id = m.id JOIN documents d ON d.id = c.document_id"
        f" WHERE {where} ORDER BY m.s, m.id LIMIT ?"
    )
    rows = conn.execute(sql, [expr, *params, k]).fetchall()
    total = rows[0][2] if rows else 0
    return [(r[0], lexical_score(r[1])) for r in rows], total


def _cjk_hits(
    conn: Connection, parsed: ParsedQuery, filters: Filters, k: int
) -> tuple[list[tuple[int, float]], int]:
    runs = parsed.cjk_runs()
    long_runs = [r for r in runs if len(r) >= 3]
    short_runs = [r for r in runs if len(r) < 3]
    hits: list[tuple[int, float]] = []
    total = 0
    if long_runs:
        expr = " OR ".join('"' + r + '"' for r in long_runs)
        hits, total = _run_match(conn, "chunks_cjk", expr, filters, k, "")
    if short_runs:
        # Trigrams cannot match one or two characters: scan the (few) CJK chunks instead.
        where, params = filter_sql(filters)
        like = " OR ".join("c.text LIKE ?" for _ in short_runs)
        sql = (
            "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id"
            f" WHERE c.has_cjk = 1 AND ({like})"
            + (f" AND {where}" if where else "")
            + " ORDER BY c.id"
        )
        ids = [r[0] for r in conn.execute(sql, [*(f"%{r}%" for r in short_runs), *params])]
        seen = {cid for cid, _ in hits}
        # Unscored substring hits rank after every BM25 match.
        floor = min((score for _, score in hits), default=1.0) * 0.5
        hits += [(cid, floor) for cid in ids if cid not in seen][: max(0, k - len(hits))]
        total += len([cid for cid in ids if cid not in seen])
    return hits, total


def lexical_leg(conn: Connection, parsed: ParsedQuery, filters: Filters, k: int) -> LegResult:
    expr = parsed.fts_expression()
    if expr is None:
        return LegResult(status="empty")
    weights = "," + ",".join(str(w) for w in BM25_WEIGHTS)
    try:
        hits, total = _run_match(conn, "chunks_fts", expr, filters, k, weights)
    except OperationalError as exc:
        if parsed.raw_fts is not None:
            raise SearchError(f"invalid FTS5 expression {parsed.raw_fts!r}: {exc}") from exc
        raise
    if parsed.cjk_runs() and parsed.raw_fts is None:
        cjk, cjk_total = _cjk_hits(conn, parsed, filters, k)
        best = dict(hits)
        for cid, score in cjk:
            best[cid] = max(score, best.get(cid, 0.0))
        hits = sorted(best.items(), key=lambda h: (-h[1], h[0]))[:k]
        total = max(total, cjk_total, len(best))
    return LegResult(status="ok" if hits else "empty", hits=hits, total=total)


def fuse(legs: dict[str, LegResult], k: int) -> list[tuple[int, float, dict[str, Any]]]:
    """Reciprocal Rank Fusion over the legs that ran, normalised so rank 1 everywhere = 1.0."""
    ran = [name for name, leg in legs.items() if leg.status in ("ok", "empty")]
    if not ran:
        return []
    scores: dict[int, float] = {}
    breakdown: dict[int, dict[str, Any]] = {}
    for name in ran:
        label = leg_label(name)
        for rank, (cid, score) in enumerate(legs[name].hits, start=1):
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (k + rank)
            entry = breakdown.setdefault(cid, {})
            entry[label] = round(score, 6)
            entry[f"{label}_rank"] = rank
    best = len(ran) / (k + 1)
    fused = [(cid, raw / best, breakdown[cid]) for cid, raw in scores.items()]
    fused.sort(key=lambda item: (-item[1], item[0]))
    return fused


def _fill_breakdown(breakdown: dict[str, Any], legs: dict[str, LegResult]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in legs:
        label = leg_label(name)
        out[label] = breakdown.get(label)
        out[f"{label}_rank"] = breakdown.get(f"{label}_rank")
    return out


def _snippets(conn: Connection, expr: str | None, ids: list[int]) -> dict[int, str]:
    if not expr or not ids:
        return {}
    marks = ",".join("?" * len(ids))
    sql = (
        f"SELECT rowid, snippet(chunks_fts, 3, '{_HL_OPEN}', '{_HL_CLOSE}', '…', 24)"
        f" FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid IN ({marks})"
    )
    try:
        return {r[0]: r[1] for r in conn.execute(sql, [expr, *ids])}
    except OperationalError:
        return {}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _lead(text: str, words: int = 24) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + (" …" if len(parts) > words else "")


def citation(rel_path: str, page: int | None, page_end: int | None, lines: list[int] | None) -> str:
    if page is not None:
        return f"{rel_path}#page={page}"
    if lines:
        start, end = lines
        return f"{rel_path}#L{start}" if start == end else f"{rel_path}#L{start}-L{end}"
    return rel_path


def load_results(
    conn: Connection, ranked: list[tuple[int, float, dict[str, Any]]], snippets: dict[int, str]
) -> list[Result]:
    if not ranked:
        return []
    ids = [cid for cid, _, _ in ranked]
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        "SELECT c.id, c.text, c.heading, c.symbol, c.line_start, c.line_end, c.page_start,"
        " c.page_end, c.chunk_index, d.id, d.title, d.path, d.rel_path, d.doc_type, d.language,"
        " d.chunk_count FROM chunks c JOIN documents d ON d.id = c.document_id"
        f" WHERE c.id IN ({marks})",
        ids,
    ).fetchall()
    by_id = {r[0]: r for r in rows}
    tags = document_tags(conn, {r[9] for r in rows})
    results = []
    for cid, score, breakdown in ranked:
        r = by_id.get(cid)
        if r is None:
            continue
        lines = [r[4], r[5]] if r[4] is not None else None
        source = Source(
            document_id=r[9],
            title=r[10],
            path=r[11],
            rel_path=r[12],
            type=r[13],
            language=r[14],
            page=r[6],
            page_end=r[7],
            lines=lines,
            heading=r[2],
            symbol=r[3],
            chunk_index=r[8],
            total_chunks=r[15],
            tags=tags.get(r[9], []),
        )
        results.append(
            Result(
                chunk_id=cid,
                score=score,
                score_breakdown=breakdown,
                text=r[1],
                snippet=snippets.get(cid) or _lead(r[1]),
                citation=citation(r[12], r[6], r[7], lines),
                source=source,
            )
        )
    return results


def document_tags(conn: Connection, document_ids: set[int]) -> dict[int, list[str]]:
    if not document_ids:
        return {}
    marks = ",".join("?" * len(document_ids))
    out: dict[int, list[str]] = {}
    for doc_id, name in conn.execute(
        "SELECT dt.document_id, t.name FROM document_tags dt JOIN tags t ON t.id = dt.tag_id"
        f" WHERE dt.document_id IN ({marks}) ORDER BY t.name",
        list(document_ids),
    ):
        out.setdefault(doc_id, []).append(name)
    return out


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


def allowed_chunks(conn: Connection, filters: Filters) -> set[int] | None:
    """Chunk ids passing the filters (None = no filter), for legs that cannot filter in SQL."""
    if filters.is_empty():
        return None
    where, params = filter_sql(filters)
    sql = f"SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id WHERE {where}"
    return {r[0] for r in conn.execute(sql, params)}


def _vector_leg(
    conn: Connection,
    parsed: ParsedQuery,
    filters: Filters,
    k: int,
    vector: VectorLeg | None,
    unavailable: str | None,
    timings: dict[str, float],
    excluded: set[int] = frozenset(),
) -> LegResult:
    if vector is None:
        return LegResult(status=f"error: {unavailable or 'no embedding model'}")
    if not parsed.text.strip():
        return LegResult(status="empty")
    t0 = time.perf_counter()
    try:
        qvec = vector.embed_query(parsed.text)
        t1 = time.perf_counter()
        # Excluded chunks can take at most len(excluded) places: ask for that many more.
        wanted = min(k + len(excluded), MAX_KNN)
        hits = vector.nearest(conn, qvec, wanted, allowed_chunks(conn, filters))
        hits = [h for h in hits if h[0] not in excluded][:k]
    except Exception as exc:  # noqa: BLE001 - reported in `legs`, the other leg still answers
        return LegResult(status=f"error: {type(exc).__name__}: {_first_line(exc)}")
    timings["embed"] = (t1 - t0) * 1000
    timings["vector"] = (time.perf_counter() - t1) * 1000
    return LegResult(status="ok" if hits else "empty", hits=hits, total=len(hits))


def search(
    conn: Connection,
    query: str,
    options: SearchOptions,
    vector: VectorLeg | None = None,
    vector_unavailable: str | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> SearchResponse:
    """Run one query. Read-only: it never writes to the DB."""
    start = clock()
    if options.mode not in MODES:
        raise SearchError(f"unknown mode {options.mode!r}: use one of {', '.join(MODES)}")
    if options.top < 1:
        raise SearchError("--top must be at least 1")
    parsed = parse_query(query)
    filters = options.filters.merged(parsed.filters)
    if parsed.fts_expression() is None and not parsed.text.strip():
        raise SearchError("nothing to search for: the query has no words")
    k = 3 * options.top
    timings: dict[str, float] = {}
    legs: dict[str, LegResult] = {}
    excluded = excluded_chunks(conn, parsed)
    if options.mode in ("hybrid", "lexical"):
        t0 = clock()
        try:
            leg = lexical_leg(conn, parsed, filters, k)
        except OperationalError as exc:
            if options.mode == "lexical":
                raise SearchError(f"lexical search failed: {_first_line(exc)}") from exc
            leg = LegResult(status=f"error: {_first_line(exc)}")
        if excluded and leg.hits:  # the FTS expression excludes already; CJK hits may not
            leg.hits = [h for h in leg.hits if h[0] not in excluded]
        legs["lexical"] = leg
        timings["lexical"] = (clock() - t0) * 1000
    if options.mode in ("hybrid", "vector"):
        legs["vector"] = _vector_leg(
            conn, parsed, filters, k, vector, vector_unavailable, timings, excluded
        )
    if options.mode == "vector" and legs["vector"].status.startswith("error"):
        raise SearchError(f"vector search unavailable: {legs['vector'].status[7:]}")

    if options.mode == "hybrid":
        ranked = fuse(legs, options.rrf_k)
    else:
        leg = legs[options.mode]
        label = leg_label(options.mode)
        ranked = [
            (cid, score, {label: round(score, 6), f"{label}_rank": rank})
            for rank, (cid, score) in enumerate(leg.hits, start=1)
        ]
    if options.min_score is not None:
        ranked = [item for item in ranked if item[1] >= options.min_score]
    total = _total_matches(conn, legs, parsed, ranked)
    if options.min_score is not None:
        total = min(total, len(ranked))
    ranked = [(cid, s, _fill_breakdown(b, legs)) for cid, s, b in ranked[: options.top]]
    t0 = clock()
    expr = parsed.fts_expression()
    snippets = _snippets(conn, expr, [cid for cid, _, _ in ranked]) if options.snippets else {}
    results = load_results(conn, ranked, snippets)
    timings["fetch"] = (clock() - t0) * 1000
    timings["total"] = (clock() - start) * 1000
    return SearchResponse(
        query=query,
        mode=options.mode,
        results=results,
        total_matches=total,
        legs={name: leg.status for name, leg in legs.items()},
        timings_ms=timings,
        filters=filters,
    )


def _total_matches(
    conn: Connection, legs: dict[str, LegResult], parsed: ParsedQuery, ranked: list
) -> int:
    lexical = legs.get("lexical")
    vector = legs.get("vector")
    if lexical is None:
        return len(ranked)
    total = lexical.total
    if vector and vector.hits:
        lexical_ids = {cid for cid, _ in lexical.hits}
        outside = [cid for cid, _ in vector.hits if cid not in lexical_ids]
        expr = parsed.fts_expression()
        if outside and expr and lexical.total > len(lexical.hits):
            # All matching rowids without scoring is cheap; MATCH with `rowid IN (...)` is not
            # (FTS5 re-runs the query per listed rowid).
            matched = {
                r[0]
                for r in conn.execute(
                    "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (expr,)
                )
            }
            total += sum(1 for cid in outside if cid not in matched)
        else:
            total += len(outside)
    return total
