"""Markdown headings and fences come from markdown-it-py's CommonMark token stream: the
cases a line-by-line reading of `#`, `===` and ``` got wrong."""

from __future__ import annotations

from pathlib import Path

from kb_search.formats.markdown import parse_markdown
from kb_search.parsed import ChunkSettings


def words(text: str) -> int:
    return len(text.split())


def chunks(text: str, max_tokens: int = 60):
    return parse_markdown(text, Path("doc.md"), ChunkSettings(max_tokens, 5), words).chunks


def body(word: str, n: int = 40) -> str:
    return " ".join([word] * n)


def test_a_setext_heading_whose_title_spans_two_lines():
    text = f"Intro\n\n{body('intro')}\n\nInstalling on\nDebian systems\n===\n\n{body('apt')}\n"
    found = chunks(text)
    assert [c.heading for c in found] == [None, "Installing on Debian systems"]
    assert found[1].line_start == 5


def test_a_tilde_fence_keeps_headings_inside_it():
    # An indented `~~~` is content of the fence, so `## still code` is code too.
    fence = "~~~sh\n# install it\n    ~~~\n## still code\n~~~"
    text = f"# Guide\n\n{body('guide')}\n\n{fence}\n\n{body('more')}\n"
    found = chunks(text, 30)
    assert all(c.heading == "Guide" for c in found)
    assert any(fence in c.text for c in found)


def test_backticks_on_one_line_are_inline_code_not_an_open_fence():
    text = (
        f"# Repos\n\n{body('repo')}\n\n```argocd repo add --name stable```\n\n"
        f"## Clusters\n\n{body('cluster')}\n"
    )
    assert [c.heading for c in chunks(text)][-1] == "Repos > Clusters"


def test_an_unclosed_fence_in_a_list_item_ends_with_the_item():
    text = (
        f"# Steps\n\n- step one\n\n  ```\n  code without a closing fence\n\n"
        f"## Next section\n\n{body('next')}\n"
    )
    assert [c.heading for c in chunks(text)][-1] == "Steps > Next section"


def test_a_heading_in_an_html_comment_or_pre_block_is_not_a_heading():
    text = (
        f"# Page\n\n{body('page')}\n\n<!--\n## Old section\n{body('old')}\n-->\n\n"
        f"<pre>\n# not a heading\n</pre>\n\n{body('tail')}\n"
    )
    assert {c.heading for c in chunks(text)} == {"Page"}


def test_headings_after_a_deeply_nested_list_are_still_headings():
    """markdown-it stops building blocks past its nesting limit (20 in CommonMark): found by
    the long fuzz profile, a 25-level list hid every heading after it."""
    nested = "".join("  " * depth + "- item\n" for depth in range(25))
    text = f"{nested}\n# After\n\n{body('after')}\n\n## Later\n\n{body('later')}\n"
    found = chunks(text, 40)
    assert {c.heading for c in found} >= {"After", "After > Later"}


def test_a_list_nested_hundreds_deep_is_chunked_without_error():
    nested = "".join("  " * depth + "- item\n" for depth in range(600))
    found = chunks(f"# Top\n\n{nested}\n# End\n\nThe end words.\n", 200)
    assert found and found[-1].heading == "End"
