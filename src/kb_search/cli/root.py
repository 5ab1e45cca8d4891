"""The `kb` command group: a thin click shell over the KnowledgeBase (kb_search.knowledge_base).

Each command module parses its input, calls one KnowledgeBase method and renders the result:
`search` (search, similar), `documents` (show, chunk, list, stats, tags, tag, untag), `ingest`
(add, sync, watch, remove, reindex), `admin` (init, config, doctor, eval, export, hook), `serve`
(serve, skill), `warm` (the warm search server's status, stop). What they share is in `app`;
human output in `render`.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import click

from kb_search import __version__
from kb_search.environment import Environment

ROOT_HELP = """kb: local hybrid search over your knowledge base, in one SQLite file.

\b
Start:
  kb init                       create ~/.kb, provision the model (offline)
  kb add ~/notes ~/docs         index folders (PDF, Markdown, text, code)
  kb search how do I roll back  words, "phrases", -exclusions, type:pdf
  kb sync                       pick up new, changed, moved, deleted files
  kb watch                      ... and keep doing so while files change

\b
Agents: `kb search QUERY --compact` (JSON: chunk_id, citation, heading,
score, text); `kb get CITATION...` reads the cited lines; `kb skill` prints
the instructions; `kb serve` is the MCP server.
Shell completion: `kb completion bash|zsh|fish`. Details: `kb COMMAND --help`.
"""


# Each command's module, imported when the command runs (or help lists them): a one-shot
# `kb search` answered by the warm server pays for no other command's imports.
COMMAND_MODULES = {
    **dict.fromkeys(
        ["init", "config", "doctor", "eval", "export", "hook", "version", "completion"], "admin"
    ),
    **dict.fromkeys(["add", "sync", "watch", "remove", "reindex"], "ingest"),
    **dict.fromkeys(["search", "similar"], "search"),
    "ask": "ask",
    **dict.fromkeys(
        ["show", "get", "chunk", "list", "stats", "tag", "untag", "tags", "roots"], "documents"
    ),
    **dict.fromkeys(["serve", "skill"], "serve"),
    "warm": "warm.commands",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMAND_MODULES})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMAND_MODULES:
            module = importlib.import_module(f"kb_search.cli.{COMMAND_MODULES[cmd_name]}")
            for command in module.COMMANDS:
                self.add_command(command)
        return super().get_command(ctx, cmd_name)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            name = args[0] if args else ""
            if name.startswith("-") or self.get_command(ctx, name) is not None:
                raise
            import difflib

            close = difflib.get_close_matches(name, self.list_commands(ctx), n=2, cutoff=0.6)
            hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            raise click.UsageError(
                f"No such command {name!r}.{hint} (`kb --help` lists them)", ctx
            ) from exc


@click.group(
    cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]}, help=ROOT_HELP
)
@click.option("--data-dir", type=click.Path(path_type=Path), help="Data directory (~/.kb).")
@click.option("--db", "db_path", type=click.Path(path_type=Path), help="Database file.")
@click.option("--config", "config_path", type=click.Path(path_type=Path), help="Config file.")
@click.option(
    "--color", type=click.Choice(["auto", "always", "never"]), help="Colours in human output."
)
@click.version_option(__version__, prog_name="kb")
@click.pass_context
def cli(ctx: click.Context, data_dir, db_path, config_path, color) -> None:
    flags = {"data_dir": data_dir, "db": db_path, "config": config_path, "color": color}
    ctx.meta["kb.flags"] = {k: v for k, v in flags.items() if v is not None}
    if isinstance(ctx.obj, Environment):
        ctx.meta["kb.environment"] = ctx.obj


def run(argv: list[str] | None = None) -> None:
    """The whole CLI: parse, run the command, exit."""
    if os.environ.get("KB_DEBUG"):
        cli.main(args=argv, prog_name="kb")
        return
    try:
        cli.main(args=argv, prog_name="kb", standalone_mode=True)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
