"""Any query string and any filter value: a KbError with one line, or an answer that keeps
every invariant (scores in 0..1 and sorted, top N a prefix of top M, citations of real chunks,
JSON valid against the schema and valid UTF-8, filters honoured)."""

from __future__ import annotations

import math

from fuzz_invariants import check_kb_error, check_response
from fuzz_strategies import filter_lists, queries
from hypothesis import example, given
from hypothesis import strategies as st

from kb_search.errors import KbError
from kb_search.search.query import Filters, date_timestamp
from kb_search.store.globs import path_matches

MODES = ["lexical", "hybrid", "vector"]


def run(kb, query, **options):
    """The response, or None when the query was refused with a clean KbError."""
    try:
        return kb.search(query, kb.search_options(**options))
    except KbError as exc:
        check_kb_error(exc)
        return None
    except Exception as exc:  # noqa: BLE001 - anything else is the bug this suite looks for
        check_kb_error(exc)


@given(query=queries, mode=st.sampled_from(MODES))
@example(query="git \udcff NEAR( title: \x00", mode="lexical")
@example(query="'NEAR(git'", mode="hybrid")
@example(query="-git", mode="hybrid")
@example(query="the of a", mode="lexical")
@example(query='"' * 5, mode="vector")
@example(query="path:" + "*" * 40 + "#", mode="lexical")
def test_any_query_answers_or_refuses_in_one_line(corpus_kb, query, mode):
    conn = corpus_kb.reader()
    small = run(corpus_kb, query, mode=mode, top=3)
    large = run(corpus_kb, query, mode=mode, top=10)
    assert (small is None) == (large is None), "top 3 refused but top 10 answered (or back)"
    if small is None:
        return
    few = check_response(conn, small, 3)
    many = check_response(conn, large, 10)
    assert [r["chunk_id"] for r in few["results"]] == [
        r["chunk_id"] for r in many["results"][: len(few["results"])]
    ], "top 3 is not the prefix of top 10"
    assert len(few["results"]) == min(3, len(many["results"]))


@given(
    types=filter_lists, tags=filter_lists, paths=filter_lists, languages=filter_lists,
    after=filter_lists, before=filter_lists, mode=st.sampled_from(MODES),
    query=st.sampled_from(["git install", "pasta", "東京", "backups", "hook", "the"]),
)  # fmt: skip
@example(types=[], tags=[], paths=["[z-a]"], languages=[], after=[], before=[], mode="lexical",
         query="git")  # fmt: skip
@example(types=[], tags=[], paths=[], languages=[], after=["0001-01-01"], before=["9999-12-31"],
         mode="hybrid", query="git")  # fmt: skip
def test_any_filter_value_is_honoured_or_refused(
    corpus_kb, types, tags, paths, languages, after, before, mode, query
):
    filters = Filters(types, tags, paths, languages, after, before)
    response = run(corpus_kb, query, mode=mode, top=20, filters=filters)
    if response is None:
        return
    conn = corpus_kb.reader()
    data = check_response(conn, response, 20)
    clean = response.filters
    for result in data["results"]:
        source = result["source"]
        doc = conn.execute(
            "SELECT doc_type, language, mtime FROM documents WHERE id = ?",
            (source["document_id"],),
        ).fetchone()
        if clean.types:
            assert doc[0] in [t.lower() for t in clean.types]
        if clean.languages:
            assert (doc[1] or "").lower() in [x.lower() for x in clean.languages]
        if clean.tags:
            assert set(source["tags"]) & set(clean.tags)
        if clean.paths:
            assert any(path_matches(p, source["rel_path"], source["path"]) for p in clean.paths)
        if clean.after:
            assert doc[2] >= max(date_timestamp(d) for d in clean.after)
        if clean.before:
            assert doc[2] < min(date_timestamp(d) for d in clean.before)
            assert not math.isnan(doc[2])


def test_unfiltered_queries_find_the_corpus(corpus_kb):
    """The properties above are not vacuous: the corpus answers ordinary queries."""
    for query in ("git install", "東京", "pasta", "مرحبا"):
        response = corpus_kb.search(query, corpus_kb.search_options(mode="lexical"))
        assert response.results, query
