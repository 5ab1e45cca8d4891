"""The README's quick start runs as written, and docs/cli.md names every command and option
that `kb --help` has."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from kb_search.cli import cli

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CLI_DOC = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
# Options every command takes (said once in docs/cli.md, not per command).
COMMON = {"--data-dir", "--db", "--config", "--color", "--format", "--help", "-h"}


def quick_start() -> list[str]:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in block.strip().splitlines()]


def test_readme_is_short():
    assert len(README.encode()) < 10_000


def test_quick_start_runs_as_written(kb, tmp_path):
    home = tmp_path / "home"
    notes = home / "notes"
    notes.mkdir(parents=True)
    (notes / "deploy.md").write_text("# Deploy\n\nTo roll back a deploy, run the previous tag.\n")
    commands = quick_start()
    assert len(commands) == 6 and all(c.startswith("kb ") for c in commands)
    for command in commands:
        args = [a.replace("~/", f"{home}/") for a in shlex.split(command)[1:]]
        result = kb(*args, "--format", "json") if args[0] != "doctor" else kb(*args)
        assert result.exit_code == 0, (command, result.stderr)


def _commands() -> dict[str, click.Command]:
    ctx = click.Context(cli)
    return {name: cli.get_command(ctx, name) for name in cli.list_commands(ctx)}


@pytest.mark.parametrize("name", sorted(_commands()))
def test_cli_reference_names_every_command_and_option(name):
    command = _commands()[name]
    rows = [line for line in CLI_DOC.splitlines() if re.search(rf"`kb {name}\b", line)]
    assert rows, f"docs/cli.md has no row for `kb {name}`"
    text = "\n".join(rows)
    options = {
        opt
        for param in command.params
        if isinstance(param, click.Option)
        for opt in [*param.opts, *param.secondary_opts]
        if opt.startswith("--")
    }
    missing = sorted(o for o in options - COMMON if not re.search(rf"{re.escape(o)}\b", text))
    assert missing == [], f"`kb {name}` options missing from docs/cli.md: {missing}"


def test_every_local_link_in_the_readme_and_docs_resolves():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        text = re.sub(r"`[^`\n]*`", "", page.read_text(encoding="utf-8"))  # code is not a link
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" in target:
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert broken == []
