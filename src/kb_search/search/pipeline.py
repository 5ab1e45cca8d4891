"""One search, as named stages with explicit candidate limits:

    retrieve (each leg of each phrasing, `depth` candidates) -> fuse -> with_text (only for a
    reranker) -> rerank (optional) -> promote definitions (identifier queries) -> navigation
    (contents and indexes below content that matches about as well) -> diversify
    (at most a few chunks per file) -> group copies (the same text in other documents) ->
    cut (min_score, top) -> hydrate (rows, snippets, citations)

Each stage is a plain function; `search` runs them in order. Read-only: a search never
writes to the DB.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kb_search.errors import SearchError
from kb_search.sanitize import valid_text
from kb_search.search import budget_tokens, evidence
from kb_search.search.budget_tokens import MAX_OFFSET, read_cursor
from kb_search.search.evidence import WEAK_ADVICE, WEAK_COVERAGE
from kb_search.search.expand import IGNORED, agreeing
from kb_search.search.filters import check_filter_values, excluded_chunks, store_filter
from kb_search.search.freshness import FRESH, stale_note
from kb_search.search.fusion import (
    CROSS_SHARE,
    DEFAULT_FUSION,
    FUSIONS,
    complete_breakdown,
    fuse,
    fuse_rankings,
    rankings_of,
    single_leg,
)
from kb_search.search.legs import LegResult, VectorLeg, first_line, lexical_leg, vector_leg
from kb_search.search.query import (
    DEFAULT_MAX_QUERY_CHARS,
    MAX_FTS_TERMS,
    Filters,
    ParsedQuery,
    Phrasing,
    check_query_length,
    parse_query,
    parse_variants,
)
from kb_search.search.rerank import Reranker, RerankFailed, apply_reranker
from kb_search.search.results import Candidate, Result, SearchResponse, hydrate, snippets
from kb_search.search.shaping import (
    DEFAULT_PER_FILE,
    demote_navigation,
    distinct_scores,
    diversify,
    group_copies,
    identifiers,
    name_copies,
    promote_definitions,
)
from kb_search.store.chunk_filter import ChunkFilter
from kb_search.store.db import Connection, OperationalError
from kb_search.store.retrieval import index_stamp
from kb_search.store.vectors import embedding_coverage, without_vectors

MODES = ("hybrid", "lexical", "vector")
RAN = ("ok", "empty")  # leg states of a leg that ran


@dataclass
class SearchOptions:
    mode: str = "hybrid"
    top: int = 10
    filters: Filters = field(default_factory=Filters)
    min_score: float | None = None
    rrf_k: int = 60
    fusion: str = DEFAULT_FUSION  # how hybrid combines the legs: "convex" or "rrf"
    snippets: bool = True  # evaluation turns them off: it only needs the ranking
    reranker: Reranker | None = None
    rerank_depth: int = 30
    deadline: float | None = None  # time.monotonic() past which the rerank stage stops
    leg_depth: int = 100
    max_query_chars: int = DEFAULT_MAX_QUERY_CHARS
    # True once the search must stop (its budget spent, its client gone): checked between
    # stages; SQLite's progress handler checks it within them.
    should_stop: Callable[[], bool] | None = None
    # More phrasings of the same request ("lex: ..." mainly keywords, "vec: ..." mainly meaning)
    variants: tuple[str, ...] = ()
    # How many of the last variants a chat model wrote (`--expand`): each counts only when it
    # agrees with the question (search.expand.agreeing)
    expanded: int = 0
    # At most this many chunks of one file in the ranking before the others (0: no cap);
    # `files`: each file once, with its best chunk.
    per_file: int = DEFAULT_PER_FILE
    files: bool = False
    # A token budget for the printed answer (cut between chunks) and a cursor from an earlier
    # page of the same search (search.budget_tokens); `fields`: the projection the answer is
    # printed in (None: the full contract), which the budget counts.
    max_tokens: int | None = None
    cursor: str | None = None
    fields: tuple[str, ...] | None = None

    def depth(self) -> int:
        """Candidates each leg retrieves: fixed, so that the top 3 of a query is always the
        prefix of its top 10 (it grows only when more results than that are asked for)."""
        return max(self.leg_depth, self.top)


@dataclass
class Cut:
    """Candidates a stage removed, and why (`--explain` reads these)."""

    stage: str
    reason: str
    chunk_ids: set[int]


@dataclass
class Trace:
    """What the stages saw, kept only when asked (`--explain`): each leg's hits, the fused
    (and reranked) ranking, and the cuts. A new stage that drops candidates adds its Cut."""

    legs: dict[str, LegResult] = field(default_factory=dict)
    ranked: list[Candidate] = field(default_factory=list)
    cuts: list[Cut] = field(default_factory=list)
    query: Query | None = None


@dataclass
class Query:
    """A query on its way through the stages."""

    text: str
    parsed: ParsedQuery
    filters: Filters
    chunk_filter: ChunkFilter  # the filters as store filters by, built once
    excluded: set[int]
    variants: list[tuple[Phrasing, ParsedQuery]] = field(default_factory=list)
    filter_notes: list[str] = field(default_factory=list)  # how a filter value was read


def prepare(conn: Connection, query: str, options: SearchOptions) -> Query:
    if options.mode not in MODES:
        raise SearchError(f"unknown mode {options.mode!r}: use one of {', '.join(MODES)}")
    if options.fusion not in FUSIONS:
        raise SearchError(f"unknown fusion {options.fusion!r}: use one of {', '.join(FUSIONS)}")
    if options.top < 1:
        raise SearchError("--top must be at least 1")
    check_query_length(query, options.max_query_chars)
    for variant in options.variants:
        check_query_length(variant, options.max_query_chars)
    variants = [(v, parse_query(v.text)) for v in parse_variants(options.variants)]
    parsed = parse_query(query)
    if parsed.fts_expression() is None and not parsed.text.strip():
        raise SearchError("nothing to search for: the query has no words")
    filters = options.filters.merged(parsed.filters).cleaned()
    filter_notes = check_filter_values(conn, filters)
    try:
        excluded = excluded_chunks(conn, parsed)
    except OperationalError as exc:
        raise SearchError(
            f"cannot apply the exclusions ({first_line(exc)}): check the index with `kb doctor`"
        ) from exc
    chunk_filter = store_filter(filters)
    return Query(query, parsed, filters, chunk_filter, excluded, variants, filter_notes)


def retrieve(
    conn: Connection,
    query: Query,
    options: SearchOptions,
    vector: VectorLeg | None,
    vector_unavailable: str | None,
    timings: dict[str, float],
) -> dict[str, LegResult]:
    """Run the legs the mode needs, each for `options.depth()` candidates."""
    k = options.depth()
    legs: dict[str, LegResult] = {}
    if options.mode in ("hybrid", "lexical"):
        t0 = time.perf_counter()
        try:
            legs["lexical"] = lexical_leg(conn, query.parsed, query.chunk_filter, k, query.excluded)
        except OperationalError as exc:
            if options.mode == "lexical":
                raise SearchError(f"lexical search failed: {first_line(exc)}") from exc
            legs["lexical"] = LegResult(status=f"error: {first_line(exc)}")
        timings["lexical"] = (time.perf_counter() - t0) * 1000
    if options.mode in ("hybrid", "vector"):
        legs["vector"] = vector_leg(
            conn, query.parsed, query.chunk_filter, k, vector, vector_unavailable, timings,
            query.excluded,
        )  # fmt: skip
        if options.mode == "vector" and legs["vector"].status.startswith("error"):
            raise SearchError(f"vector search unavailable: {legs['vector'].status[7:]}")
    return legs


def retrieve_variants(
    conn: Connection,
    query: Query,
    options: SearchOptions,
    vector: VectorLeg | None,
    vector_unavailable: str | None,
    timings: dict[str, float],
) -> list[dict[str, LegResult]]:
    """Each variant's legs: those its type and the mode allow. A variant's leg that fails is
    reported, never fatal (the query's own legs decide that)."""
    t0 = time.perf_counter()
    k = options.depth()
    out: list[dict[str, LegResult]] = []
    for phrasing, parsed in query.variants:
        legs: dict[str, LegResult] = {}
        # a typed phrasing searches its other leg too, weakly (fusion.CROSS_SHARE)
        if options.mode != "vector" and (phrasing.searches("lexical") or CROSS_SHARE > 0):
            try:
                legs["lexical"] = lexical_leg(conn, parsed, query.chunk_filter, k, query.excluded)
            except (OperationalError, SearchError) as exc:
                legs["lexical"] = LegResult(status=f"error: {first_line(exc)}")
        if options.mode != "lexical" and (phrasing.searches("vector") or CROSS_SHARE > 0):
            legs["vector"] = vector_leg(
                conn, parsed, query.chunk_filter, k, vector, vector_unavailable, {}, query.excluded
            )
        out.append(legs)
    if query.variants:
        timings["variants"] = (time.perf_counter() - t0) * 1000
    return out


def combine(
    legs: dict[str, LegResult],
    options: SearchOptions,
    variant_legs: list[dict[str, LegResult]] | None = None,
    uses: list[str] | None = None,
    unembedded: frozenset[int] = frozenset(),
) -> list[Candidate]:
    """Fuse the legs (hybrid) or take the one leg's ranking; with variants, every phrasing's
    legs are fused into one ranking (in a one-leg mode, that leg's rankings). `unembedded`:
    candidates with no vector yet (fusion.py: fused over the lexical rankings alone)."""
    if any(variant_legs or []):
        rankings = rankings_of(legs, 0)
        for number, found in enumerate(variant_legs or [], start=1):
            use = uses[number - 1] if uses else "both"
            rankings += rankings_of(found, number, use)
        return fuse_rankings(rankings, options.rrf_k, options.fusion, unembedded)
    if options.mode == "hybrid":
        return fuse(legs, options.rrf_k, options.fusion, unembedded)
    return single_leg(legs, options.mode)


def unembedded_candidates(
    conn: Connection, embedding: dict[str, int] | None, found: list[dict[str, LegResult]]
) -> frozenset[int]:
    """The keyword candidates that have no vector yet, while the index is partly embedded
    (none once every chunk has its vector: the fusion is then exactly the full one)."""
    if embedding is None or embedding["embedded"] >= embedding["chunks"]:
        return frozenset()
    by_meaning = {cid for legs in found for cid, _ in legs.get("vector", LegResult("")).hits}
    by_words = {cid for legs in found for cid, _ in legs.get("lexical", LegResult("")).hits}
    return frozenset(without_vectors(conn, by_words - by_meaning))


def with_text(conn: Connection, candidates: list[Candidate], limit: int) -> list[Candidate]:
    """Load the text of the first `limit` candidates as a reranker reads it: the chunk with its
    title and heading line in front, as the embedding model sees it."""
    from kb_search.store.documents import embedding_texts

    head = [c for c in candidates[:limit] if c.text is None]
    if head:
        texts = dict(embedding_texts(conn, [c.chunk_id for c in head]))
        for candidate in head:
            candidate.text = texts.get(candidate.chunk_id, "")
    return candidates


def above_min_score(candidates: list[Candidate], options: SearchOptions) -> list[Candidate]:
    if options.min_score is None:
        return candidates
    return [c for c in candidates if c.score >= options.min_score]


def total_matches(legs: dict[str, LegResult]) -> int:
    """Chunks that contain the query's words (all the lexical leg matched, after filters, not
    only its candidates); with no lexical leg (vector mode), the candidates it ranked."""
    lexical = legs.get("lexical")
    if lexical is not None:
        return lexical.total
    return sum(len(leg.hits) for leg in legs.values())


def explain(
    query: Query, legs: dict[str, LegResult], options: SearchOptions, dropped: int
) -> list[str]:
    """What a reader of the results should know: a leg that found nothing, a keyword match on
    common words only, results removed by --min-score."""
    notes = list(query.filter_notes)
    lexical, vector = legs.get("lexical"), legs.get("vector")
    if lexical is not None and lexical.status == "empty" and vector and vector.hits:
        notes.append("no chunk contains the query's words: results are ranked by meaning alone")
    elif lexical is not None and lexical.hits and query.parsed.only_stopwords():
        notes.append(
            "the query's words are all common ones: keyword matches say little, phrase it with"
            " the words the answer would use"
        )
    if query.parsed.left_out:
        notes.append(
            f"not searched for: {query.parsed.left_out!r} (the request excludes"
            " it); to drop chunks that contain a word, put -word in the query"
        )
    if dropped:
        notes.append(f"{dropped} more results scored under --min-score {options.min_score}")
    left_out = query.parsed.terms_left_out()
    if left_out:
        notes.append(
            f"keyword search used the first {MAX_FTS_TERMS} distinct words; {left_out} more"
            " were left out"
        )
    return notes


class Stopped(SearchError):
    """The search was stopped between two stages (budget spent, or its client gone)."""


def stop_if_asked(options: SearchOptions, stage: str) -> None:
    if options.should_stop is not None and options.should_stop():
        raise Stopped(f"search stopped before {stage}")


def record_trace(
    trace: Trace,
    query: Query,
    legs: dict[str, LegResult],
    ranked: list[Candidate],
    grouped: list[Candidate],
    passing: list[Candidate],
    top: list[Candidate],
    options: SearchOptions,
) -> None:
    trace.query, trace.legs, trace.ranked = query, legs, list(ranked)
    kept = {c.chunk_id for c in passing}
    floor = options.min_score
    below = {c.chunk_id for c in ranked if floor is not None and c.score < floor}
    if below:
        trace.cuts.append(Cut("min_score", f"scored under --min-score {options.min_score}", below))
    shown = {c.chunk_id for c in top}
    trace.cuts.append(Cut("top", f"ranked below the top {options.top}", kept - shown))
    copies = {chunk_id for c in grouped for chunk_id in c.copies}
    if copies:
        trace.cuts.append(Cut("copies", "the same text as a higher result", copies))


def search(
    conn: Connection,
    query: str,
    options: SearchOptions,
    vector: VectorLeg | None = None,
    vector_unavailable: str | None = None,
    clock: Callable[[], float] = time.perf_counter,
    trace: Trace | None = None,
) -> SearchResponse:
    """Run one query through every stage (recording them in `trace` when one is given)."""
    start = clock()
    query = valid_text(query)
    prepared = prepare(conn, query, options)
    timings: dict[str, float] = {}
    stop_if_asked(options, "retrieval")
    legs = retrieve(conn, prepared, options, vector, vector_unavailable, timings)
    stop_if_asked(options, "fusion")
    variant_legs = retrieve_variants(conn, prepared, options, vector, vector_unavailable, timings)
    uses = [phrasing.use for phrasing, _ in prepared.variants]
    fused_legs, ignored = variant_legs, set()
    if options.expanded:
        fused_legs, ignored = agreeing(legs, variant_legs, options.expanded, uses)
    embedding = vector_coverage(conn, legs)
    unembedded = unembedded_candidates(conn, embedding, [legs, *fused_legs])
    candidates = combine(legs, options, fused_legs, uses, unembedded)
    rerank_note = None
    if options.reranker is not None:
        stop_if_asked(options, "rerank")
        t0 = clock()
        candidates, rerank_note = rerank(conn, query, candidates, options)
        timings["rerank"] = (clock() - t0) * 1000
    if options.mode != "vector":
        candidates = promote_definitions(conn, candidates, identifier_terms(prepared))
    candidates = demote_navigation(conn, candidates)
    candidates = diversify(conn, candidates, options.per_file, options.files)
    grouped = group_copies(conn, candidates, options.per_file, options.files)
    passing = above_min_score(grouped, options)
    key = search_key(conn, prepared, options) if options.cursor or options.max_tokens else ""
    offset = read_cursor(options.cursor, key) if options.cursor else 0
    top = name_copies(conn, page_from(passing, offset, options))
    if trace is not None:
        record_trace(trace, prepared, legs, candidates, grouped, passing, top, options)
    dropped = min(options.top, len(candidates)) - len(passing[: options.top])
    for candidate in top:
        candidate.breakdown = complete_breakdown(candidate.breakdown, legs)
    stop_if_asked(options, "fetching the results")
    t0 = clock()
    results = fetch(conn, prepared, top, options)
    timings["fetch"] = (clock() - t0) * 1000
    ran = sum(1 for found in [legs, *variant_legs] for leg in found.values() if leg.status in RAN)
    coverage = annotate_evidence(results, prepared, options, ran) if offset == 0 else None
    notes = explain(prepared, legs, options, dropped) + ([rerank_note] if rerank_note else [])
    notes += closing_notes(results, embedding, coverage, options)
    response = SearchResponse(
        query=query,
        mode=options.mode,
        results=results,
        total_matches=total_matches(legs),
        legs={name: leg.status for name, leg in legs.items()},
        timings_ms=timings,
        filters=prepared.filters,
        notes=notes,
        embedding=embedding,
        variants=variant_report(prepared, variant_legs, ignored),
        coverage=coverage,
    )
    if options.cursor or options.max_tokens:
        page(response, options, offset, len(passing), key)
    timings["total"] = (clock() - start) * 1000
    return response


def page_from(passing: list[Candidate], offset: int, options: SearchOptions) -> list[Candidate]:
    """The `top` results from `offset` (a cursor's); fused scores made distinct (one leg's
    score is its own)."""
    top = passing[: offset + options.top]
    if options.mode == "hybrid" and options.reranker is None:
        top = distinct_scores(top)
    return top[offset:]


def fetch(
    conn: Connection, prepared: Query, top: list[Candidate], options: SearchOptions
) -> list[Result]:
    """The shown results' rows, with snippets when asked for."""
    snippet_of = {}
    if options.snippets:
        snippet_of = snippets(conn, prepared.parsed.fts_expression(), [c.chunk_id for c in top])
    return hydrate(conn, top, snippet_of)


def rerank(
    conn: Connection, query: str, candidates: list[Candidate], options: SearchOptions
) -> tuple[list[Candidate], str | None]:
    """The reranker's order of the first `rerank_depth` candidates (their text loaded first);
    a reranker that fails leaves the fused order, and the note says so."""
    assert options.reranker is not None
    candidates = with_text(conn, candidates, options.rerank_depth)
    try:
        return apply_reranker(
            options.reranker, query, candidates, options.rerank_depth, options.deadline
        ), None
    except RerankFailed as exc:
        return candidates, f"not reranked, results in fused order: {exc}"


def closing_notes(
    results: list[Result],
    embedding: dict[str, int] | None,
    coverage: str | None,
    options: SearchOptions,
) -> list[str]:
    """What the answer says after the results: chunks without vectors, stale files, and
    what to do about weak evidence."""
    notes = coverage_notes(embedding)
    stale = stale_note(r.freshness or FRESH for r in results)
    if stale:
        notes.append(stale)
    if coverage == WEAK_COVERAGE and options.mode == "hybrid":
        notes.append(WEAK_ADVICE)
    return notes


def variant_report(
    prepared: Query, variant_legs: list[dict[str, LegResult]], ignored: set[int]
) -> list[dict[str, Any]]:
    """Each phrasing as the response lists it: its text and use, how each of its legs ran, and
    whether it was ignored (an expanded phrasing that found nothing the query agrees with)."""
    return [
        phrasing.to_dict()
        | {"legs": {name: leg.status for name, leg in found.items()}}
        | ({"ignored": IGNORED} if number in ignored else {})
        for number, ((phrasing, _), found) in enumerate(
            zip(prepared.variants, variant_legs), start=1
        )
    ]


def search_key(conn: Connection, query: Query, options: SearchOptions) -> str:
    """What a cursor is bound to: everything that makes this ranking, and the index state."""
    return budget_tokens.search_key(
        {
            "query": query.text,
            "variants": options.variants,
            "mode": options.mode,
            "filters": repr(query.filters),
            "shape": [options.per_file, options.files, options.min_score],
            "fusion": [options.fusion, options.rrf_k, options.leg_depth],
            "rerank": getattr(options.reranker, "name", None),
            "index": index_stamp(conn),
        }
    )


def page(
    response: SearchResponse, options: SearchOptions, offset: int, ranked: int, key: str
) -> None:
    """Cut the results to the token budget (between chunks) and say where the next page
    starts: `next_cursor`, None when the ranking has no more."""
    from kb_search.search.fields import project

    response.paged = True
    ranked_results = response.results

    def printed(kept: int) -> dict[str, Any]:
        response.results = ranked_results[:kept]
        end = offset + kept
        more = kept and end < min(ranked, MAX_OFFSET)
        response.next_cursor = budget_tokens.make_cursor(end, key) if more else None
        return project(response, options.fields)

    if not options.max_tokens:
        printed(len(ranked_results))
        return
    response.budget = {
        "max_tokens": options.max_tokens,
        "tokens": options.max_tokens,
        "counted_with": budget_tokens.tokenizer_name(),
    }
    full = printed(len(ranked_results))
    envelope = full | {"results": [], "next_cursor": budget_tokens.make_cursor(MAX_OFFSET, key)}
    kept, _ = budget_tokens.fit(full["results"], envelope, options.max_tokens)
    # the estimate per row is close, not exact: the answer as printed decides
    while True:
        used = budget_tokens.json_tokens(printed(kept))
        if used <= options.max_tokens or kept <= 1:
            break
        kept -= 1
    response.budget["tokens"] = used


def annotate_evidence(
    results: list[Result], query: Query, options: SearchOptions, rankings: int
) -> str | None:
    """Each result's evidence labels; the answer's coverage (hybrid only: a one-leg mode has
    no second leg to agree)."""
    keywords = [p.text for p, _ in query.variants if p.use == "lexical"]
    exact = evidence.phrases(query.parsed.text, keywords)
    phrasings = 1 + len(query.variants)
    for result in results:
        result.evidence = evidence.labels(
            result.found_by, result.score_breakdown, result.text, exact, phrasings
        )
    if options.mode != "hybrid":
        return None
    first = results[0] if results else None
    hit = None if first is None else (first.found_by, first.evidence or [])
    return evidence.coverage(hit, rankings)


def vector_coverage(conn: Connection, legs: dict[str, LegResult]) -> dict[str, int] | None:
    """How many chunks the vector leg could rank (those with a vector yet), when it ran."""
    leg = legs.get("vector")
    if leg is None or leg.status.startswith("error"):
        return None
    counts = embedding_coverage(conn)
    return None if counts is None else {"chunks": counts[0], "embedded": counts[1]}


def coverage_notes(coverage: dict[str, int] | None) -> list[str]:
    """A vector leg over part of the index (an ingest is still embedding) says so."""
    if coverage is None or coverage["embedded"] >= coverage["chunks"]:
        return []
    return [
        f"vector leg: {coverage['embedded']:,} of {coverage['chunks']:,} chunks embedded (the"
        " rest are found by keywords only until `kb add`/`kb sync` finishes embedding them)"
    ]


def identifier_terms(query: Query) -> list[str]:
    """The identifier-shaped words of the query and of its keyword variants."""
    texts = [query.text] + [p.text for p, _ in query.variants if p.searches("lexical")]
    return list(dict.fromkeys(name for text in texts for name in identifiers(text)))
