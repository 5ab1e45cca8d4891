"""The retrieval legs: lexical (FTS5 BM25, plus trigram/substring hits for CJK) and vector.

A leg returns its best `k` chunks with scores in [0, 1] and a status: `ok`, `empty` (it ran
and found nothing) or `error: why` (it could not run; the other leg still answers)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from kb_search.cjk import kanji_variants
from kb_search.errors import KbError, SearchError
from kb_search.search.filters import allowed_chunks
from kb_search.search.query import ParsedQuery
from kb_search.store import retrieval
from kb_search.store.chunk_filter import ChunkFilter
from kb_search.store.db import Connection, OperationalError
from kb_search.store.vectors import MAX_KNN

# BM25 column weights: title, path, heading, body.
BM25_WEIGHTS = (3.0, 1.5, 2.0, 1.0)

Hits = list[tuple[int, float]]  # (chunk_id, score), best first


@dataclass
class LegResult:
    status: str  # "ok", "empty" or "error: ..."
    hits: Hits = field(default_factory=list)
    total: int = 0  # matches in all (lexical), not only the `hits` returned


class VectorLeg(Protocol):
    """Nearest chunks to a query; see kb_search.vectors.index.VectorSearch."""

    def embed_query(self, text: str) -> Any: ...

    def nearest(self, conn: Connection, vector: Any, k: int, allowed: set[int] | None) -> Hits: ...


def leg_label(leg: str) -> str:
    """The leg's key in `score_breakdown` ("fts", "vector"), as the JSON contract names it."""
    return "fts" if leg == "lexical" else leg


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def lexical_score(bm25: float) -> float:
    x = -bm25
    return x / (1.0 + abs(x))


def _run_match(
    conn: Connection, table: str, expr: str, chunk_filter: ChunkFilter, k: int, weights: str
) -> tuple[Hits, int]:
    rows, total = retrieval.bm25_matches(conn, table, expr, weights, k, chunk_filter)
    return [(cid, lexical_score(bm25)) for cid, bm25 in rows], total


# Trigrams of a query's longer CJK runs searched beside the runs: a sentence typed without
# spaces (宮沢賢治の序の詩) is rarely in the text whole, but most of its trigrams are, and
# BM25 over them ranks the passages holding most of them (a whole match holds them all).
MIN_RUN_FOR_TRIGRAMS = 5
MAX_TRIGRAMS = 48


def trigrams(runs: list[str]) -> list[str]:
    """The distinct trigrams of the runs of MIN_RUN_FOR_TRIGRAMS or more characters, at most
    MAX_TRIGRAMS, in order."""
    grams = [
        run[i : i + 3]
        for run in runs
        if len(run) >= MIN_RUN_FOR_TRIGRAMS
        for i in range(len(run) - 2)
    ]
    return list(dict.fromkeys(g for g in grams if g not in runs))[:MAX_TRIGRAMS]


def _cjk_hits(
    conn: Connection, parsed: ParsedQuery, chunk_filter: ChunkFilter, k: int
) -> tuple[Hits, int]:
    # Each run in every spelling of its kanji (old and new forms): the text may use the other.
    runs = [form for run in parsed.cjk_runs() for form in kanji_variants(run)]
    long_runs = [r for r in runs if len(r) >= 3]
    long_runs += trigrams(long_runs)
    short_runs = [r for r in runs if len(r) < 3]
    hits: Hits = []
    total = 0
    if long_runs:
        expr = " OR ".join('"' + r + '"' for r in long_runs)
        hits, total = _run_match(conn, "chunks_cjk", expr, chunk_filter, k, "")
    if short_runs:
        # Trigrams cannot match one or two characters: scan the (few) CJK chunks instead.
        ids = retrieval.cjk_substring_ids(conn, short_runs, chunk_filter)
        seen = {cid for cid, _ in hits}
        # Unscored substring hits rank after every BM25 match.
        floor = min((score for _, score in hits), default=1.0) * 0.5
        hits += [(cid, floor) for cid in ids if cid not in seen][: max(0, k - len(hits))]
        total += len([cid for cid in ids if cid not in seen])
    return hits, total


def lexical_leg(
    conn: Connection, parsed: ParsedQuery, chunk_filter: ChunkFilter, k: int, excluded: set[int]
) -> LegResult:
    expr = parsed.fts_expression()
    if expr is None:
        return LegResult(status="empty")
    weights = "," + ",".join(str(w) for w in BM25_WEIGHTS)
    try:
        hits, total = _run_match(conn, "chunks_fts", expr, chunk_filter, k, weights)
    except OperationalError as exc:
        if parsed.raw_fts is not None:
            raise SearchError(f"invalid FTS5 expression {parsed.raw_fts!r}: {exc}") from exc
        raise
    if parsed.cjk_runs() and parsed.raw_fts is None:
        cjk, cjk_total = _cjk_hits(conn, parsed, chunk_filter, k)
        best = dict(hits)
        for cid, score in cjk:
            best[cid] = max(score, best.get(cid, 0.0))
        hits = sorted(best.items(), key=lambda h: (-h[1], h[0]))[:k]
        total = max(total, cjk_total, len(best))
    if excluded and hits:  # the FTS expression excludes already; CJK hits may not
        hits = [h for h in hits if h[0] not in excluded]
    return LegResult(status="ok" if hits else "empty", hits=hits, total=total)


def vector_leg(
    conn: Connection,
    parsed: ParsedQuery,
    chunk_filter: ChunkFilter,
    k: int,
    vector: VectorLeg | None,
    unavailable: str | None,
    timings: dict[str, float],
    excluded: set[int],
) -> LegResult:
    if vector is None:
        return LegResult(status=f"error: {unavailable or 'no embedding model'}")
    if not parsed.text.strip():
        return LegResult(status="empty")
    t0 = time.perf_counter()
    try:
        import numpy as np  # only the vector leg needs it: a lexical search stays light

        qvec = vector.embed_query(parsed.text)
        t1 = time.perf_counter()
        if not np.isfinite(qvec).all() or not np.any(qvec):
            # No direction to compare (punctuation alone, for some embedders): no meaning to
            # rank by, rather than every chunk at a NaN or 0 score.
            return LegResult(status="empty")
        # Excluded chunks can take at most len(excluded) places: ask for that many more.
        wanted = min(k + len(excluded), MAX_KNN)
        hits = vector.nearest(conn, qvec, wanted, allowed_chunks(conn, chunk_filter))
        hits = [h for h in hits if h[0] not in excluded][:k]
    except KbError as exc:  # already in our words
        return LegResult(status=f"error: {first_line(exc)}")
    except Exception as exc:  # noqa: BLE001 - reported in `legs`, the other leg still answers
        return LegResult(status=f"error: {type(exc).__name__}: {first_line(exc)}")
    timings["embed"] = (t1 - t0) * 1000
    timings["vector"] = (time.perf_counter() - t1) * 1000
    return LegResult(status="ok" if hits else "empty", hits=hits, total=len(hits))
