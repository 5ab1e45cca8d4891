import pytest

from kb_search.cjk import MAX_FORMS, kanji_variants
from kb_search.errors import SearchError
from kb_search.parsed import ParsedChunk, ParsedDocument
from kb_search.search.fusion import fuse
from kb_search.search.legs import LegResult
from kb_search.search.pipeline import SearchOptions, search
from kb_search.search.query import Filters
from kb_search.store.documents import DocumentRecord, write_document


def add(conn, path, title, texts, doc_type="markdown", language=None, tags=(), heading=None):
    chunks = [
        ParsedChunk(
            text=t, heading=heading, line_start=10 * i + 1, line_end=10 * i + 9, token_count=5
        )
        for i, t in enumerate(texts)
    ]
    parsed = ParsedDocument(title=title, doc_type=doc_type, chunks=chunks, language=language)
    rel = path.lstrip("/")
    return write_document(
        conn, DocumentRecord(path=path, rel_path=rel, content_hash=path), parsed, tags
    )


@pytest.fixture
def kbconn(conn):
    add(
        conn,
        "/kb/docs/git.md",
        "Git Admin Guide",
        ["Install git from source with make.", "Hooks reject force pushes."],
        tags=["git"],
    )
    add(
        conn,
        "/kb/docs/http.md",
        "HTTP retries",
        ["Retry transient errors with exponential backoff."],
        tags=["http"],
    )
    add(
        conn,
        "/kb/code/retry.py",
        "retry.py",
        ["def retry(fn): backoff and retry the call"],
        doc_type="code",
        language="python",
    )
    add(conn, "/kb/notes/tokyo.txt", "Tokyo", ["東京タワーは夜景がきれいです。"], doc_type="text")
    add(
        conn,
        "/kb/docs/deep/draft.md",
        "Draft retry notes",
        ["retry draft: do not publish"],
        tags=["draft"],
    )
    return conn


def lexical(conn, query, **kw):
    return search(conn, query, SearchOptions(mode="lexical", **kw))


def test_ranked_with_scores_in_unit_interval(kbconn):
    res = lexical(kbconn, "retry backoff")
    assert res.results, res
    scores = [r.score for r in res.results]
    assert scores == sorted(scores, reverse=True)
    assert all(0 < s < 1 for s in scores)
    assert res.results[0].source.title in {"HTTP retries", "retry.py"}
    assert res.legs == {"lexical": "ok"}
    assert res.total_matches == 3
    top = res.results[0]
    assert top.score_breakdown["fts_rank"] == 1
    assert top.citation.endswith("#L1-L9")


def test_title_weight_beats_body(kbconn):
    # "git" is in the title of one document and nowhere in the body of the others
    res = lexical(kbconn, "guide")
    assert res.results[0].source.title == "Git Admin Guide"


def test_filters(kbconn):
    by_type = lexical(kbconn, "retry", filters=Filters(types=["code"]))
    assert [r.source.type for r in by_type.results] == ["code"]
    by_tag = lexical(kbconn, "retry", filters=Filters(tags=["draft"]))
    assert [r.source.title for r in by_tag.results] == ["Draft retry notes"]
    by_lang = lexical(kbconn, "retry", filters=Filters(languages=["Python"]))
    assert [r.source.title for r in by_lang.results] == ["retry.py"]


def test_path_glob_star_stays_in_one_folder(kbconn):
    shallow = lexical(kbconn, "retry", filters=Filters(paths=["kb/docs/*"]))
    assert [r.source.title for r in shallow.results] == ["HTTP retries"]
    deep = lexical(kbconn, "retry", filters=Filters(paths=["kb/docs/**"]))
    assert {r.source.title for r in deep.results} == {"HTTP retries", "Draft retry notes"}
    by_name = lexical(kbconn, "retry", filters=Filters(paths=["*.py"]))
    assert [r.source.title for r in by_name.results] == ["retry.py"]


def test_inline_filters_and_exclusion(kbconn):
    res = lexical(kbconn, 'retry type:markdown -"draft"')
    assert [r.source.title for r in res.results] == ["HTTP retries"]


def test_cjk_substring(kbconn):
    for query in ("タワー", "夜景", "東京タワー"):
        res = lexical(kbconn, query)
        assert [r.source.title for r in res.results] == ["Tokyo"], query


def test_old_and_new_kanji_forms_find_each_other(kbconn):
    """A question in new forms (宮沢, 国) finds a text in old forms (宮澤, 國) and the other way
    round, through the trigram phrase (3+ characters) and the substring scan (1-2)."""
    add(kbconn, "/kb/notes/jo.txt", "Jo", ["序 宮澤賢治 心象スケッチ"], doc_type="text")
    add(kbconn, "/kb/notes/kokugo.txt", "Kokugo", ["新しい国語の教科書"], doc_type="text")
    for query, title in [
        ("宮沢賢治", "Jo"),
        ("宮沢", "Jo"),
        ("宮澤賢治", "Jo"),
        ("國語の教科書", "Kokugo"),
        ("國語", "Kokugo"),
    ]:
        res = lexical(kbconn, query)
        assert [r.source.title for r in res.results] == [title], query
    assert lexical(kbconn, "心象 -宮沢").results == []


def test_a_cjk_sentence_typed_without_spaces_finds_the_passage_holding_most_of_it(kbconn):
    """The whole run is in no text; its trigrams are, most of them in one passage."""
    poem = "わたくしといふ現象は 假定された有機交流電燈の ひとつの青い照明です"
    add(kbconn, "/kb/notes/jo.txt", "Jo", [poem], doc_type="text")
    add(kbconn, "/kb/notes/other.txt", "Other", ["青い空と白い雲の写真"], doc_type="text")
    res = lexical(kbconn, "宮沢賢治の序の詩、わたくしといふ現象は青い照明")
    assert [r.source.title for r in res.results][:1] == ["Jo"]


def test_kanji_variants_spell_a_run_in_each_form():
    assert kanji_variants("宮沢賢治") == ["宮沢賢治", "宮澤賢治"]
    assert kanji_variants("宮澤賢治") == ["宮澤賢治", "宮沢賢治"]
    assert kanji_variants("東京タワー") == ["東京タワー"]
    assert kanji_variants("plain") == ["plain"]
    # 4**8 mixes of 弁/辨/辯/瓣 are too many: the run as written, in new forms, in old forms.
    assert MAX_FORMS < 4**8
    assert kanji_variants("辯" * 8) == ["辯" * 8, "弁" * 8]
    assert kanji_variants("弁" * 8) == ["弁" * 8, "辨" * 8]


@pytest.mark.parametrize("query", ['"', "'", "*", "-", ":", "((((", "\x00", "  "])
def test_hostile_queries_without_words_are_refused_with_a_reason(kbconn, query):
    with pytest.raises(SearchError, match="no words"):
        lexical(kbconn, query)


RETRY_TITLES = {"retry.py", "HTTP retries", "Draft retry notes"}


@pytest.mark.parametrize(
    "query, titles",
    [
        ("NEAR(", set()),
        ("a OR", set()),
        ("x AND NOT", set()),
        ("col:val:", set()),
        ("😀 emoji", set()),
        ("'unbalanced", set()),
        ("^start", set()),
        ("a" * 3999, set()),  # under search.max_query_chars
        ("AND", {"retry.py"}),  # the word "and", not the operator
        ("backoff OR", {"HTTP retries", "retry.py"}),
        ('"retry', RETRY_TITLES),
        ("retry(", RETRY_TITLES),
        ("NEAR(retry", RETRY_TITLES),
        ("col:retry:", RETRY_TITLES),
        ("^retry", RETRY_TITLES),
        ("retry -", RETRY_TITLES),
        ("retry\x00", RETRY_TITLES),
    ],
)
def test_hostile_queries_are_read_as_plain_words(kbconn, query, titles):
    res = lexical(kbconn, query)
    assert {r.source.title for r in res.results} == titles
    assert res.total_matches == len(titles)
    assert res.legs == {"lexical": "ok" if titles else "empty"}


def test_explicit_fts_syntax(kbconn):
    res = lexical(kbconn, "'retry NOT draft'")
    assert "Draft retry notes" not in [r.source.title for r in res.results]
    with pytest.raises(SearchError, match="invalid FTS5 expression"):
        lexical(kbconn, "'NEAR(('")


def test_deterministic(kbconn):
    first = [r.to_dict() for r in lexical(kbconn, "retry").results]
    for _ in range(3):
        assert [r.to_dict() for r in lexical(kbconn, "retry").results] == first


def test_snippet_and_top(kbconn):
    res = lexical(kbconn, "retry", top=1)
    assert len(res.results) == 1
    assert "\x02" not in res.to_dict()["results"][0]["snippet"]
    assert res.total_matches >= 3


def test_hybrid_without_model_reports_the_missing_leg(kbconn):
    res = search(kbconn, "retry", SearchOptions(mode="hybrid"), vector_unavailable="no model")
    assert res.legs == {"lexical": "ok", "vector": "error: no model"}
    assert res.results and res.results[0].score == pytest.approx(1.0)
    with pytest.raises(SearchError, match="vector search unavailable"):
        search(kbconn, "retry", SearchOptions(mode="vector"), vector_unavailable="no model")


def test_rrf_normalisation():
    legs = {
        "lexical": LegResult("ok", [(1, 0.9), (2, 0.5)]),
        "vector": LegResult("ok", [(1, 0.8), (3, 0.7)]),
    }
    fused = fuse(legs, 60, "rrf")
    assert fused[0].chunk_id == 1 and fused[0].score == pytest.approx(1.0)
    assert fused[1].score == pytest.approx((1 / 62) / (2 / 61))
    # ties broken by chunk id
    assert [f.chunk_id for f in fused[1:]] == [2, 3]


def test_search_is_read_only(kbconn):
    before = kbconn.total_changes
    lexical(kbconn, "retry")
    assert kbconn.total_changes == before


class _BrokenVectorLeg:
    def embed_query(self, text):
        raise RuntimeError("onnxruntime exploded\nsecond line")

    def nearest(self, conn, vector, k, allowed):  # pragma: no cover - never reached
        return []


def test_a_failing_leg_is_reported_not_dropped(kbconn):
    res = search(kbconn, "retry", SearchOptions(mode="hybrid"), vector=_BrokenVectorLeg())
    assert res.legs == {"lexical": "ok", "vector": "error: RuntimeError: onnxruntime exploded"}
    assert res.results and res.results[0].score_breakdown["vector"] is None
    with pytest.raises(SearchError, match="onnxruntime exploded"):
        search(kbconn, "retry", SearchOptions(mode="vector"), vector=_BrokenVectorLeg())


def test_date_filters_and_bad_dates(kbconn):
    kbconn.execute(
        "UPDATE documents SET mtime = 1700000000 WHERE title = 'HTTP retries'"
    )  # 2023-11
    kbconn.execute("UPDATE documents SET mtime = 1800000000 WHERE title != 'HTTP retries'")  # 2027
    old = lexical(kbconn, "retry", filters=Filters(before=["2024-01-01"]))
    assert [r.source.title for r in old.results] == ["HTTP retries"]
    new = lexical(kbconn, "retry after:2024-01-01")
    assert "HTTP retries" not in [r.source.title for r in new.results] and new.results
    with pytest.raises(SearchError, match="not a date"):
        lexical(kbconn, "retry before:yesterday")


def test_exclusions_reach_cjk_and_vector_legs(kbconn):
    res = lexical(kbconn, "タワー -東京")
    assert res.results == []


@pytest.mark.parametrize("query", ["'", "-", "*", ":", "(((", "- - -"])
def test_punctuation_only_is_nothing_to_search_for(kbconn, query):
    with pytest.raises(SearchError, match="nothing to search for"):
        search(kbconn, query, SearchOptions(mode="hybrid"), vector_unavailable="none")


def test_a_warm_reply_reads_back_as_the_response_it_was():
    """The warm server sends the JSON contract with the snippets' highlight markers; the
    client's `SearchResponse.from_dict` gives the renderer the same response (no pickle)."""
    import json
    from pathlib import Path

    from kb_search.cli.render import search_human
    from kb_search.cli.terminal import Terminal
    from kb_search.search.results import HL_CLOSE, HL_OPEN, Result, SearchResponse, Source

    source = Source(
        document_id=3, title="Deploying", path="/n/deploy.md", type="markdown", page=None,
        lines=[4, 9], heading="Roll back", symbol=None, chunk_index=1, total_chunks=4,
        tags=["ops"], language="en", rel_path="n/deploy.md",
    )  # fmt: skip
    result = Result(
        chunk_id=12, score=0.8125, score_breakdown={"lexical": {"rank": 1, "score": 3.5}},
        text="To roll back, redeploy \ud800 the tag.",
        snippet=f"To {HL_OPEN}roll back{HL_CLOSE}, redeploy",
        citation="n/deploy.md#L4-L9", source=source, found_by=[[0, "lexical", 1]],
    )  # fmt: skip
    response = SearchResponse(
        query="roll back", mode="hybrid", results=[result], total_matches=7,
        legs={"lexical": "ok", "vector": "failed: no model"}, timings_ms={"total": 12.5},
        notes=["a note"], variants=[{"text": "undo deploy", "use": "vec", "legs": ["vector"]}],
    )  # fmt: skip
    wire = json.dumps(response.to_dict(highlights=True)).encode()
    assert wire.isascii()
    back = SearchResponse.from_dict(json.loads(wire))
    assert back == response
    term = Terminal.detect(env={}, cwd=Path("/n"), is_tty=True, color="never")
    assert search_human(back, term) == search_human(response, term)
    assert HL_OPEN not in json.dumps(response.to_dict())  # the contract itself stays clean


def test_the_warm_path_never_unpickles():
    from pathlib import Path

    warm = Path(__file__).resolve().parents[2] / "src" / "kb_search" / "cli" / "warm"
    for module in warm.glob("*.py"):
        assert "import pickle" not in module.read_text(encoding="utf-8"), module.name
