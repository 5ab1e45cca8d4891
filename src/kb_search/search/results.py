"""What a search returns (the JSON contract, `schema_version` 1) and how candidates become
results: rows fetched once, snippets from FTS5, citations."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kb_search.search.query import Filters
from kb_search.store.db import Connection, OperationalError
from kb_search.store.records import StoredChunk, chunks_by_id, document_tags

SCHEMA_VERSION = 1
# Snippet highlight markers: control characters no document text contains. The JSON drops
# them; the terminal turns them into bold.
HL_OPEN, HL_CLOSE = "\x02", "\x03"


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
    navigation: bool = False

    @classmethod
    def from_stored(cls, chunk: StoredChunk, tags: list[str]) -> Source:
        return cls(
            document_id=chunk.document_id,
            title=chunk.title,
            path=chunk.path,
            rel_path=chunk.rel_path,
            type=chunk.doc_type,
            language=chunk.language,
            page=chunk.page,
            page_end=chunk.page_end,
            lines=chunk.lines,
            heading=chunk.heading,
            symbol=chunk.symbol,
            chunk_index=chunk.chunk_index,
            total_chunks=chunk.total_chunks,
            tags=tags,
            navigation=bool(chunk.navigation),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "document_id": self.document_id,
            "title": self.title,
            "path": self.path,
            "rel_path": self.rel_path,
            "type": self.type,
            "language": self.language,
            "page": self.page,
            "page_end": self.page_end,
            "lines": self.lines,
            "heading": self.heading,
            "symbol": self.symbol,
            "chunk_index": self.chunk_index,
            "total_chunks": self.total_chunks,
            "tags": self.tags,
            "navigation": self.navigation,
        }


@dataclass
class Copy:
    """Where else a result's text is: another document's chunk that holds the same text."""

    chunk_id: int
    citation: str
    document_id: int
    title: str
    path: str
    type: str
    page: int | None
    lines: list[int] | None

    @classmethod
    def from_stored(cls, chunk: StoredChunk) -> Copy:
        return cls(
            chunk_id=chunk.chunk_id,
            citation=chunk.citation,
            document_id=chunk.document_id,
            title=chunk.title,
            path=chunk.path,
            type=chunk.doc_type,
            page=chunk.page,
            lines=chunk.lines,
        )

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Result:
    chunk_id: int
    score: float
    score_breakdown: dict[str, Any]
    text: str
    snippet: str  # may hold HL_OPEN/HL_CLOSE around matched words
    citation: str
    source: Source
    found_by: list[list[Any]] = field(default_factory=list)  # [phrasing, leg, rank]
    # the same text in other documents (the guide as PDF and as HTML), grouped under this one
    also_at: list[Copy] = field(default_factory=list)
    # `fresh`, `changed` or `gone`: its file now against the one indexed (search.freshness)
    freshness: str | None = None
    evidence: list[str] | None = None  # search.evidence labels (searches only)

    def to_dict(self, highlights: bool = False) -> dict[str, Any]:
        """The contract's result; `highlights` keeps the snippet's HL_OPEN/HL_CLOSE markers
        (the warm server's reply to the terminal renderer, read back by `from_dict`)."""
        snippet = self.snippet if highlights else _unmarked(self.snippet)
        data = {
            "chunk_id": self.chunk_id,
            "score": round(self.score, 6),
            "score_breakdown": self.score_breakdown,
            "found_by": self.found_by,
            "text": self.text,
            "snippet": snippet,
            "citation": self.citation,
            "source": self.source.to_dict(),
            "also_at": [copy.to_dict() for copy in self.also_at],
            "freshness": self.freshness,
        }
        if self.evidence is not None:
            data["evidence"] = self.evidence
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        return cls(
            chunk_id=data["chunk_id"],
            score=data["score"],
            score_breakdown=data["score_breakdown"],
            text=data["text"],
            snippet=data["snippet"],
            citation=data["citation"],
            source=Source(**data["source"]),
            found_by=data["found_by"],
            also_at=[Copy(**copy) for copy in data.get("also_at", [])],
            freshness=data.get("freshness"),
            evidence=data.get("evidence"),
        )


def _unmarked(snippet: str) -> str:
    return snippet.replace(HL_OPEN, "").replace(HL_CLOSE, "")


@dataclass
class SearchResponse:
    query: str
    mode: str
    results: list[Result]
    total_matches: int
    legs: dict[str, str]
    timings_ms: dict[str, float]
    filters: Filters = field(default_factory=Filters)
    notes: list[str] = field(default_factory=list)
    # the other phrasings searched with the query: {"text", "use", "legs"} each
    variants: list[dict[str, Any]] = field(default_factory=list)
    explanation: Any = None  # kb_search.explain.Explanation, with `--explain PATH`
    coverage: str | None = None  # search.evidence: strong, partial or weak (searches only)
    # with a token budget or a cursor: where the next page starts (None: nothing more), and
    # the budget with the tokens this answer takes
    paged: bool = False
    next_cursor: str | None = None
    budget: dict[str, Any] | None = None
    # {"chunks": N, "embedded": M} of the vector leg's model, when a vector leg ran (in the
    # JSON only while M < N)
    embedding: dict[str, int] | None = None

    def to_dict(self, highlights: bool = False) -> dict[str, Any]:
        """The JSON contract (`highlights`: snippets keep their markers, see Result)."""
        data = {
            "schema_version": SCHEMA_VERSION,
            "query": self.query,
            "variants": self.variants,
            "mode": self.mode,
            "results": [r.to_dict(highlights) for r in self.results],
            "total_matches": self.total_matches,
            "returned": len(self.results),
            "legs": self.legs,
            "notes": self.notes,
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
        }
        if self.coverage is not None:
            data["coverage"] = self.coverage
        if self.paged:
            data["next_cursor"] = self.next_cursor
        if self.budget is not None:
            data["budget"] = self.budget
        if self.embedding is not None and self.embedding["embedded"] < self.embedding["chunks"]:
            data["embedding"] = self.embedding  # only while part of the index lacks vectors
        if self.explanation is not None:
            data["explain"] = self.explanation.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchResponse:
        """A response from its `to_dict` (the warm server's JSON reply): what the terminal
        renderer reads. Filters and an explanation do not travel (`--explain` runs in full)."""
        return cls(
            query=data["query"],
            mode=data["mode"],
            results=[Result.from_dict(r) for r in data["results"]],
            total_matches=data["total_matches"],
            legs=data["legs"],
            timings_ms=data["timings_ms"],
            notes=data["notes"],
            variants=data["variants"],
            coverage=data.get("coverage"),
            paged="next_cursor" in data,
            next_cursor=data.get("next_cursor"),
            budget=data.get("budget"),
            embedding=data.get("embedding"),
        )


@dataclass
class Candidate:
    """A chunk on its way to becoming a result: fused score, per-leg breakdown and, when a
    later stage needs it, the chunk text."""

    chunk_id: int
    score: float
    breakdown: dict[str, Any]
    text: str | None = None
    # [phrasing, leg, rank] of every ranking that found it (phrasing 0 = the query itself)
    found_by: list[list[Any]] = field(default_factory=list)
    # why later stages moved it down or out ("diversity: ..."), for --explain
    cut_by: list[str] = field(default_factory=list)
    # chunks of other documents with the same text, grouped under this one (`also_at`)
    copies: list[int] = field(default_factory=list)


def snippets(conn: Connection, expr: str | None, ids: list[int]) -> dict[int, str]:
    """FTS5 snippets (24 tokens around the matches) for chunks the expression matches."""
    if not expr or not ids:
        return {}
    from kb_search.store.retrieval import fts_snippets

    try:
        return fts_snippets(conn, expr, ids, HL_OPEN, HL_CLOSE)
    except OperationalError as exc:
        if "interrupted" in str(exc):
            raise
        return {}


def lead(text: str, words: int = 24) -> str:
    """The first words of a chunk: the snippet when FTS5 has none."""
    parts = text.split()
    return " ".join(parts[:words]) + (" …" if len(parts) > words else "")


def hydrate(
    conn: Connection, candidates: list[Candidate], snippet_of: dict[int, str]
) -> list[Result]:
    """Results for candidates (in their order); chunks deleted meanwhile are skipped."""
    from kb_search.search.freshness import document_states

    copies = [copy for c in candidates for copy in c.copies]
    stored = chunks_by_id(conn, [c.chunk_id for c in candidates] + copies)
    tags = document_tags(conn, {s.document_id for s in stored.values()})
    states = document_states(conn, {s.document_id for s in stored.values()})
    results = []
    for candidate in candidates:
        chunk = stored.get(candidate.chunk_id)
        if chunk is None:
            continue
        results.append(
            Result(
                chunk_id=chunk.chunk_id,
                score=candidate.score,
                score_breakdown=candidate.breakdown,
                text=chunk.text,
                snippet=snippet_of.get(chunk.chunk_id) or lead(chunk.text),
                citation=chunk.citation,
                source=Source.from_stored(chunk, tags.get(chunk.document_id, [])),
                found_by=candidate.found_by,
                also_at=_once_per_citation([stored[i] for i in candidate.copies if i in stored]),
                freshness=states.get(chunk.document_id),
            )
        )
    return results


def _once_per_citation(chunks: list[StoredChunk]) -> list[Copy]:
    """The copies, one per place (two chunks of one PDF page are one place to look)."""
    seen: set[str] = set()
    copies = []
    for chunk in chunks:
        if chunk.citation not in seen:
            seen.add(chunk.citation)
            copies.append(Copy.from_stored(chunk))
    return copies
