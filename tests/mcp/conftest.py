"""A real `kb serve` subprocess over a small index built with `kb add`."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_harness import DOCS, KB, SECRET, TOKEN, HttpServer, Index, free_port, wait_for_port


@pytest.fixture(scope="module")
def index(tmp_path_factory, model_cache: Path) -> Index:
    root = tmp_path_factory.mktemp("mcp")
    docs = root / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    outside = root / "outside-secret.txt"
    outside.write_text(SECRET, encoding="utf-8")
    (docs / "escape.txt").symlink_to(outside)
    env = {
        **os.environ,
        "HOME": str(root / "home"),
        "KB_DATA_DIR": str(root / "data"),
        "KB_MODEL_CACHE": str(model_cache),
        "HF_HUB_OFFLINE": "1",
    }
    env.pop("KB_MCP_TOKEN", None)
    built = Index(root, docs, outside, env)
    built.kb("add", str(docs), "--tag", "demo", "--format", "json")
    return built


@pytest.fixture(scope="module")
def http_server(index: Index) -> Iterator[HttpServer]:
    """Loopback HTTP server that still demands a token (--token forces auth)."""
    port = free_port()
    process = subprocess.Popen(
        [*KB, "serve", "--transport", "http", "--port", str(port), "--token", TOKEN],
        env=index.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_port(port, process)
        yield HttpServer(f"http://127.0.0.1:{port}/mcp", port, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
