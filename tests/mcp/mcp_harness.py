"""Shared pieces of the MCP tests: launching `kb`, the test corpus, free ports."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

KB = [sys.executable, "-m", "kb_search"]
TOKEN = "test-token-0123456789"

DOCS = {
    "git.md": "# Git Admin Guide\n\n## Installing\n\nTo install the latest version of git from"
    " source, run make and make install.\n\n## Hooks\n\nServer hooks reject force pushes to the"
    " main branch.\n",
    "pasta.txt": "Cooking pasta: boil salted water, add the spaghetti and cook for nine minutes."
    " Drain and toss with olive oil and garlic.\n",
    "sqlite.md": "# SQLite notes\n\nWrite-ahead logging lets readers continue while a writer"
    " commits. FTS5 gives full text search with BM25 ranking.\n",
}
SECRET = "TOP-SECRET-CONTENT-never-served"


@dataclass
class Index:
    root: Path
    docs: Path
    outside: Path
    env: dict[str, str]

    def kb(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*KB, *args], env=self.env, capture_output=True, text=True, timeout=120, check=check
        )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"kb serve exited: {process.stderr.read()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError("kb serve did not start listening")


@dataclass
class HttpServer:
    url: str
    port: int
    process: subprocess.Popen
