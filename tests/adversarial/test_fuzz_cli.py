"""`kb search` and the id-taking commands with any arguments: exit 0 with valid UTF-8 JSON,
1 with one line on stderr in our words, or 2 for usage; never an internal error."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner
from fuzz_invariants import check_error_text
from fuzz_strategies import ID_TEXT, any_char, queries
from hypothesis import example, given
from hypothesis import strategies as st

from kb_search.cli import cli
from kb_search.environment import Environment
from kb_testing import HashEmbedder

OPTIONS = ["--top", "--mode", "--type", "--tag", "--path", "--lang", "--after", "--before",
           "--min-score", "--fields", "--compact", "--format", "--"]  # fmt: skip
option_values = st.one_of(
    st.sampled_from(["0", "-1", "3", "99999999999999999999", "1e3", "nan", "inf", "-0.5", "1.5",
                     "hybrid", "lexical", "vector", "json", "human", "chunk_id,citation", "",
                     "2025-01-01", "**", "[z-a]"]),
    st.text(any_char, max_size=10),
)  # fmt: skip


@pytest.fixture(scope="module")
def cli_env(corpus_kb, tmp_path_factory) -> Environment:
    home = tmp_path_factory.mktemp("cli-home")
    data = home / "data"
    shutil.copytree(corpus_kb.config.data_dir, data)
    env = {"HOME": str(home), "KB_DATA_DIR": str(data), "KB_MODEL": HashEmbedder.name}
    return Environment(env=env, cwd=home, stdout_isatty=False, stderr_isatty=False)


def check_run(environment: Environment, args: list[str]) -> None:
    result = CliRunner().invoke(cli, args, obj=environment, catch_exceptions=False)
    stdout = result.stdout_bytes.decode("utf-8")  # valid UTF-8, whatever was asked
    stderr = result.stderr_bytes.decode("utf-8")
    assert result.exit_code in (0, 1, 2), (args, result.exit_code, stderr)
    assert "internal error" not in stderr and "Traceback" not in stderr, (args, stderr)
    if result.exit_code == 0 and "--format" not in args:
        json.loads(stdout)
    if result.exit_code == 1:
        assert stderr.startswith("Error: "), (args, stderr)
        check_error_text(stderr.strip().removeprefix("Error: "))


@given(
    query=queries,
    options=st.lists(st.tuples(st.sampled_from(OPTIONS), option_values), max_size=3),
)
@example(query="git \udcff", options=[("--top", "99999999999999999999")])
@example(query="git", options=[("--min-score", "nan")])
def test_any_search_command_line_exits_cleanly(cli_env, query, options):
    args = ["search", "--format", "json"]
    for option, value in options:
        args += [option] if option in ("--compact", "--") else [option, value]
    check_run(cli_env, [*args, *query.replace("\x00", " ").split(" ")])


@given(
    command=st.sampled_from([["show", "--", "REF"], ["chunk", "--", "REF"],
                             ["similar", "--", "REF"], ["similar", "--chunk", "--", "REF"],
                             ["chunk", "--context", "REF", "1"], ["tag", "--", "REF", "x"],
                             ["remove", "--", "REF"], ["list", "--limit", "REF"],
                             ["list", "--offset", "REF"]]),
    ref=st.one_of(st.sampled_from(ID_TEXT), st.text(any_char, max_size=20)),
)  # fmt: skip
@example(command=["list", "--limit", "REF"], ref="99999999999999999999")
@example(command=["remove", "--", "REF"], ref="99999999999999999999")
def test_any_id_or_number_exits_cleanly(cli_env, command, ref):
    value = ref.replace("\x00", " ")
    short_id = value.strip().isascii() and value.strip().isdigit() and len(value.strip()) < 19
    if command[0] in ("remove", "tag") and short_id:
        value = "9" * 18  # never a real document: the index the other examples see stays
    check_run(cli_env, ["--format", "json", *[value if a == "REF" else a for a in command]])
