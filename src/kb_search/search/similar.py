"""`kb similar`: the nearest documents to a document, or the nearest chunks to a chunk."""

from __future__ import annotations

import time

import numpy as np

from kb_search.errors import NotFound
from kb_search.search.results import Candidate, SearchResponse, hydrate
from kb_search.store import retrieval
from kb_search.store.db import Connection
from kb_search.store.vectors import MAX_KNN, fetch_vectors
from kb_search.vectors.index import VectorIndex


def _vectors(conn: Connection, table: str, chunk_ids: list[int]) -> np.ndarray:
    ids, matrix = fetch_vectors(conn, table, chunk_ids)
    if not ids:
        raise NotFound("no vectors stored for it: run `kb reindex`")
    return matrix


def similar_chunks(
    conn: Connection, index: VectorIndex, table: str, chunk_id: int, top: int = 10
) -> SearchResponse:
    start = time.perf_counter()
    if not retrieval.chunk_exists(conn, chunk_id):
        raise NotFound(f"no chunk with id {chunk_id}")
    query = _vectors(conn, table, [chunk_id])[0]
    hits = [h for h in index.nearest(conn, query, top + 1, None) if h[0] != chunk_id][:top]
    return _response(conn, f"similar to chunk {chunk_id}", hits, start)


def similar_documents(
    conn: Connection, index: VectorIndex, table: str, document_id: int, top: int = 10
) -> SearchResponse:
    """Documents ranked by their best chunk's similarity to the document's mean vector."""
    start = time.perf_counter()
    ids = retrieval.document_chunk_ids(conn, document_id)
    if not ids:
        raise NotFound(f"no document with id {document_id}")
    centroid = _vectors(conn, table, ids).mean(axis=0)
    centroid /= np.linalg.norm(centroid) or 1.0
    own = set(ids)
    hits = index.nearest(conn, centroid, min(MAX_KNN, top * 8 + len(ids)), None)
    owners = retrieval.chunk_owners(conn, [cid for cid, _ in hits])
    seen: set[int] = set()
    best: list[tuple[int, float]] = []
    for cid, score in hits:
        doc = owners.get(cid)
        if cid in own or doc is None or doc in seen:
            continue
        seen.add(doc)
        best.append((cid, score))
        if len(best) == top:
            break
    return _response(conn, f"similar to document {document_id}", best, start)


def _response(
    conn: Connection, label: str, hits: list[tuple[int, float]], start: float
) -> SearchResponse:
    candidates = [
        Candidate(cid, score, {"vector": round(score, 6), "vector_rank": rank})
        for rank, (cid, score) in enumerate(hits, start=1)
    ]
    results = hydrate(conn, candidates, {})
    return SearchResponse(
        query=label,
        mode="vector",
        results=results,
        total_matches=len(results),
        legs={"vector": "ok" if results else "empty"},
        timings_ms={"total": (time.perf_counter() - start) * 1000},
    )
