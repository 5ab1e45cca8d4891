"""Issue 33, break 1: `--explain PATH` (CLI and MCP) was an oracle for every file on the host:
"/etc/shadow" said "never added", "~/.ssh/id_rsa" "no such file here", `/proc/self/cwd` and
`~` resolved to the server's folders, `/proc/1/root/x` was an internal PermissionError.

The rule: `--explain` and every read answer only for paths under an added folder; any other
path is "not under any added folder", with no word on whether it exists. Over MCP a relative
path is relative to the added folders (the client has no directory of ours)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client

from kb_search.config import load_config
from kb_search.knowledge_base import KnowledgeBase
from kb_search.mcp.server import build_server
from kb_testing import HashEmbedder

OUTSIDE = "not under any added folder"
HOST_PATHS = (
    "/etc/shadow", "/etc/no-such-file", "/proc/1/root/x", "/proc/self/cwd/notes/unindexed.xyz",
    "~", "~/.ssh/id_rsa",
)  # fmt: skip


@pytest.fixture
def added(tmp_path: Path) -> tuple[KnowledgeBase, Path, Path]:
    notes = tmp_path / "notes"
    (notes / "guide").mkdir(parents=True)
    (notes / "guide" / "deploy.md").write_text("# Deploy\n\nRoll back a release with the tool.\n")
    (notes / "unindexed.xyz").write_bytes(b"\x00\x01 binary, a type kb does not read\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.txt").write_text("roll back the key\n")
    env = {"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"}
    kb = KnowledgeBase(load_config(env=env), embedder=HashEmbedder(), cwd=tmp_path)
    kb.add([notes])
    return kb, notes, outside


def _explain(kb: KnowledgeBase, path: str) -> dict:
    response = kb.search("roll back", kb.search_options(mode="lexical"), explain=path)
    return response.explanation.to_dict()


def test_an_outside_path_gets_the_same_answer_whether_it_exists_or_not(added, tmp_path):
    kb, _, outside = added
    with kb:
        there = _explain(kb, str(outside / "secret.txt"))
        not_there = _explain(kb, str(outside / "no-such-file.txt"))
        host = [_explain(kb, p) for p in HOST_PATHS]
    for answer in (there, not_there, *host):
        assert answer["indexed"] is False and answer["status"] == "not indexed", answer
        assert answer["reason"] == OUTSIDE, answer
    # the answer names the path as given, never what it resolves to on this host
    assert host[3]["path"] == "/proc/self/cwd/notes/unindexed.xyz"
    assert str(tmp_path) not in json.dumps(host)


def test_a_path_under_an_added_folder_still_says_why(added):
    kb, notes, _ = added
    with kb:
        assert _explain(kb, str(notes / "unindexed.xyz"))["reason"] == "not a file type kb indexes"
        assert _explain(kb, str(notes / "gone.md"))["reason"] == "no such file here"
        assert _explain(kb, str(notes / "guide" / "deploy.md"))["indexed"] is True


def test_a_symlink_under_an_added_folder_to_an_outside_file_says_nothing(added):
    kb, notes, outside = added
    (notes / "link.txt").symlink_to(outside / "secret.txt")
    (notes / "dangling.txt").symlink_to(outside / "none.txt")
    with kb:
        assert _explain(kb, str(notes / "link.txt"))["reason"] == OUTSIDE
        assert _explain(kb, str(notes / "dangling.txt"))["reason"] == OUTSIDE


def _mcp_search(kb: KnowledgeBase, arguments: dict) -> tuple[bool, str]:
    server = build_server(kb)

    async def main() -> tuple[bool, str]:
        async with Client(server) as client:
            result = await client.call_tool("search", arguments)
            return result.is_error, result.content[0].text

    return anyio.run(main)


def test_mcp_explain_resolves_against_the_added_folders_not_the_servers_cwd(added, tmp_path):
    kb, notes, outside = added
    with kb:
        for given in ("guide/deploy.md", "notes/guide/deploy.md"):  # below the folder; rel_path
            error, text = _mcp_search(kb, {"query": "roll back", "explain": given})
            assert not error, text
            assert json.loads(text)["explain"]["indexed"] is True, given
        # `~` is a name like any other: a file `~` in an added folder, never the server's home
        error, text = _mcp_search(kb, {"query": "roll back", "explain": "~/.ssh/id_rsa"})
        tilde = json.loads(text)["explain"]
        assert tilde["path"].startswith(str(notes)) and tilde["reason"] == "no such file here"
        for given in ("/etc/shadow", "/proc/1/root/x", "../elsewhere/secret.txt",
                      str(outside / "secret.txt"), "/proc/self/cwd"):  # fmt: skip
            error, text = _mcp_search(kb, {"query": "roll back", "explain": given})
            assert not error, text  # never an internal error
            assert json.loads(text)["explain"]["reason"] == OUTSIDE, given


def test_a_settings_file_left_out_for_a_secret_is_named_so_without_the_why(added):
    """Old code: "not a file type kb indexes", which is false (kb reads `.bashrc`). The answer
    must be true and must not say that the file holds a credential."""
    kb, notes, _ = added
    (notes / ".bashrc").write_text("export GITHUB_TOKEN=ghp_ZyXw0123456789ZyXw0123456789zyxwvu\n")
    with kb:
        reason = _explain(kb, str(notes / ".bashrc"))["reason"]
    assert reason == "left out: a settings file (see docs/formats.md)"
    for word in ("secret", "password", "token", "credential", "ghp_"):
        assert word not in reason
    (notes / ".coveragerc").write_text("branch = True\n")  # a tool's, left out for no secret
    with kb:
        assert _explain(kb, str(notes / ".coveragerc"))["reason"] == reason
