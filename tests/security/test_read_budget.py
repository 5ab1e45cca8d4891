"""Issue 33, break 2 (the read part): the Markdown heading pattern of `kb get PATH#anchor`
backtracked cubically (`"# a" + " " * 3000 + "b"` took 44 s), and no read ran inside a time
budget. Now the heading is parsed in linear time, and every read runs inside the search budget
(`search.timeout_s` and the client's cancellation) like a search."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import kb_search
from kb_search.config import load_config
from kb_search.errors import SearchError
from kb_search.knowledge_base import KnowledgeBase
from kb_search.search.budget import SEARCH_CANCELLED
from kb_testing import HashEmbedder

SRC = Path(kb_search.__file__).resolve().parents[1]  # the kb_search under test


def _kb(tmp_path: Path, lines: list[str]) -> KnowledgeBase:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "r.md").write_text("\n".join(lines) + "\n")
    env = {"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"}
    kb = KnowledgeBase(load_config(env=env), embedder=HashEmbedder(), cwd=tmp_path)
    kb.add([notes])
    return kb


def test_an_anchor_read_of_a_hostile_heading_is_quick(tmp_path: Path):
    """In a child process, so that the old cubic pattern fails the test by its time limit
    instead of holding the suite for minutes."""
    with _kb(tmp_path, ["# a" + " " * 3000 + "b", "", "text under it", "", "## Real", "x"]):
        pass
    env = {**os.environ, "KB_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(SRC)}
    command = [sys.executable, "-m", "kb_search", "get", "notes/r.md#nosuch", "--format", "json"]
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("kb get of an anchor took over 20 s on a 3,000-space heading line")
    assert done.returncode == 1 and b"no indexed text on a section #nosuch" in done.stderr
    assert time.monotonic() - started < 20


@pytest.mark.parametrize(
    "line",
    [
        "# a" + " " * 100_000 + "b",
        "#" + " " * 100_000 + "#" * 100_000 + " " * 100_000 + "x",
        "   ######" + " \t" * 50_000 + "#" * 50_000,
    ],
)
def test_the_heading_parser_is_linear_on_100_kb_worst_cases(line: str):
    from kb_search.reading import markdown_heading

    started = time.monotonic()
    for _ in range(20):
        markdown_heading(line)
    assert time.monotonic() - started < 1.0


def test_heading_lines_parse_as_commonmark_atx_headings():
    from kb_search.reading import markdown_heading

    assert markdown_heading("## Config ##") == (2, "Config")
    assert markdown_heading("   # C#") == (1, "C#")
    assert markdown_heading("#hashtag") is None
    assert markdown_heading("    # indented code") is None
    assert markdown_heading("####### seven") is None
    assert markdown_heading("# a" + " " * 3000 + "b") == (1, "a" + " " * 3000 + "b")


def test_a_read_stops_when_its_client_cancels(tmp_path: Path):
    kb = _kb(tmp_path, ["# Top", "", *(f"line {n}" for n in range(2000))])
    cancelled = threading.Event()
    cancelled.set()
    token = SEARCH_CANCELLED.set(cancelled)
    try:
        with kb, pytest.raises(SearchError, match="cancelled"):
            kb.get(["notes/r.md#L1-L2000"])
    finally:
        SEARCH_CANCELLED.reset(token)
    with kb:
        assert kb.get(["notes/r.md#L1-L2"]).passages[0].text == "# Top\n"


def test_a_read_stops_at_the_search_budget(tmp_path: Path, monkeypatch):
    kb = _kb(tmp_path, ["# Top", "", "body"])
    clock = itertools.chain([0.0], itertools.repeat(100.0))  # starts at 0; every look: 100 s
    monkeypatch.setattr("kb_search.search.budget.time.monotonic", lambda: next(clock))
    with kb, pytest.raises(SearchError, match="budget"):
        kb.get(["notes/r.md#L1-L3"])


def test_a_path_with_lines_is_parsed_in_linear_time():
    """`path:10-20` is split by string operations: the regex it replaced backtracked
    quadratically on a long run of colons (a request's citation is untrusted input)."""
    import time

    from kb_search.reading import colon_lines

    assert colon_lines("notes/a.md:10") == ("notes/a.md", 10, 10)
    assert colon_lines("C:/x.md:3-7") == ("C:/x.md", 3, 7)
    assert colon_lines("a.md:10-") is None and colon_lines(":10") is None
    assert colon_lines("a.md") is None
    started = time.perf_counter()
    assert colon_lines("a:" * 50_000 + "x") is None
    assert time.perf_counter() - started < 0.5
