"""Shared pieces of the request-bounds tests: a small index built by a real `kb add`, a real
`kb serve` subprocess (optionally with a lowered open-file limit), raw MCP over HTTP."""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx2

TESTS = Path(__file__).resolve().parents[1]
SRC = TESTS.parent / "src"
KB = [sys.executable, "-m", "kb_search"]
DOCS = {
    "deploy.md": "# Deploying\n\nTo roll back a release, redeploy the previous tag.\n",
    "pasta.txt": "Cooking pasta: boil salted water, add the spaghetti, nine minutes.\n",
}
PROTOCOL = "2025-06-18"
ACCEPT = "application/json, text/event-stream"


@dataclass
class Index:
    root: Path
    env: dict[str, str]

    def kb(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*KB, *args], env=self.env, capture_output=True, text=True, timeout=timeout
        )


def build_index(root: Path) -> Index:
    """A data dir indexed with the hash test embedder (the subprocesses learn it from
    tests/cli/warm/site's sitecustomize, as the warm tests' servers do)."""
    docs = root / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    path = [str(SRC), str(TESTS / "warm" / "site"), str(TESTS), str(TESTS / "warm")]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(path),
        "HOME": str(root / "home"),
        "KB_DATA_DIR": str(root / "data"),
        "KB_MODEL": "kb-test/hash-64",
        "KB_NO_WARM": "1",
        "HF_HUB_OFFLINE": "1",
    }
    env.pop("KB_MCP_TOKEN", None)
    index = Index(root, env)
    added = index.kb("add", str(docs), "--format", "json")
    assert added.returncode == 0, added.stderr
    return index


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class HttpServer:
    process: subprocess.Popen
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> str:
        """Stop it (if still running) and return its stderr."""
        if self.process.poll() is None:
            self.process.kill()
        _, err = self.process.communicate(timeout=10)
        return err


def start_http(index: Index, env: dict[str, str] | None = None, nofile: int | None = None):
    """`kb serve --transport http` on a free loopback port, once it accepts connections."""

    def limit_files() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    port = free_port()
    process = subprocess.Popen(
        [*KB, "serve", "--transport", "http", "--port", str(port)],
        env={**index.env, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=limit_files,
    )
    server = HttpServer(process, port)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"kb serve exited: {server.stop()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return server
        except OSError:
            time.sleep(0.05)
    server.stop()
    raise TimeoutError("kb serve did not start listening")


def rpc(method: str, params: dict | None = None, id: int | None = 1) -> dict:
    message = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if id is not None:
        message["id"] = id
    return message


def initialize_message() -> dict:
    return rpc(
        "initialize",
        {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "bounds-test", "version": "1"},
        },
    )


def reply_of(response: httpx2.Response) -> dict:
    """The JSON-RPC reply in a JSON or an event-stream response."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                return json.loads(line[5:])
        raise AssertionError(f"no data in {response.text!r}")
    return response.json()


def open_session(client: httpx2.Client, url: str) -> str:
    response = client.post(url, json=initialize_message(), headers={"accept": ACCEPT})
    assert response.status_code == 200, (response.status_code, response.text)
    session = response.headers["mcp-session-id"]
    headers = {"accept": ACCEPT, "mcp-session-id": session, "mcp-protocol-version": PROTOCOL}
    done = client.post(url, json=rpc("notifications/initialized", id=None), headers=headers)
    assert done.status_code == 202, done.text
    return session


def call_tool(client: httpx2.Client, url: str, session: str, tool: str, **arguments) -> dict:
    headers = {"accept": ACCEPT, "mcp-session-id": session, "mcp-protocol-version": PROTOCOL}
    message = rpc("tools/call", {"name": tool, "arguments": arguments}, id=2)
    response = client.post(url, json=message, headers=headers)
    assert response.status_code == 200, (response.status_code, response.text)
    return reply_of(response)
