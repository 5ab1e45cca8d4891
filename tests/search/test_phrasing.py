"""Several phrasings in one search, single-leg hits, identifier definitions, diversity, --files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kb_search.errors import SearchError
from kb_search.search.fusion import fuse, fuse_rankings, rankings_of
from kb_search.search.legs import LegResult, lexical_score
from kb_search.search.query import MAX_VARIANTS, parse_variant
from kb_testing import kb_over_files


def lexical(*bm25: tuple[int, float]) -> LegResult:
    return LegResult("ok", [(cid, lexical_score(-x)) for cid, x in bm25], total=1000)


# ---- fusion of several phrasings -----------------------------------------------------------


def test_a_variant_lifts_what_only_it_finds_and_says_which_phrasing_found_each_hit():
    query = {
        "lexical": lexical((1, 9.0), (2, 5.0)),
        "vector": LegResult("ok", [(1, 0.9), (2, 0.8)]),
    }
    keywords = {"lexical": lexical((3, 9.0), (1, 4.0))}  # "lex: ..." runs the keyword leg only
    alone = [c.chunk_id for c in fuse(query)]
    assert 3 not in alone
    fused = fuse_rankings(rankings_of(query, 0) + rankings_of(keywords, 1))
    order = [c.chunk_id for c in fused]
    assert order[0] == 1 and 3 in order
    found = {c.chunk_id: c.found_by for c in fused}
    assert found[1] == [[0, "lexical", 1], [0, "vector", 1], [1, "lexical", 2]]
    assert found[3] == [[1, "lexical", 1]]


def test_the_query_weighs_more_than_a_variant():
    query = {
        "lexical": lexical((1, 9.0), (2, 1.0)),
        "vector": LegResult("ok", [(1, 0.9), (2, 0.1)]),
    }
    variant = {
        "lexical": lexical((2, 9.0), (1, 1.0)),
        "vector": LegResult("ok", [(2, 0.9), (1, 0.1)]),
    }
    fused = fuse_rankings(rankings_of(query, 0) + rankings_of(variant, 1))
    assert [c.chunk_id for c in fused] == [1, 2]


def test_variant_syntax():
    assert parse_variant("lex: max_connections").use == "lexical"
    assert parse_variant("VEC:how much memory").use == "vector"
    plain = parse_variant("a plain rephrasing")
    assert (plain.text, plain.use) == ("a plain rephrasing", "both")
    with pytest.raises(SearchError, match="no words"):
        parse_variant("lex:   ")


def test_search_with_variants_end_to_end(tmp_path: Path):
    files = {
        "pool.md": "# Connection pool\n\nThe pool keeps idle sockets open for reuse.\n",
        "limits.md": "# Limits\n\nmax_connections caps how many clients may connect at once.\n",
        "other.md": "# Other\n\nUnrelated text about gardening and tomatoes.\n",
    }
    with kb_over_files(tmp_path, files) as kb:
        plain = kb.search("reuse idle sockets", kb.search_options(top=3))
        assert "docs/limits.md" not in [r.source.rel_path for r in plain.results[:1]]
        options = kb.search_options(top=3, variants=("lex: max_connections",))
        both = kb.search("reuse idle sockets", options)
        data = both.to_dict()
        # a typed phrasing searches its own leg, and its other leg weakly (CROSS_SHARE)
        assert data["variants"] == [
            {"text": "max_connections", "use": "lexical", "legs": {"lexical": "ok", "vector": "ok"}}
        ]
        by_path = {r["source"]["rel_path"]: r["found_by"] for r in data["results"]}
        assert [1, "lexical", 1] in by_path["docs/limits.md"]
        assert all(f[0] == 0 for f in by_path["docs/pool.md"][:1])
        too_many = kb.search_options(variants=tuple(f"v{i}" for i in range(MAX_VARIANTS + 1)))
        with pytest.raises(SearchError, match="at most"):
            kb.search("x", too_many)


def test_a_typed_phrasing_weighs_weakly_in_its_other_leg():
    from kb_search.search.fusion import CROSS_SHARE, LEG_WEIGHTS, VARIANT_WEIGHT

    legs = {"lexical": lexical((1, 9.0)), "vector": LegResult("ok", [(2, 0.9)])}
    weights = {r.leg: r.weight for r in rankings_of(legs, 1, "lexical")}
    assert weights["lexical"] == VARIANT_WEIGHT * LEG_WEIGHTS["lexical"]
    assert weights["vector"] == VARIANT_WEIGHT * LEG_WEIGHTS["vector"] * CROSS_SHARE
    assert 0 < CROSS_SHARE < 1
    plain = {r.leg: r.weight for r in rankings_of(legs, 1)}
    assert plain["vector"] == VARIANT_WEIGHT * LEG_WEIGHTS["vector"]


def test_schema_documents_found_by_and_variants():
    from importlib import resources

    import jsonschema

    schema = json.loads(
        resources.files("kb_search").joinpath("schemas/search_response.schema.json").read_text()
    )
    result = schema["$defs"]["result"]["properties"]
    assert "found_by" in result and "variants" in schema["properties"]
    good = {"found_by": [[0, "lexical", 1], [2, "vector", 7]]}
    jsonschema.validate(good["found_by"], result["found_by"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([[0, "fts", 0]], result["found_by"])


# ---- a strong single-leg hit ---------------------------------------------------------------


def single_leg_case() -> dict[str, LegResult]:
    """Chunk 1: first by meaning, well ahead, with none of the query's words; 11-13: middling
    in both legs; 10: first in both."""
    tail = [(100 + i, 3.0 - i * 0.05) for i in range(40)]
    return {
        "lexical": lexical((10, 10.0), (11, 6.4), (12, 6.2), (13, 6.0), *tail),
        "vector": LegResult(
            "ok",
            [(1, 0.80), (10, 0.60), (11, 0.58), (12, 0.575), (13, 0.57)]
            + [(200 + i, 0.5 - i * 0.003) for i in range(40)],
        ),
    }


def test_first_by_meaning_and_absent_from_the_keyword_leg_is_not_buried(monkeypatch):
    order = [c.chunk_id for c in fuse(single_leg_case())]
    assert order[:2] == [10, 1], order
    # without the single-leg floor it fell below every chunk both legs rank middling
    from kb_search.search import fusion

    monkeypatch.setattr(fusion, "SOLO_SHARE", 0.0)
    assert [c.chunk_id for c in fuse(single_leg_case())].index(1) == 4


# ---- identifiers ---------------------------------------------------------------------------

SETTINGS = {
    "settings.md": "# Settings\n\n## maintenance_work_mem\n\nSpecifies the maximum amount of"
    " memory used by maintenance operations such as VACUUM and CREATE INDEX.\n",
    "toc.md": "# Index of settings\n\nwork_mem\nmaintenance_work_mem\nshared_buffers\n"
    "effective_cache_size\nautovacuum_work_mem\nmax_connections\ntemp_buffers\n",
    "tuning.md": "# Tuning memory\n\nRaise maintenance_work_mem before bulk loads;"
    " maintenance_work_mem also speeds vacuum. maintenance_work_mem, maintenance_work_mem.\n",
}


@pytest.mark.parametrize("mode", ["hybrid", "lexical"])
def test_an_identifier_query_ranks_its_definition_first(tmp_path: Path, mode: str):
    with kb_over_files(tmp_path, SETTINGS) as kb:
        response = kb.search("maintenance_work_mem", kb.search_options(mode=mode, top=3))
        assert response.results[0].source.rel_path == "docs/settings.md"
        assert response.results[0].score_breakdown["defines"] == "maintenance_work_mem"


def test_a_list_of_names_is_not_a_definition():
    from kb_search.search.shaping import defines, identifiers

    assert identifiers("what is maintenance_work_mem, --dry-run and syncPolicy.automated?") == [
        "maintenance_work_mem", "--dry-run", "syncPolicy.automated",
    ]  # fmt: skip
    assert identifiers("how do I roll back a release") == []
    assert not defines("maintenance_work_mem", SETTINGS["toc.md"], "Index of settings", None)
    assert defines("maintenance_work_mem", SETTINGS["settings.md"], "maintenance_work_mem", None)
    assert defines("url_is_from_any_domain", "def url_is_from_any_domain(url):", None,
                   "scrapy.utils.url.url_is_from_any_domain")  # fmt: skip
    assert defines("--insecure", "  --insecure   Run the server without TLS", None, None)


# ---- diversity and files mode --------------------------------------------------------------


def long_document() -> str:
    """Six sections, each long enough to be a chunk of its own, all about backups."""
    filler = " ".join(f"word{n}" for n in range(400))
    sections = [
        f"## Part {i}\n\nBackup retention and backup windows, part {i}. {filler}\n"
        for i in range(6)
    ]
    return "# Backups\n\n" + "\n".join(sections)


DIVERSE = {
    "backups.md": long_document(),
    "restore.md": "# Restore\n\nRestore a backup: backup retention and backup windows.\n",
    "schedule.md": "# Schedule\n\nBackup windows: nightly backup, backup retention.\n",
    "barely.md": "# Other\n\nA retention note.\n",
}


def test_at_most_three_chunks_of_a_file_before_other_files(tmp_path: Path):
    with kb_over_files(tmp_path, DIVERSE) as kb:
        uncapped = kb.search("backup retention windows", kb.search_options(top=10, per_file=0))
        paths = [r.source.rel_path for r in uncapped.results]
        ahead = paths[: paths.index("docs/barely.md")]
        assert ahead.count("docs/backups.md") == 6  # the case the cap is for
        capped = kb.search("backup retention windows", kb.search_options(top=10))
        paths = [r.source.rel_path for r in capped.results]
        barely = paths.index("docs/barely.md")
        assert paths[:barely].count("docs/backups.md") == 3
        assert paths[barely + 1 : barely + 4] == ["docs/backups.md"] * 3
        scores = [r.score for r in capped.results]
        assert scores == sorted(scores, reverse=True)  # the moved ones score below "barely"


def test_a_capped_chunk_gives_way_only_to_close_matches():
    from kb_search.search.results import Candidate
    from kb_search.search.shaping import _merge

    kept = [Candidate(1, 0.9, {}), Candidate(2, 0.5, {}), Candidate(3, 0.2, {})]
    moved = [Candidate(4, 0.6, {}, cut_by=["diversity: 3 chunk(s) of this file rank above it"])]
    merged = _merge(kept, moved)
    assert [c.chunk_id for c in merged] == [1, 2, 4, 3]
    assert [c.score for c in merged] == [0.9, 0.5, 0.5, 0.2]  # read in the results' order


def test_files_mode_returns_each_file_once_with_its_best_chunk(tmp_path: Path):
    with kb_over_files(tmp_path, DIVERSE) as kb:
        best = kb.search("backup retention windows", kb.search_options(top=10, per_file=0))
        files = kb.search("backup retention windows", kb.search_options(top=10, files=True))
        paths = [r.source.rel_path for r in files.results]
        assert len(paths) == len(set(paths)) == 4
        first_of = {}
        for result in best.results:
            first_of.setdefault(result.source.rel_path, result.chunk_id)
        assert files.results[0].chunk_id == first_of[paths[0]]


def test_cli_files_lists_one_citation_per_file(kb, tmp_path: Path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DIVERSE.items():
        (docs / name).write_text(text, encoding="utf-8")
    kb("add", str(docs))
    data = kb.json("search", "backup", "--files", "--mode", "lexical")
    paths = [r["source"]["rel_path"] for r in data["results"]]
    assert len(paths) == len(set(paths)) == 3  # barely.md has no "backup"
    human = kb("search", "backup", "--files", "--mode", "lexical", "--format", "human").stdout
    assert sorted(human.split()) == sorted(r["citation"] for r in data["results"])


# ---- exclusions written in plain words -----------------------------------------------------

NOTIFY = {
    "email.md": "# Email\n\nSend notifications by email: the SMTP server, sender, recipients.\n",
    "slack.md": "# Slack\n\nSend notifications to Slack. Slack notifications need a Slack"
    " token and a Slack channel.\n",
}


def test_a_plain_words_exclusion_does_not_rank_the_excluded_subject_up(tmp_path: Path):
    with kb_over_files(tmp_path, NOTIFY) as kb:
        for mode in ("lexical", "vector", "hybrid"):
            response = kb.search(
                "send notifications by email, don't mention Slack", kb.search_options(mode=mode)
            )
            assert response.results[0].source.rel_path == "docs/email.md", mode
            assert any("not searched for: 'Slack'" in note for note in response.notes)


def test_without_as_part_of_the_request_is_searched():
    from kb_search.search.query import parse_query, plain_exclusion

    assert plain_exclusion("run the API server without TLS as the ingress ends it") == ("", "")
    assert plain_exclusion("login hangs without printing anything") == ("", "")
    assert plain_exclusion("install it, without the HA docs") == ("install it", "the HA docs")
    assert plain_exclusion("merge two generators without using the matrix one")[1] == (
        "the matrix one"
    )
    parsed = parse_query("email alerts, excluding Slack")
    # both legs leave it out: the meaning leg reads the request without its exclusion
    assert "Slack" not in parsed.terms and parsed.text == "email alerts"
