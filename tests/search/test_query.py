import pytest

from kb_search.search.query import parse_query


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("install git", '"install" OR "git"'),
        ('"from source" git', '"from source" OR "git"'),
        ("git -draft", '("git") NOT "draft"'),
        ('git -"old notes"', '("git") NOT "old notes"'),
        ("the git", '"git"'),
        ("the", '"the"'),
        ("instal*", '"instal"*'),
        ("NEAR(foo bar", '"NEAR" OR "foo" OR "bar"'),
        ('say "hi', '"hi" OR "say"'),
        ("k8s:pod c::d", '"k8s" OR "pod" OR "c" OR "d"'),
    ],
)
def test_fts_expression_is_quoted(query, expected):
    assert parse_query(query).fts_expression() == expected


def test_inline_filters_are_taken_out():
    parsed = parse_query('type:pdf tag:git path:docs/* lang:python backup -"draft"')
    assert parsed.filters.types == ["pdf"]
    assert parsed.filters.tags == ["git"]
    assert parsed.filters.paths == ["docs/*"]
    assert parsed.filters.languages == ["python"]
    assert parsed.text == "backup"
    assert parsed.fts_expression() == '("backup") NOT "draft"'


def test_single_quoted_query_passes_fts5_through():
    parsed = parse_query("'git NEAR(install source, 5)'")
    assert parsed.fts_expression() == "git NEAR(install source, 5)"


@pytest.mark.parametrize("query", ['"', "*", "-", ":", "()", '""', "-x", "  "])
def test_queries_without_words(query):
    assert parse_query(query).fts_expression() is None


def test_cjk_runs():
    assert parse_query("東京 タワー tokyo").cjk_runs() == ["東京", "タワー"]
