"""`kb serve` (the MCP server) and `kb skill` (the agent skill file)."""

from __future__ import annotations

from importlib import resources

import click

from kb_search.cli.app import App, common_options
from kb_search.profile import Profile


@click.command()
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio for IDEs and agents that start the server; http for streamable HTTP.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP bind address.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option(
    "--token",
    help="Bearer token HTTP clients must send (env KB_MCP_TOKEN); required off loopback.",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    help="Extra Host header value clients use to reach a non-loopback bind (repeatable).",
)
@click.option(
    "--watch",
    is_flag=True,
    help="Also follow the added folders and sync changed files as they change (kb watch).",
)
@common_options
def serve(
    app: App,
    transport: str,
    host: str,
    port: int,
    token: str | None,
    allow_hosts: tuple,
    watch: bool,
) -> None:
    """Serve the index to MCP clients (read-only; with --watch it also keeps the index in step
    with the files, as `kb watch` does); the model loads while the client connects.

    Tools: search (mode, variants, compact=true for agent-sized answers, files), similar,
    get_chunk, get_document, list_documents (paged), list_tags, stats; the
    `navigate` prompt. Each answer is compact JSON, sent once as text. Ctrl-C stops it.

    \b
    Examples:
      kb serve                                # stdio: what IDEs and agents start
      kb serve --transport http --port 8765   # http://127.0.0.1:8765/mcp
      kb serve --watch                        # and sync files as they change
    """
    from kb_search.mcp.server import serve as run_server

    token = token or app.environment.env.get("KB_MCP_TOKEN") or None
    kb = app.kb(Profile.SERVE)
    run_server(kb, transport, host, port, token, list(allow_hosts), watch=watch)


def skill_text() -> str:
    return resources.files("kb_search").joinpath("SKILL.md").read_text(encoding="utf-8")


@click.command()
def skill() -> None:
    """Print SKILL.md: how a coding agent should use `kb search` (save it as a skill)."""
    click.echo(skill_text(), nl=False)


COMMANDS = [serve, skill]
