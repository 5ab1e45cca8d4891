"""`kb warm status|stop`: the warm search server of this database (kb_search.cli.warm)."""

from __future__ import annotations

from typing import Any

import click

from kb_search.cli.app import FORMATS, App, common_options
from kb_search.cli.warm import warm_enabled


@click.group()
def warm() -> None:
    """The warm search server: `kb search` starts one per database on first use (the model
    loaded once), uses it while it runs, and it exits after `search.warm_idle_s` idle
    seconds. Off with `search.warm: false` or KB_NO_WARM=1."""


def _client(app: App) -> Any:
    from kb_search.cli.warm.client import WarmClient

    return WarmClient(app.config, app.environment.env)


@warm.command("status")
@click.option("--format", "fmt", type=FORMATS)
@common_options
def warm_status(app: App, fmt: str | None) -> None:
    """Whether this database's warm server runs: pid, requests served, idle time."""
    client = _client(app)
    info = client.status()
    paths = client.paths()
    enabled = warm_enabled(app.config, app.environment.env)
    data: dict[str, Any] = {
        "running": info is not None,
        "enabled": enabled,
        "socket": str(paths.socket) if paths else None,
        "log": str(paths.log) if paths else None,
        **(info or {}),
    }

    def human() -> str:
        state = "off" if not enabled else "not running"
        if info is not None:
            state = (
                f"running (pid {info['pid']}, {info['requests']} requests,"
                f" idle {info['idle_s']:g} s of {info['idle_timeout_s']:g} s)"
            )
        return f"Warm search server: {state}\nsocket: {data['socket']}\nlog: {data['log']}"

    app.emit(data, fmt, human)


@warm.command("stop")
@click.option("--format", "fmt", type=FORMATS)
@common_options
def warm_stop(app: App, fmt: str | None) -> None:
    """Stop this database's warm server (the next `kb search` starts a new one)."""
    info = _client(app).stop()
    data = {"stopped": info is not None, "pid": info["pid"] if info else None}

    def human() -> str:
        if info is None:
            return "No warm search server was running."
        return f"Stopped the warm search server (pid {info['pid']})."

    app.emit(data, fmt, human)


COMMANDS = [warm]
