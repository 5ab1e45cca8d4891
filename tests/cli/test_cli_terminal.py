"""The CLI as a person meets it: unquoted queries, errors, help, human output that fits the
terminal, colours, the pager, citations that open, agent-sized JSON."""

from __future__ import annotations

import json
import re

import click
import pytest
from rich.cells import cell_len

ESCAPE = re.compile(r"\x1b\[[0-9;]*m|\x1b\]8;[^\x1b]*\x1b\\")
COLOUR = re.compile(r"\x1b\[(?:[0-9;]*;)?(3[0-7]|9[0-7])m")


def test_query_words_need_no_quotes_and_options_go_anywhere(kb, sample):
    kb("add", str(sample))
    res = kb.json("search", "install", "--mode", "lexical", "git", "type:markdown", "--top", "2")
    assert res["query"] == "install git type:markdown"
    assert res["returned"] == 2
    assert {r["source"]["type"] for r in res["results"]} == {"markdown"}


def test_a_leading_dash_word_is_explained(kb, sample):
    kb("add", str(sample))
    result = kb("search", "backup", "-rsync", "--top", "2", ok=False)
    assert result.exit_code == 2
    assert "-rsync is not an option" in result.stderr
    assert "kb search --top 2 -- backup -rsync" in result.stderr
    fine = kb.json("search", "--mode", "lexical", "--", "backup", "-rsync")
    assert fine["results"] and all("rsync" not in r["text"] for r in fine["results"])


@pytest.mark.parametrize(
    "command", ["search", "add", "sync", "show", "chunk", "list", "similar", "eval", "export"]
)
def test_help_has_examples(kb, command):
    assert "Examples:" in kb(command, "--help").stdout or "Example:" in kb(command, "--help").stdout


def test_every_help_fits_80_columns(kb):
    from kb_search.cli import cli

    names = [["--help"]] + [[name, "--help"] for name in cli.list_commands(click.Context(cli))]
    names += [["hook", "install", "--help"], ["config", "show", "--help"]]
    for args in names:
        text = kb(*args).stdout
        assert max(len(line) for line in text.splitlines()) <= 80, args


def test_search_help_teaches_the_query_syntax(kb):
    text = kb("search", "--help").stdout
    for needle in ("Query syntax", '"a phrase"', "-word", "-- -draft", "type:pdf",
                   "'raw FTS5'", "--compact", "--fields"):  # fmt: skip
        assert needle in text, needle


SHELLS = [("bash", "complete -o"), ("zsh", "#compdef kb"), ("fish", "complete --no-files")]


@pytest.mark.parametrize(("shell", "marker"), SHELLS)
def test_completion_scripts(kb, shell, marker):
    out = kb("completion", shell).stdout
    assert marker in out and "_KB_COMPLETE" in out


def test_version_and_config_alone(kb):
    assert kb.json("version")["kb-search"]
    assert kb.json("config")["search.default_top"]["source"] == "default"


def test_compact_and_fields_are_agent_sized(kb, sample):
    kb("add", str(sample))
    full = kb.json("search", "retry backoff")
    compact = json.loads(kb("search", "retry", "backoff", "--compact").stdout)
    assert [set(r) for r in compact["results"]] == [
        {"chunk_id", "citation", "heading", "score", "text"} for _ in compact["results"]
    ]
    assert compact["results"][0]["citation"] == full["results"][0]["citation"]
    assert len(json.dumps(compact)) < len(json.dumps(full)) / 2
    picked = json.loads(kb("search", "retry", "--fields", "title, source.path,chunk_id").stdout)
    assert list(picked["results"][0]) == ["title", "path", "chunk_id"]
    bad = kb("search", "retry", "--fields", "nope", ok=False)
    assert bad.exit_code == 1 and "unknown field 'nope'" in bad.stderr
    assert kb("search", "x", "--compact", "--fields", "text", ok=False).exit_code == 2


def test_timings_count_startup_and_model_load(kb, sample):
    kb("add", str(sample))
    timings = kb.json("search", "retry backoff")["timings_ms"]
    assert timings["startup"] > 0 and "model_load" in timings
    stages = timings["lexical"] + timings["vector"] + timings["fetch"]
    assert timings["total"] >= timings["startup"] + timings["model_load"] + stages - 0.1


def human(kb, *args: str) -> str:
    return kb(*args, "--format", "human").stdout


def test_human_search_fits_the_width_and_cites_openable_paths(kb, sample, environment):
    kb("add", str(sample))
    for columns in ("80", "50"):
        environment.env["COLUMNS"] = columns
        out = human(kb, "search", "git", "backups", "table", "--top", "10")
        assert max(cell_len(line) for line in out.splitlines()) <= int(columns)
    assert "my notes/docs/git-admin.md:35" in out  # relative to the cwd, openable as path:line
    assert "\x1b" not in out  # not a terminal: no escape codes


def test_snippets_lose_markdown_noise(kb, sample):
    kb("add", str(sample))
    out = human(kb, "search", "backups", "bundle", "nightly", "--mode", "lexical")
    assert "## " not in out and "|---" not in out and "| what |" not in out and "`" not in out
    assert "what · how often · tool;" in out


def test_identifiers_keep_their_underscores_beside_a_highlight(kb, tmp_path):
    """The words a query matched are highlighted inside identifiers (`bind_contextvars`,
    `CHACHA_POLY1305_NONCE_SIZE`): the old code took the `_` beside a highlight for Markdown
    emphasis and showed `bindcontextvars(requestid=...` and `CHACHAPOLY1305NONCE_SIZE`."""
    page = tmp_path / "frameworks.md"
    page.write_text(
        "# Frameworks\n\nA _twelve_ byte CHACHA_POLY1305_NONCE_SIZE; a view calls"
        " bind_contextvars(request_id=rid).\n",
        encoding="utf-8",
    )
    kb("add", str(page))
    out = " ".join(human(kb, "search", "bind", "request", "id", "nonce", "twelve").split())
    assert "bind_contextvars(request_id=rid)" in out, out
    assert "A twelve byte CHACHA_POLY1305_NONCE_SIZE;" in out, out  # emphasis still goes


@pytest.mark.parametrize(
    ("snippet", "heading", "shown"),
    [
        ("How sync waves work? 1. Order all", "Sync › How sync waves work?", "1. Order all"),
        ("From source: Download it", "Install › From source", "Download it"),
        ("How \x02sync\x03 \x02waves\x03 work? Order", "How sync waves work?", "Order"),
        ("\x02OCI\x03 registries are", "OCI", "registries are"),
        ("Usage — run it", "Usage", "run it"),
        # a separator goes only with the space after it: flags, numbers, dotfiles stay whole
        ("Flags -v enables", "Flags", "-v enables"),
        ("Options --force", "Options", "--force"),
        ("Temperature -5 degrees", "Temperature", "-5 degrees"),
        ("Config .env holds", "Config", ".env holds"),
        # left alone: a longer word, nothing after it, a highlight the heading would cut,
        # a snippet that starts elsewhere
        ("Installation guide", "Install", "Installation guide"),
        ("config_path is", "config", "config_path is"),
        ("Install\x02ation\x03", "Install", "Install\x02ation\x03"),
        ("Install", "Install", "Install"),
        ("How \x02sync waves work? 1\x03 x", "How sync waves work?", None),
        ("…in the middle", "From source", None),
    ],
)
def test_a_snippet_does_not_repeat_the_heading_above_it(snippet, heading, shown):
    from kb_search.cli.plain import without_heading

    assert without_heading(snippet, heading) == (snippet if shown is None else shown)


def test_human_results_show_each_heading_once(kb, sample):
    kb("add", str(sample))
    out = human(kb, "search", "install", "git", "from", "source", "--top", "10")
    lines = [line.strip() for line in out.splitlines()]
    for above, below in zip(lines, lines[1:]):
        if above and below and not above[0].isdigit():
            assert not below.startswith(above + " "), (above, below)
    assert "Installing › From source\nTo install the latest" in "\n".join(lines)
    assert "backup_repo\nbackup_repo() {" in "\n".join(lines)  # code keeps its signature


def test_colours_respect_no_color_and_the_flag(kb, sample, environment):
    kb("add", str(sample))
    environment.stdout_isatty = True
    environment.env["KB_PAGER"] = ""
    args = ("search", "git", "--top", "2")
    coloured = kb(*args).stdout
    assert COLOUR.search(coloured) and "\x1b]8;" in coloured  # colours and hyperlinks
    assert "file://" in coloured
    assert "\x1b" not in kb(*args, "--color", "never").stdout
    environment.env["NO_COLOR"] = "1"
    mono = kb(*args).stdout
    assert not COLOUR.search(mono) and "\x1b[1m" in mono  # bold stays, colours go
    assert COLOUR.search(kb(*args, "--color", "always").stdout)
    width = max(cell_len(ESCAPE.sub("", line)) for line in coloured.splitlines())
    assert width <= 80


def test_long_output_goes_through_the_pager_on_a_terminal(kb, sample, environment, tmp_path):
    kb("add", str(sample))
    paged = tmp_path / "paged.txt"
    environment.stdout_isatty = True
    environment.env.update({"PAGER": f"cat > '{paged}'", "LINES": "10", "COLUMNS": "80"})
    out = kb("show", str(sample / "docs" / "git-admin.md"), "--color", "never").stdout
    assert out == "" and "Git Admin Guide" in paged.read_text()
    paged.unlink()
    environment.env["LINES"] = "500"
    short = kb("show", str(sample / "notes" / "recipes.rst"), "--color", "never").stdout
    assert "Kitchen notes" in short and not paged.exists()


def test_empty_tables_say_none_and_counts_are_plural(kb, sample):
    kb("init")
    assert human(kb, "tags").strip() == "No tags."
    assert human(kb, "list").strip() == "No documents."
    kb("add", str(sample))
    out = human(kb, "untag", str(sample / "docs" / "git-admin.md"), "git")
    assert out.strip().startswith("Removed 1 tag from document")
    assert human(kb, "remove", str(sample / "notes" / "recipes.rst")).strip() == (
        "Removed 1 document."
    )


def test_list_pages(kb, sample):
    kb("add", str(sample))
    first = kb.json("list", "--limit", "4")
    second = kb.json("list", "--limit", "4", "--offset", str(first["next_offset"]))
    last = kb.json("list", "--limit", "4", "--offset", str(second["next_offset"]))
    assert first["total"] == 9 and last["next_offset"] is None and last["count"] == 1
    paths = [d["path"] for page in (first, second, last) for d in page["documents"]]
    assert len(set(paths)) == 9
