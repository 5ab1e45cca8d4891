"""The minimal examples the adversarial suite found, kept as explicit regression tests (each
names what broke before its fix)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kb_search.ingest.parse import parse_file
from kb_search.parsed import ChunkSettings

BILLION_LAUGHS = "\n".join(
    ["---", "a: &a [x,x,x,x,x,x,x,x,x]"]
    + [f"{n}: &{n} [{','.join(['*' + p] * 9)}]" for p, n in zip("abcdefg", "bcdefgh")]
    + ["tags: *h", "title: *h", "---", "# Real title", "", "body text"]
)


def test_a_recursive_yaml_alias_in_front_matter_is_not_a_crash(tmp_path: Path):
    # Was: RecursionError out of the Markdown parser (`a: &a [*a, *a, *a]`).
    path = tmp_path / "cycle.md"
    path.write_text("---\na: &a [*a, *a, *a]\n---\n# T\n\nbody\n")
    document = parse_file(path, ChunkSettings())
    assert document.title == "T" and "body" in document.chunks[0].text


def test_a_yaml_alias_bomb_in_front_matter_parses_at_once(tmp_path: Path):
    # Was: > 60 s and gigabytes expanding 9^8 aliases into the metadata, tags and title.
    path = tmp_path / "bomb.md"
    path.write_text(BILLION_LAUGHS)
    started = time.perf_counter()
    document = parse_file(path, ChunkSettings())
    assert time.perf_counter() - started < 5
    assert document.title == "Real title" and document.tags == []
    assert len(str(document.metadata)) < 100_000


def test_a_bad_date_filter_is_one_clear_error_in_every_mode(tmp_path: Path):
    # Was, in vector mode: "vector search unavailable: SearchError: not a date: 'markdown'".
    from fuzz_kb import make_kb, write_corpus

    from kb_search.errors import SearchError
    from kb_search.search.query import Filters

    write_corpus(tmp_path / "docs")
    with make_kb(tmp_path) as kb:
        kb.add([tmp_path / "docs"])
        for mode in ("lexical", "hybrid", "vector"):
            options = kb.search_options(mode=mode, filters=Filters(before=["markdown"]))
            with pytest.raises(SearchError) as caught:
                kb.search("git install", options)
            assert str(caught.value) == "not a date: 'markdown' (use YYYY-MM-DD)", mode


def test_mcp_tools_refuse_arguments_they_do_not_have(tmp_path: Path):
    # Was: `search(query=..., limit=3)` ran a default top-10 search, the misspelt argument
    # silently dropped; a key with a newline would have split the error over two lines.
    import anyio
    from fuzz_kb import make_kb, write_corpus
    from mcp import Client

    from kb_search.mcp.server import build_server

    async def main(server) -> list[str]:
        async with Client(server) as client:
            texts = []
            for arguments in ({"query": "git", "limit": 3}, {"query": "git", "a\nb\udcff": 1}):
                result = await client.call_tool("search", arguments)
                assert result.is_error
                texts.append(result.content[0].text)
            assert not (await client.call_tool("search", {"query": "git", "top": 3})).is_error
            return texts

    write_corpus(tmp_path / "docs")
    with make_kb(tmp_path) as kb:
        kb.add([tmp_path / "docs"])
        limit, odd = anyio.run(main, build_server(kb))
    assert "invalid arguments for search: `limit` is not an argument of this tool" in limit
    valid = limit.rsplit("(its arguments: ", 1)[1].rstrip(")").split(", ")
    assert {"query", "top", "variants", "explain"} <= set(valid)
    assert "`a\\nb" in odd and "` is not an argument" in odd and "\n" not in odd


def test_a_query_with_no_direction_gives_no_nan_scores(tmp_path: Path):
    # Was: `'" '` in vector mode scored every result NaN (the test embedder's vector of
    # punctuation is zero; cosine distance to it is NaN), which is not even valid JSON.
    import json

    from fuzz_kb import make_kb, write_corpus

    write_corpus(tmp_path / "docs")
    (tmp_path / "docs" / "emoji.md").write_text("😀 🎉 😀\n")  # a chunk whose vector is zero
    with make_kb(tmp_path) as kb:
        kb.add([tmp_path / "docs"])
        for query, mode in (("'\" '", "vector"), ("😀 git", "hybrid"), ("git 😀", "vector")):
            response = kb.search(query, kb.search_options(mode=mode))
            text = json.dumps(response.to_dict(), allow_nan=False)
            assert all(0 <= r.score <= 1 for r in response.results), text
        assert kb.search("'\" '", kb.search_options(mode="vector")).legs == {"vector": "empty"}
        similar = kb.similar("docs/emoji.md")
        json.dumps(similar.to_dict(), allow_nan=False)


def test_an_unknown_resource_uri_is_named_on_one_line(tmp_path: Path):
    # Was: "Unknown resource: kb://document/\r\x00" (the URI echoed raw, a CR in the message).
    import anyio
    from fuzz_kb import make_kb
    from mcp import Client

    from kb_search.mcp.server import build_server

    async def main(server) -> str:
        async with Client(server) as client:
            try:
                await client.read_resource("kb://document/\r\x00")
            except Exception as exc:  # noqa: BLE001 - the client raises the server's error
                return str(exc)
        raise AssertionError("an unknown resource was read")

    with make_kb(tmp_path) as kb:
        message = anyio.run(main, build_server(kb))
    assert message.startswith("no resource kb://document/\\r\\x00: read kb://stats"), message
