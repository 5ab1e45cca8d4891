"""One `SearchRequest` per `kb search`: built once from the command's click parameters, the
same whether the warm server parses the front door's argv or the CLI sends it as JSON; one
check decides whether the warm path is asked at all."""

from __future__ import annotations

import click
import pytest

from kb_search.cli.search import forwarded_request, search
from kb_search.cli.search_request import SearchRequest
from kb_search.cli.warm import warm_client
from kb_search.cli.warm.client import WarmClient
from kb_search.config import load_config

ARGV = [
    "retry", "with", "jitter", "--mode", "lexical", "--top", "5", "--type", "md",
    "--tag", "work", "--path", "code/**", "--lang", "python", "--after", "2024-01-01",
    "--min-score", "0.2", "--fusion", "rrf", "--also", "lex: RETRY_TIMES", "--per-file", "2",
    "--files", "--compact", "--max-tokens", "900",
]  # fmt: skip


def _parsed(argv: list[str]) -> SearchRequest:
    return SearchRequest.from_params(search.make_context("search", list(argv)).params)


def test_the_front_door_argv_and_the_cli_build_the_same_request():
    request = _parsed(ARGV)
    assert request.query == "retry with jitter"
    assert request.filters == {
        "types": ["md"], "tags": ["work"], "paths": ["code/**"], "languages": ["python"],
        "after": ["2024-01-01"], "before": [],
    }  # fmt: skip
    assert request.fields == ["chunk_id", "citation", "heading", "score", "text"]
    assert (request.top, request.min_score, request.fusion) == (5, 0.2, "rrf")
    assert (request.per_file, request.files, request.max_tokens) == (2, True, 900)
    assert forwarded_request(ARGV) == request


def test_the_request_travels_as_json_unchanged():
    request = _parsed(ARGV)
    assert SearchRequest.from_dict(request.to_dict()) == request
    assert SearchRequest.from_dict({**request.to_dict(), "from_a_newer_client": 1}) == request


@pytest.mark.parametrize(
    "extra", [["--explain", "a.md"], ["--expand"], ["--sync-stale"], ["--format", "human"]]
)
def test_what_only_runs_in_process_is_not_forwarded(extra):
    assert forwarded_request(["backups", *extra]) is None
    assert _parsed(["backups", *extra]).warm_can_answer == (extra[0] == "--format")


def test_fields_and_compact_together_are_a_usage_error():
    with pytest.raises(click.UsageError, match="--fields or --compact"):
        _parsed(["backups", "--fields", "citation", "--compact"])
    assert forwarded_request(["backups", "--fields", "citation", "--compact"]) is None


@pytest.mark.parametrize(
    ("env", "on"), [({}, True), ({"KB_NO_WARM": "1"}, False), ({"KB_WARM": "false"}, False)]
)
def test_one_check_says_whether_the_warm_path_is_asked(tmp_path, env, on):
    env = {"KB_DATA_DIR": str(tmp_path), **env}
    client = warm_client(load_config(env=env, cwd=tmp_path, home=tmp_path), env)
    assert isinstance(client, WarmClient) if on else client is None
