"""Issue 34, item 7: every claim SKILL.md and the MCP instructions make is run here against a
real index. Each check quotes the sentence it holds to: when the text changes, the test says
which claim lost its check."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from kb_search.config import load_config
from kb_search.knowledge_base import KnowledgeBase
from kb_search.mcp.server import build_server
from kb_search.mcp.tools import INSTRUCTIONS_HEAD
from kb_testing import HashEmbedder

ROOT = Path(__file__).resolve().parents[2]
SKILL = (ROOT / "src" / "kb_search" / "SKILL.md").read_text(encoding="utf-8")
FLAT = " ".join(SKILL.split())

RETRY = '''"""Retry policies."""


class RetryPolicy:
    """How often a request is tried again."""

    def backoff(self, attempt: int) -> float:
        """Seconds to wait before the next attempt: exponential, capped."""
        return min(0.5 * 2**attempt, 30.0)


def max_connections_for(workers: int) -> int:
    return workers * 4
'''

PAGE = """<html lang="en"><body><h1>Write-ahead log</h1>
<p>The <span class="pre">write-ahead log</span> keeps readers going while a writer commits.</p>
<h2>Checkpoints</h2><p>A checkpoint copies pages back into the database file.</p>
</body></html>
"""


def said(*quotes: str) -> None:
    """The claims a check holds SKILL.md to are still there, word for word."""
    for quote in quotes:
        assert " ".join(quote.split()) in FLAT, f"SKILL.md no longer says: {quote}"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    (root / "ops" / "deep").mkdir(parents=True)
    (root / "git.md").write_text(
        "# Git Admin Guide\n\n## Installing\n\nInstall git from source with make and make"
        " install.\n\n## Backups\n\nBack up repositories nightly; retention is 30 days.\n"
    )
    (root / "ops" / "deploy.md").write_text(
        "# Deploy\n\nRoll back a release with the deploy tool. Draft notes stay private.\n"
    )
    (root / "ops" / "deep" / "wal.md").write_text(
        "# SQLite\n\nThe write-ahead log lets readers continue while a writer commits.\n"
    )
    (root / "retry.py").write_text(RETRY)
    (root / "wal.html").write_text(PAGE)
    sections = [
        f"## Part {n}\n\nPart {n} of the log rotation policy: what it keeps, for how long, and"
        " where the older files go." for n in range(6)
    ]
    (root / "rotation.md").write_text("# Rotation\n\n" + "\n\n".join(sections) + "\n")
    (root / "ops" / "logs.md").write_text("# Logs\n\nLog rotation keeps a week of files.\n")
    return root


@pytest.fixture
def indexed(kb, corpus: Path):
    kb("add", str(corpus), "--tag", "work")
    return kb


def search(kb, *args: str) -> dict[str, Any]:
    return kb.json("search", *args)


def test_compact_is_about_half_the_full_json_and_holds_what_it_says(indexed, corpus):
    said(
        "`--compact` answers with what you need to read and cite, at about half the tokens of"
        " the full JSON (a chunk of code, which has no heading, is headed by its symbol:"
        " `Retry.backoff`)",
        "`legs` appears only when a search leg failed, `notes` only when there is something to"
        " know.",
    )
    compact = search(indexed, "install git backups deploy retry", "--compact")
    full = search(indexed, "install git backups deploy retry")
    assert len(json.dumps(compact, separators=(",", ":"))) < 0.6 * len(json.dumps(full))
    assert all(set(r) == {"chunk_id", "citation", "heading", "score", "text"}
               for r in compact["results"])  # fmt: skip
    assert "legs" not in compact
    code = search(indexed, "backoff attempt", "--type", "code")["results"]
    headed = search(indexed, "backoff attempt", "--compact", "--type", "code")["results"]
    assert code[0]["source"]["heading"] is None and code[0]["source"]["symbol"]
    assert headed[0]["heading"] == code[0]["source"]["symbol"]


def test_fields_filters_and_their_errors(indexed, kb, corpus):
    said(
        "`--fields citation,chunk_id,title,text`",
        "`*` stays inside one folder, `**` crosses folders, a pattern without `/` matches the"
        " file name: `path:*.md`",
        "`--lang` is the programming language of code.",
        "A type, tag or language the index does not have is an error (exit 1) that lists the"
        " ones it has (a type kb could read but the index holds none of included).",
        "`--min-score 0.3` drops weak results",
        "`--files` lists each file once with its best chunk",
    )
    picked = search(indexed, "git", "--fields", "citation,chunk_id,title,text")["results"]
    assert picked and all(set(r) == {"citation", "chunk_id", "title", "text"} for r in picked)
    def paths(*args: str) -> set[str]:
        found = search(indexed, *args, "--mode", "lexical")["results"]
        return {r["source"]["rel_path"] for r in found}

    assert paths("continue path:notes/*") == set()
    assert paths("continue path:notes/**") == {"notes/ops/deep/wal.md"}
    assert paths("release deploy path:*.md") == {"notes/ops/deploy.md"}
    assert paths("workers", "--lang", "python") == {"notes/retry.py"}
    for flag, value, has in (("--type", "pdf", "markdown"), ("--tag", "home", "work"),
                             ("--lang", "en", "python")):  # fmt: skip
        refused = kb("search", "git", flag, value, ok=False)
        assert refused.exit_code == 1 and has in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
    assert all(r["score"] >= 0.3 for r in search(indexed, "git", "--min-score", "0.3")["results"])
    files = [r["source"]["path"] for r in search(indexed, "the", "--files")["results"]]
    assert len(files) == len(set(files))


def test_budget_cursor_and_freshness(indexed, corpus):
    said(
        "A budget: `--max-tokens 800` stops the answer between two results before 800 tokens"
        " (cl100k); `next_cursor` in the JSON continues the same ranking with `--cursor CURSOR`.",
        "Each result's `freshness` says whether its file is `fresh`, `changed` or `gone` since it"
        " was indexed; a note says how to update the index (`kb sync`), or pass `--sync-stale`.",
    )
    query = ("git", "install", "backups", "deploy", "--mode", "lexical", "--compact")
    whole = [r["chunk_id"] for r in search(indexed, *query)["results"]]
    first = search(indexed, *query, "--max-tokens", "60")
    assert first["next_cursor"] and len(first["results"]) < len(whole)
    rest = search(indexed, *query, "--max-tokens", "4000", "--cursor", first["next_cursor"])
    assert [r["chunk_id"] for r in first["results"] + rest["results"]] == whole
    (corpus / "ops" / "deploy.md").write_text("# Deploy\n\nRoll back a release, changed.\n")
    (corpus / "git.md").unlink()
    found = search(indexed, "git", "deploy", "release", "--mode", "lexical", "--format", "json")
    states = {Path(r["source"]["path"]).name: r["freshness"] for r in found["results"]}
    assert states["deploy.md"] == "changed" and states["git.md"] == "gone"
    assert any("kb sync" in note for note in found["notes"])


def test_query_syntax(indexed):
    said(
        "The query is the rest of the command line: no quotes needed, options anywhere.",
        "`-term` excludes.",
        "Raw SQLite FTS5 syntax: wrap the WHOLE query in single quotes",
        "An identifier-shaped query (`snake_case`, `dotted.name`, `CamelCase`, `--flag`) puts the"
        " chunk that defines it (its heading, symbol or a line starting with it) first;"
        " `score_breakdown.defines` names it.",
    )
    anywhere = search(indexed, "roll", "--top", "2", "back", "release")
    assert anywhere["query"] == "roll back release" and anywhere["returned"] <= 2
    excluded = search(indexed, "--mode", "lexical", "--", "release", "-draft")
    assert excluded["results"] == []
    raw = search(indexed, "'install AND source'", "--mode", "lexical")["results"]
    assert [r["source"]["rel_path"] for r in raw] == ["notes/git.md"]
    defined = search(indexed, "max_connections_for")["results"][0]
    assert defined["source"]["symbol"] == "max_connections_for"
    assert defined["score_breakdown"].get("defines")


def test_per_file_cap(kb, corpus, environment):
    environment.env["KB_CHUNK_MIN_TOKENS"] = "1"  # one chunk per section of rotation.md
    environment.env["KB_CHUNK_MAX_TOKENS"] = "32"
    kb("add", str(corpus))
    said(
        "At most 3 chunks of one file come before other files' chunks (`--per-file N` changes"
        " it, `0` lifts it)",
    )

    def order(*args: str) -> list[str]:
        found = search(kb, "log rotation policy", "--mode", "lexical", *args)["results"]
        return [r["source"]["rel_path"] for r in found]

    capped = order()
    assert capped.count("notes/rotation.md") > 3
    first_other = next(i for i, p in enumerate(capped) if p != "notes/rotation.md")
    assert first_other <= 3
    assert next(i for i, p in enumerate(order("--per-file", "1")) if p != "notes/rotation.md") <= 1


def test_phrasings_and_scores(indexed):
    said(
        "a chunk found by one leg only scores at most 0.5, or 0.55 when it is among that leg's"
        " first 3.",
        "`legs`: `ok`, `empty` (ran, found nothing) or `error: why`",
        "Each result's `found_by` lists `[phrasing, leg, rank]` for every phrasing that found it"
        " (0 = the query, 1.. = the variants in order); the full JSON's `variants` lists them with"
        " each leg's status.",
        "`score` is 0..1 and only compares results within one response.",
        "`total_matches` = how many chunks contain the query's words (0: none do, the results"
        " are by meaning alone)",
    )
    answer = search(indexed, "keep history safe", "--also", "lex: retention nightly")
    assert answer["variants"][0]["legs"]
    hit = next(r for r in answer["results"] if r["source"]["rel_path"] == "notes/git.md")
    assert any(found[0] == 1 and found[1] == "lexical" for found in hit["found_by"])
    assert all(0 <= r["score"] <= 1 for r in answer["results"])
    plain = search(indexed, "install git backups retention")
    assert set(plain["legs"].values()) <= {"ok", "empty"}
    for result in plain["results"]:
        legs = result["score_breakdown"]
        if (legs.get("fts") is None) != (legs.get("vector") is None):
            rank = legs.get("fts_rank") or legs.get("vector_rank")
            assert result["score"] <= (0.55 if rank <= 3 else 0.5) + 1e-9, result
    meaning = search(indexed, "zzyzx quorble")
    assert meaning["total_matches"] == 0


def test_citations_and_reads(indexed, kb, corpus, environment, tmp_path):
    said(
        "so it opens as given from any directory",
        "each passage under the citation of what it returned",
        "code symbols (`path.py#Class.method`, or a method's own name when only one class has"
        " it)",
        "Markdown, text and code from the file (`from: disk`); HTML, PDF, EPUB, office"
        " documents, notebooks and e-mail as their converted text, with the source lines or pages"
        " it came from (`from: index`, each heading line once)",
        "`--raw` gives a text file's own lines instead (the HTML source).",
        "Only indexed files are read; `--explain` answers only for files under an added folder.",
        "the one that does not fit is cut with a marker, the rest are listed in `omitted`",
    )
    hit = search(indexed, "install git from source", "--compact")["results"][0]
    assert hit["citation"].startswith(str(corpus / "git.md") + "#L")
    environment.cwd = tmp_path / "data dir"  # another directory
    got = kb.json("get", hit["citation"])["passages"][0]
    assert got["from"] == "disk" and got["citation"] == hit["citation"]
    assert got["text"] == hit["text"]
    method = kb.json("get", f"{corpus}/retry.py#RetryPolicy.backoff")["passages"][0]
    assert method["text"].lstrip().startswith("def backoff")
    assert kb.json("get", f"{corpus}/retry.py#backoff")["passages"][0]["lines"] == method["lines"]
    line = method["lines"][0] + 1
    around = kb.json("get", f"{corpus}/retry.py:{line}", "--symbol")["passages"][0]
    assert around["lines"] == method["lines"]
    page = search(indexed, "checkpoint copies pages", "--compact", "--type", "html")["results"][0]
    clean = kb.json("get", page["citation"])["passages"][0]
    assert clean["from"] == "index" and "<" not in clean["text"] and clean["lines"]
    raw = kb.json("get", page["citation"], "--raw")["passages"][0]
    assert "<p>" in raw["text"]
    cut = kb.json("get", hit["citation"], hit["citation"], "--max-bytes", "40")
    assert cut["passages"][0]["truncated"] and cut["omitted"] == [hit["citation"]]
    refused = kb("get", "/etc/passwd", ok=False)
    assert refused.exit_code == 1 and "not in the index" in refused.stderr
    outside = kb.json("search", "git", "--explain", "/etc/passwd")["explain"]
    assert outside["reason"] == "not under any added folder"


def test_more_context_commands(indexed, corpus):
    said(
        '`kb chunk` returns `{"chunk_id": 18, "chunks": [{"chunk_id", "text", "citation",'
        ' "lines", "page", "heading", ...}]}`.',
    )
    block = SKILL.split("## Get more context", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    hit = search(indexed, "install git from source", "--compact")["results"][0]
    for line in block.strip().splitlines():
        command = line.split("  #", 1)[0].strip().replace("18", str(hit["chunk_id"]))
        command = command.replace("docs/git-admin.md", str(corpus / "git.md"))
        args = shlex.split(command)[1:]
        if args[0] == "similar":
            continue  # needs vectors of a real model: the MCP test below runs `similar`
        args = [str(corpus / "git.md") if a == "5" else a for a in args]
        data = json.loads(indexed(*args).stdout)
        assert data
        if args[0] == "chunk":
            keys = {"chunk_id", "text", "citation", "lines", "page", "heading"}
            assert keys <= set(data["chunks"][0])


def test_no_database_is_exit_1_with_one_line(kb):
    said("Exit code 1 means a user error with a one-line message on stderr")
    missing = kb("search", "git", ok=False)
    assert missing.exit_code == 1 and len(missing.stderr.strip().splitlines()) == 1


def _mcp(kb: KnowledgeBase, calls: list[tuple[str, dict]]) -> list[Any]:
    server = build_server(kb)

    async def main() -> list[Any]:
        out = []
        async with Client(server) as client:
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                assert not result.is_error, (name, result.content[0].text)
                out.append(json.loads(result.content[0].text))
        return out

    return anyio.run(main)


def test_every_sentence_of_the_mcp_instructions(corpus, tmp_path):
    head = " ".join(INSTRUCTIONS_HEAD.split())
    for quote in (
        "`search` answers compact (chunk_id, citation, heading, score, text)",
        "(/abs/path#L10-L24 or /abs/path#page=N)",
        "Read cited passages (the clean text that was indexed) with get(citations), code by"
        " symbol with get([\"a.py#Cls.method\"])",
        "search(explain=PATH) says why a file is not in the results.",
        "A relative path is relative to an added folder.",
        "only indexed content is served, never other files.",
    ):
        assert quote in head, quote
    env = {"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"}
    with KnowledgeBase(load_config(env=env), embedder=HashEmbedder(), cwd=tmp_path) as kb:
        kb.add([corpus])
        found, page, method, chunk, like, why, outside = _mcp(kb, [
            ("search", {"query": "install git from source",
                        "variants": ["lex: make install", "vec: building git"]}),
            ("search", {"query": "checkpoint copies pages type:html"}),
            ("get", {"citations": ["retry.py#RetryPolicy.backoff"]}),
            ("get_chunk", {"chunk_id": 1, "context": 1}),
            ("similar", {"chunk_id": 1, "top": 2}),
            ("search", {"query": "install git", "explain": "git.md"}),
            ("get", {"citations": ["notes/ops/deploy.md"]}),
        ])  # fmt: skip
    hit = found["results"][0]
    assert set(hit) == {"chunk_id", "citation", "heading", "score", "text"}
    assert re.fullmatch(re.escape(str(corpus / "git.md")) + r"#L\d+(-L\d+)?", hit["citation"])
    read = _mcp_get(tmp_path, corpus, page["results"][0]["citation"])
    assert "<" not in read["text"] and read["from"] == "index"
    assert method["passages"][0]["text"].lstrip().startswith("def backoff")
    assert chunk["chunks"] and set(like["results"][0]) == set(hit)
    assert why["explain"]["indexed"] is True
    assert outside["passages"][0]["path"] == str(corpus / "ops" / "deploy.md")


def _mcp_get(tmp_path: Path, corpus: Path, citation: str) -> dict[str, Any]:
    env = {"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"}
    with KnowledgeBase(load_config(env=env), embedder=HashEmbedder(), cwd=tmp_path) as kb:
        return _mcp(kb, [("get", {"citations": [citation]})])[0]["passages"][0]
