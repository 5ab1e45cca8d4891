"""Warm search server tests: real server processes on real sockets, over a small index built
with the test embedder (the servers learn it from tests/cli/warm/site/sitecustomize.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from warm_harness import HERE, SITE, TESTS, WarmKb, make_kb, register_other_embedder, stop_all

register_other_embedder()


@pytest.fixture
def server_env(monkeypatch) -> None:
    """Servers started from this process get the test embedder (sitecustomize)."""
    path = os.pathsep.join([str(SITE), str(TESTS), str(HERE), os.environ.get("PYTHONPATH", "")])
    monkeypatch.setenv("PYTHONPATH", path)


@pytest.fixture
def warm_kb(tmp_path: Path, model_cache: Path, server_env) -> Iterator[WarmKb]:
    warm = make_kb(tmp_path, model_cache)
    yield warm
    stop_all(warm)
