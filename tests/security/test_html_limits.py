"""Issue 33, break 9: deep or huge HTML was silently "empty". lxml (libxml2) drops the whole
page past 255 nested elements or a 10 MB text node; kb counted the file as an empty file. Now
such a page is read (libxml2's huge limits; a page nested deeper than the walk's depth is read
as plain paragraphs, without recursion), and one past even those limits is a failure that
says why, never "empty"."""

from __future__ import annotations

import pytest

from kb_search.errors import IngestError
from kb_search.formats.cleaning import read_html


def _nested(depth: int, tag: str = "div", inner: str = "deep zebracrossing text") -> str:
    return f"<html><body>{f'<{tag}>' * depth}{inner}{f'</{tag}>' * depth}<p>after</p></body></html>"


@pytest.fixture
def environment(environment):
    environment.env["KB_WORKERS"] = "0"
    return environment


@pytest.mark.parametrize("depth", [200, 255, 300, 1000, 2000])
def test_deep_pages_are_read(depth):
    markdown = read_html(_nested(depth)).markdown
    assert "deep zebracrossing text" in markdown and "after" in markdown


@pytest.mark.parametrize(
    "page",
    [
        "<html><body><ul>"
        + "<li><ul>" * 900
        + "listed zebra"
        + "</ul></li>" * 900
        + "</ul></body></html>",
        "<html><body>"
        + "<table><tr><td>" * 300
        + "cell zebra"
        + "</td></tr></table>" * 300
        + "</body></html>",
        "<html><body>" + "<span>" * 1500 + "inline zebra" + "</span>" * 1500 + "</body></html>",
    ],
    ids=["lists", "tables", "inline"],
)
def test_deep_lists_tables_and_inline_runs_keep_their_text(page):
    assert "zebra" in read_html(page).markdown


def test_a_ten_megabyte_text_node_is_read():
    page = "<html><body><p>" + "zebra " * 1_800_000 + "</p></body></html>"
    assert read_html(page).markdown.count("zebra") == 1_800_000


def test_a_page_past_libxml2s_limit_fails_with_its_reason():
    with pytest.raises(IngestError, match="cannot read this HTML: .*depth"):
        read_html(_nested(3000))


def test_kb_add_counts_them_as_read_or_failed_never_empty(kb, tmp_path):
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "deep255.html").write_text(_nested(255))
    (pages / "deep600.html").write_text(_nested(600))
    (pages / "huge.html").write_text(_nested(1, "p", "zebracrossing " * 800_000))
    (pages / "too-deep.html").write_text(_nested(3000))
    summary = kb.json("add", str(pages))
    assert summary["empty"] == 0
    assert summary["added"] == 3
    (failed,) = summary["failed"]
    assert failed["path"].endswith("too-deep.html") and "depth" in failed["reason"]
    for word, name in (
        ("deep", "deep255.html"),
        ("deep", "deep600.html"),
        ("zebracrossing", "huge.html"),
    ):
        found = kb.json("search", word, "--mode", "lexical", "--path", f"**/{name}")
        assert found["results"], name
