"""`kb serve` end to end: the real server as a subprocess, the MCP SDK's own client."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jsonschema
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_harness import KB, SECRET, TOKEN, HttpServer, Index, free_port

pytestmark = pytest.mark.model

SCHEMA = json.loads(
    (
        Path(__file__).resolve().parents[2] / "src/kb_search/schemas/search_response.schema.json"
    ).read_text()
)
TOOLS = {
    "search",
    "get_document",
    "get",
    "get_chunk",
    "list_documents",
    "list_tags",
    "stats",
    "similar",
}


def stdio_client(index: Index) -> Client:
    params = StdioServerParameters(
        command=KB[0], args=[*KB[1:], "serve", "--transport", "stdio"], env=index.env
    )
    return Client(params)


def http_client(server: HttpServer, token: str = TOKEN) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    return Client(streamable_http_client(server.url, http_client=http))


def run(client: Client, check: Callable[[Client], Awaitable[None]]) -> None:
    async def main() -> None:
        async with client:
            await check(client)

    anyio.run(main)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """The tool's JSON, which is sent once: compact, as the only text content."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is None
    assert len(result.content) == 1
    text = result.content[0].text
    data = json.loads(text)
    assert text == json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return data


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert SECRET not in text
    return text


async def every_tool(client: Client) -> None:
    listed = await client.list_tools()
    assert {t.name for t in listed.tools} == TOOLS
    assert all(len(t.description or "") > 40 for t in listed.tools)

    hybrid = await call(client, "search", query="install git from source", top=3, compact=False)
    jsonschema.validate(hybrid, SCHEMA)
    assert hybrid["legs"] == {"lexical": "ok", "vector": "ok"}
    best = hybrid["results"][0]
    assert best["citation"].startswith(best["source"]["path"] + "#L")
    assert best["source"]["path"].endswith("docs/git.md")
    assert 0 < best["score"] <= 1

    keyword = await call(
        client, "search", query='"force pushes" tag:demo', mode="lexical", compact=False
    )
    jsonschema.validate(keyword, SCHEMA)
    assert keyword["mode"] == "lexical" and keyword["results"]
    semantic = await call(
        client, "search", query="how do I make spaghetti", top=1, mode="vector", compact=False
    )
    jsonschema.validate(semantic, SCHEMA)
    assert semantic["results"][0]["source"]["rel_path"] == "docs/pasta.txt"
    typed = await call(client, "search", query="readers writer type:markdown", compact=False)
    assert {r["source"]["type"] for r in typed["results"]} == {"markdown"}

    chunk = await call(client, "get_chunk", chunk_id=best["chunk_id"], context=2)
    assert best["chunk_id"] in [c["chunk_id"] for c in chunk["chunks"]]
    doc_id = best["source"]["document_id"]
    by_id = await call(client, "get_document", id=doc_id)
    by_path = await call(client, "get_document", path=best["source"]["path"])
    by_citation = await call(client, "get_document", path=best["citation"])
    assert by_id == by_path == by_citation and by_id["chunks"]
    first = await call(client, "get_document", id=doc_id, limit=1)
    more = 1 if by_id["chunk_count"] > 1 else None
    assert [c["chunk_index"] for c in first["chunks"]] == [0] and first["next_offset"] == more
    last = await call(client, "get_document", id=doc_id, offset=by_id["chunk_count"] - 1)
    assert len(last["chunks"]) == 1 and last["next_offset"] is None
    asked = [best["citation"], f"chunk:{best['chunk_id']}"]
    got = await call(client, "get", citations=asked)
    assert [p["requested"] for p in got["passages"]] == asked
    assert got["passages"][0]["from"] == "disk" and "git" in got["passages"][0]["text"]
    cut = await call(client, "get", citations=[best["citation"]] * 3, max_bytes=40)
    assert cut["bytes"] <= 40 and cut["omitted"] == [best["citation"]] * 2
    why = await call(
        client, "search", query="install git", explain=best["source"]["path"], compact=False
    )
    jsonschema.validate(why, SCHEMA)
    assert why["explain"]["status"] == "returned" and why["explain"]["chunks"][0]["returned"] == 1

    listing = await call(client, "list_documents", tag="demo", limit=10)
    assert listing["count"] == 3 and listing["total"] == 3 and listing["next_offset"] is None
    page = await call(client, "list_documents", limit=2)
    rest = await call(client, "list_documents", limit=2, offset=page["next_offset"])
    assert page["next_offset"] == 2 and rest["next_offset"] is None
    paths = [d["rel_path"] for d in page["documents"] + rest["documents"]]
    assert paths == sorted(paths) and len(set(paths)) == 3

    # compact is the default where an agent calls
    compact = await call(client, "search", query="install git from source", top=3)
    assert compact["results"][0] == {
        k: (round(best[k], 3) if k == "score" else best[k])
        for k in ("chunk_id", "citation", "score", "text")
    } | {"heading": best["source"]["heading"]}
    assert "legs" not in compact and "timings_ms" not in compact
    picked = await call(client, "search", query="pasta", top=1, fields=["chunk_id", "title"])
    assert set(picked["results"][0]) == {"chunk_id", "title"}
    like = await call(client, "similar", chunk_id=best["chunk_id"], top=2, compact=False)
    assert like["results"] and best["chunk_id"] not in [r["chunk_id"] for r in like["results"]]
    docs_like = await call(client, "similar", document_id=doc_id, top=2)
    assert set(docs_like["results"][0]) == {"chunk_id", "citation", "heading", "score", "text"}
    assert (await call(client, "list_tags"))["tags"] == [{"tag": "demo", "documents": 3}]
    assert (await call(client, "stats"))["documents"] == 3
    await resources(client, doc_id)


async def resources(client: Client, doc_id: int) -> None:
    listed = await client.list_resources()
    assert "kb://stats" in {str(r.uri) for r in listed.resources}
    templates = await client.list_resource_templates()
    assert "kb://document/{id}" in {t.uri_template for t in templates.resource_templates}
    stats = json.loads((await client.read_resource("kb://stats")).contents[0].text)
    assert stats["documents"] == 3
    doc = json.loads((await client.read_resource(f"kb://document/{doc_id}")).contents[0].text)
    assert doc["document_id"] == doc_id


def test_stdio_every_tool_and_resource(index: Index) -> None:
    run(stdio_client(index), every_tool)


def test_http_every_tool_and_resource(http_server: HttpServer) -> None:
    run(http_client(http_server), every_tool)


def test_path_escapes_are_refused(index: Index, http_server: HttpServer) -> None:
    escapes = [
        "../../etc/passwd",
        "/etc/passwd",
        str(index.outside),
        str(index.docs / "escape.txt"),  # a symlink in an indexed folder, pointing outside
        str(index.docs / ".." / index.outside.name),
        "docs/../outside-secret.txt",
    ]

    async def check(client: Client) -> None:
        for path in escapes:
            text = await refused(client, "get_document", path=path)
            assert "not in the index" in text
            assert "not in the index" in await refused(client, "get", citations=[f"{path}#L1"])
        await refused(client, "get_document", id=999_999)
        await refused(client, "get_document")
        assert "chunk" in await refused(client, "get_chunk", chunk_id=999_999)
        with pytest.raises(Exception) as caught:
            await client.read_resource("kb://document/..%2F..%2Fetc%2Fpasswd")
        assert SECRET not in str(caught.value)

    run(http_client(http_server), check)


def test_bad_queries_are_tool_errors(http_server: HttpServer) -> None:
    async def check(client: Client) -> None:
        assert "FTS5" in await refused(client, "search", query="'NEAR(('")
        fuzzy = await refused(client, "search", query="x", mode="fuzzy")
        assert fuzzy == (
            "invalid arguments for search: `mode` must be one of hybrid, lexical or vector"
        )
        zero = await refused(client, "search", query="x", top=0)
        assert zero == "invalid arguments for search: `top` must be at least 1"
        missing = await refused(client, "search", top="many")
        assert "`query` is required" in missing and "`top` must be an integer" in missing
        for text in (fuzzy, zero, missing):
            assert "pydantic" not in text and "http" not in text and "\n" not in text
        assert "unknown field" in await refused(client, "search", query="x", fields=["nope"])

    run(http_client(http_server), check)


def test_schema_offers_mode_as_an_enum_and_a_navigate_prompt(http_server: HttpServer) -> None:
    async def check(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        mode = tools["search"].input_schema["properties"]["mode"]
        assert mode["enum"] == ["hybrid", "lexical", "vector"] and "pattern" not in mode
        assert "compact" in tools["search"].input_schema["properties"]
        assert all(t.output_schema is None for t in tools.values())  # the data goes once
        prompts = (await client.list_prompts()).prompts
        assert [p.name for p in prompts] == ["navigate"]
        got = await client.get_prompt("navigate", {"question": "how are releases rolled back?"})
        text = got.messages[0].content.text
        assert "how are releases rolled back?" in text and "variants" in text and "get(" in text

    run(http_client(http_server), check)


def post(server: HttpServer, headers: dict[str, str]) -> httpx2.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    headers = {"accept": "application/json, text/event-stream", **headers}
    return httpx2.post(server.url, json=body, headers=headers, timeout=10)


def test_token_is_required(http_server: HttpServer) -> None:
    assert post(http_server, {}).status_code == 401
    wrong = post(http_server, {"authorization": "Bearer wrong"})
    assert wrong.status_code == 401
    assert wrong.headers["www-authenticate"].startswith("Bearer")
    assert post(http_server, {"authorization": TOKEN}).status_code == 401
    assert post(http_server, {"authorization": f"Bearer {TOKEN}"}).status_code == 200

    async def check(client: Client) -> None:
        await client.list_tools()

    with pytest.raises(Exception):  # noqa: B017 - the SDK surfaces the 401 as some error
        run(http_client(http_server, token="wrong"), check)


def test_dns_rebinding_headers_are_refused(http_server: HttpServer) -> None:
    auth = {"authorization": f"Bearer {TOKEN}"}
    assert post(http_server, {**auth, "host": "evil.example"}).status_code == 421
    assert post(http_server, {**auth, "origin": "http://evil.example"}).status_code == 403
    local = {**auth, "origin": f"http://localhost:{http_server.port}"}
    assert post(http_server, local).status_code == 200


def test_non_loopback_bind_needs_a_token(index: Index) -> None:
    done = index.kb("serve", "--transport", "http", "--host", "0.0.0.0", check=False)
    assert done.returncode == 1
    assert "without a bearer token" in done.stderr and "--token" in done.stderr


def test_missing_database_is_a_clear_error(index: Index, tmp_path: Path) -> None:
    done = index.kb(
        "--db", str(tmp_path / "none.db"), "serve", "--port", str(free_port()), check=False
    )
    assert done.returncode == 1
    assert "no index at" in done.stderr


def test_documents_added_while_serving_are_found(index: Index, http_server: HttpServer) -> None:
    extra = index.root / "later"
    extra.mkdir()
    (extra / "kayak.md").write_text("# Kayaking\n\nPaddle a sea kayak along the fjord coast.\n")
    index.kb("add", str(extra))

    async def check(client: Client) -> None:
        found = await call(
            client, "search", query="paddling a boat on a fjord", mode="vector", fields="rel_path"
        )
        assert found["results"][0]["rel_path"] == "later/kayak.md"
        assert (await call(client, "stats"))["documents"] == 4

    try:
        run(http_client(http_server), check)
    finally:
        index.kb("remove", str(extra / "kayak.md"))


def test_skill_prints_the_skill_file(index: Index) -> None:
    done = index.kb("skill")
    assert done.stdout.startswith("---\nname: kb-search")
    assert "kb search" in done.stdout and "--format json" in done.stdout


def test_serve_help_lists_options(index: Index) -> None:
    out = index.kb("serve", "--help").stdout
    for option in ("--transport", "--host", "--port", "--token"):
        assert option in out


def test_the_first_ctrl_c_stops_the_stdio_server(index: Index) -> None:
    import signal
    import time

    process = subprocess.Popen(
        [*KB, "serve"], env=index.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert "read-only" in process.stderr.readline()  # serving, stdin open and idle
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 130
        assert process.stderr.read().strip() == "kb serve: stopped"
    finally:
        process.kill()


def test_stdio_keeps_stdout_clean(index: Index) -> None:
    """Nothing but JSON-RPC may reach stdout; a bare EOF ends the server."""
    done = subprocess.run(
        [*KB, "serve"], env=index.env, input="", capture_output=True, text=True, timeout=60
    )
    assert done.stdout == ""
    assert "read-only" in done.stderr


def test_a_reranker_that_cannot_be_had_stops_serve_before_it_serves(index: Index) -> None:
    env = {**index.env, "KB_RERANKER": "nope/no-such-reranker"}
    done = subprocess.run(
        [*KB, "serve", "--transport", "http", "--port", str(free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "reranker 'nope/no-such-reranker' is not available" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_vectors_load_in_the_background_and_a_failure_says_lexical_only(tmp_path, capsys) -> None:
    from kb_search.config import load_config
    from kb_search.knowledge_base import KnowledgeBase
    from kb_search.mcp.server import load_vectors, start_line
    from kb_search.profile import Profile
    from kb_search.store import db
    from kb_testing import HashEmbedder

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# Kayaks\n\nPaddle along the fjord.\n")
    config = load_config(env={"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"})
    with KnowledgeBase(config, embedder=HashEmbedder(), profile=Profile.SERVE) as kb:
        kb.add([tmp_path / "notes"])
    with KnowledgeBase(config, embedder=HashEmbedder(), profile=Profile.SERVE) as kb:
        assert start_line(kb) == f"model {HashEmbedder.name}"
        load_vectors(kb).join(timeout=60)
        assert kb.models.leg_loaded and kb.vector_leg().search is not None
    assert capsys.readouterr().err == ""
    conn = db.connect(config.db_path)
    with db.transaction(conn):  # bound to a model this machine does not have
        conn.execute("UPDATE meta SET value = 'nope/no-such-model' WHERE key = 'model_name'")
    conn.close()
    offline = {"KB_MODEL_CACHE": str(tmp_path / "models"), "HF_HUB_OFFLINE": "1"}
    missing = load_config(env={"KB_DATA_DIR": str(tmp_path / "data"), **offline})
    with KnowledgeBase(missing, profile=Profile.SERVE) as kb:
        load_vectors(kb).join(timeout=60)
    err = capsys.readouterr().err
    assert err.startswith("kb serve: lexical only (") and err.count("\n") == 1
