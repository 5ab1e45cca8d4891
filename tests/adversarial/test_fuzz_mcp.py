"""Every MCP tool and the document resource, called in-process with wrong types, missing and
extra arguments, huge/negative/non-ASCII ids and absurd limits: a clean one-line tool error or a
valid answer, never a crash, never library text, and the server answers the next call."""

from __future__ import annotations

import json
from typing import Any

import anyio
import jsonschema
import pytest
from fuzz_invariants import SCHEMA, check_error_text
from fuzz_strategies import ID_TEXT, any_char, queries
from hypothesis import example, given
from hypothesis import strategies as st
from mcp import Client

from kb_search.mcp.server import build_server

PARAMETERS = {
    "search": ["query", "variants", "mode", "top", "compact", "files", "fields", "explain"],
    "get_document": ["id", "path", "include_chunks", "offset", "limit"],
    "get": ["citations", "context", "max_bytes"],
    "get_chunk": ["chunk_id", "context"],
    "similar": ["document_id", "chunk_id", "top", "compact"],
    "list_documents": ["type", "tag", "limit", "offset"],
    "list_tags": [],
    "stats": [],
}  # fmt: skip
SEARCH_TOOLS = {"search"}

huge_ints = st.sampled_from([0, 1, -1, 2**31, 2**63 - 1, 2**63, -(2**63) - 1, 10**30, 10**400])
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1000, 1000),
    huge_ints,
    st.floats(allow_nan=False),
    st.sampled_from(["hybrid", "lexical", "vector", "HYBRID", "markdown", "*.md", "notes/**"]),
    st.sampled_from(ID_TEXT),
    st.text(any_char, max_size=30),
    queries,
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def tool_calls(draw) -> tuple[str, dict[str, Any]]:
    tool = draw(st.sampled_from(sorted(PARAMETERS)))
    names = draw(st.lists(st.sampled_from(PARAMETERS[tool] or ["query"]), unique=True))
    arguments = {name: draw(values) for name in names}
    if draw(st.integers(0, 4)) == 0:
        arguments[draw(st.sampled_from(["limit", "k", "id", "", "query ", "__class__", "q"]))] = (
            draw(values)
        )
    return tool, arguments


def check_answer(tool: str, arguments: dict[str, Any], result: Any) -> None:
    texts = [getattr(c, "text", "") for c in result.content]
    for text in texts:
        text.encode("utf-8")  # what a stdio or HTTP client would be sent
    if result.is_error:
        assert len(texts) == 1, texts
        check_error_text(texts[0])
        return
    assert len(texts) == 1, texts
    data = json.loads(texts[0])
    if tool in SEARCH_TOOLS and not arguments.get("compact") and not arguments.get("fields"):
        jsonschema.validate(data, SCHEMA)


@pytest.fixture(scope="module")
def server(corpus_kb):
    return build_server(corpus_kb)


def call_all(server, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async def main() -> list[Any]:
        async with Client(server) as client:
            results = [await client.call_tool(tool, arguments) for tool, arguments in calls]
            alive = await client.call_tool("stats", {})
            assert not alive.is_error, alive.content
            return results

    return anyio.run(main)


@given(calls=st.lists(tool_calls(), min_size=1, max_size=3))
@example(calls=[("get_chunk", {"chunk_id": 10**30}), ("get_document", {"id": 2**63})])
@example(calls=[("search", {"query": "git", "top": 10**400, "bogus": 1})])
@example(calls=[("list_documents", {"limit": -1, "offset": 2**70})])
@example(calls=[("similar", {"document_id": 1, "chunk_id": 1}), ("similar", {})])
@example(calls=[("search", {"query": "\udcff git", "fields": ["nope"], "compact": True})])
def test_any_tool_call_answers_cleanly(server, calls):
    for (tool, arguments), result in zip(calls, call_all(server, calls)):
        check_answer(tool, arguments, result)


@given(ref=st.one_of(st.sampled_from(ID_TEXT), st.text(any_char, max_size=30)))
@example(ref="99999999999999999999999")
@example(ref="١")
def test_any_document_resource_id_answers_cleanly(server, ref):
    async def main() -> None:
        async with Client(server) as client:
            try:
                result = await client.read_resource(f"kb://document/{ref}")
            except Exception as exc:  # noqa: BLE001 - a resource error reaches the client so
                check_error_text(str(exc))
                return
            json.loads(result.contents[0].text)
            assert ref.strip().isascii() and ref.strip().isdigit(), ref

    anyio.run(main)
