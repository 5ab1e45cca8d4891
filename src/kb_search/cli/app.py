"""What every command shares: the per-invocation App, option decorators, output and errors."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kb_search.environment import Environment
from kb_search.profile import Profile

if TYPE_CHECKING:
    from kb_search.cli.progress import ProgressView
    from kb_search.cli.terminal import Terminal
    from kb_search.knowledge_base import KnowledgeBase

FORMATS = click.Choice(["json", "human"])
COLORS = click.Choice(["auto", "always", "never"])


class UserError(click.ClickException):
    """Exit 1 with a one-line message and no traceback."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        from kb_search.sanitize import printable

        click.echo(f"Error: {printable(self.format_message())}", err=True)


class UsageError(click.UsageError):
    """click's usage error for a message that quotes what was typed: shown escaped, like
    every other error (an argument may carry a terminal escape sequence)."""

    def format_message(self) -> str:
        from kb_search.sanitize import printable

        return printable(super().format_message())


class Interrupted(click.ClickException):
    """Ctrl-C: one line saying where the job stopped, exit 130 (128 + SIGINT)."""

    exit_code = 130

    def show(self, file: Any = None) -> None:
        from kb_search.sanitize import printable

        click.echo(printable(self.format_message()), err=True)


class App:
    """Per-invocation state: the environment, the resolved config and the knowledge base."""

    def __init__(self, environment: Environment, flags: dict[str, Any]):
        from kb_search.config import load_config

        self.environment = environment
        self.color = flags.get("color")
        self.config = load_config(
            env=environment.env,
            cwd=environment.cwd,
            home=environment.home,
            flags={k: v for k, v in flags.items() if k not in ("config", "color")},
            config_path=flags.get("config"),
        )
        from kb_search.logs import LOG_NAME, route_library_logs

        route_library_logs(self.config.data_dir / LOG_NAME)
        self._kb: KnowledgeBase | None = None
        self._terminal: Terminal | None = None
        self.progress_view: ProgressView | None = None

    def kb(self, profile: Profile | None = None) -> KnowledgeBase:
        """The knowledge base this command works on (closed when the command ends)."""
        if self._kb is None:
            from kb_search.knowledge_base import KnowledgeBase

            self._kb = KnowledgeBase(
                self.config,
                profile=profile or Profile.ONE_SHOT,
                cwd=self.environment.cwd,
                warn=warn,
            )
        return self._kb

    def close(self) -> None:
        if self._kb is not None:
            self._kb.close()
            self._kb = None

    def output_format(self, fmt: str | None) -> str:
        if fmt:
            return fmt
        return "human" if self.environment.stdout_isatty else "json"

    @property
    def terminal(self) -> Terminal:
        """Where human output goes (stdout): width, styles, pager."""
        if self._terminal is None:
            from kb_search.cli.terminal import Terminal

            env = self.environment
            self._terminal = Terminal.detect(env.env, env.cwd, env.stdout_isatty, self.color)
        return self._terminal

    def show_path(self, path: str) -> str:
        return self.terminal.show_path(path)

    def progress(self, label: str, interrupted: str = "rerun to resume") -> ProgressView:
        """A progress line on stderr (drawn only on a terminal); Ctrl-C during it reports
        "Interrupted after N/M files; <interrupted>"."""
        from kb_search.cli.progress import ProgressView

        console = None
        if self.environment.stderr_isatty:
            from kb_search.cli.terminal import Terminal

            env = self.environment
            console = Terminal.detect(env.env, env.cwd, True, self.color).console(sys.stderr)
        self.progress_view = ProgressView(label, console, model=str(self.config["model"]))
        self.progress_view.interrupted = interrupted
        return self.progress_view

    def interrupted(self, stop: KeyboardInterrupt | None = None) -> Interrupted:
        """The line for Ctrl-C: where the job was; for `kb add`/`kb sync` (the core's
        `RunInterrupted`) what is done and what is left, "Interrupted: 37 of 184 files read,
        1,204 of 3,310 chunks embedded; rerun to resume."."""
        from kb_search.errors import RunInterrupted

        view = self.progress_view
        if isinstance(stop, RunInterrupted):
            done = []
            if view is not None and view.started is not None and view.total:
                done.append(f"{view.done:,} of {view.total:,} {view.unit} read")
            if stop.chunks and stop.embedded is not None:
                done.append(f"{stop.embedded:,} of {stop.chunks:,} chunks embedded")
            what = ", ".join(done)
            then = view.interrupted if view is not None else "rerun to resume"
            return Interrupted(f"Interrupted: {what}; {then}." if what else f"Interrupted; {then}.")
        if view is None or view.started is None:
            return Interrupted("Interrupted.")
        return Interrupted(f"Interrupted after {view.position()}; {view.interrupted}.")

    def emit(
        self,
        data: Any,
        fmt: str | None,
        human: Callable[[], str],
        page: bool = False,
    ) -> None:
        """JSON (compact: agents pay per token) or the human rendering, paged on a terminal
        when `page` and it does not fit. Always valid UTF-8."""
        from kb_search.sanitize import json_text, valid_text

        if self.output_format(fmt) == "json":
            click.echo(json_text(data))
        else:
            self.terminal.write(valid_text(human()), page=page)


def warn(message: str) -> None:
    from kb_search.sanitize import printable

    click.echo(f"Warning: {printable(message)}", err=True)


def common_options(fn: Callable) -> Callable:
    """--data-dir/--db/--config/--color on every command (they also work before the command
    name); a KbError becomes one line on stderr and exit 1, Ctrl-C one line and exit 130."""

    @click.option("--data-dir", type=click.Path(path_type=Path), help="Data directory (~/.kb).")
    @click.option("--db", "db_path", type=click.Path(path_type=Path), help="Database file.")
    @click.option("--config", "config_path", type=click.Path(path_type=Path), help="Config file.")
    @click.option(
        "--color",
        type=COLORS,
        help="Colours and links in human output: auto (a terminal without NO_COLOR), always,"
        " never.",
    )
    @click.pass_context
    @functools.wraps(fn)
    def wrapper(ctx: click.Context, data_dir, db_path, config_path, color, **kwargs):
        from kb_search.errors import KbError

        root = ctx.find_root()
        flags = dict(root.meta.get("kb.flags", {}))
        given = (("data_dir", data_dir), ("db", db_path), ("config", config_path), ("color", color))
        for key, value in given:
            if value is not None:
                flags[key] = value
        app = None
        try:
            app = App(root.meta.get("kb.environment") or Environment(), flags)
            if app.config.ignored and not getattr(fn, "reports_trust", False):
                warn(app.config.ignored_line())
            return fn(app, **kwargs)
        except KbError as exc:
            raise UserError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc
        except KeyboardInterrupt as stop:
            raise (app.interrupted(stop) if app else Interrupted("Interrupted.")) from None
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:
            # imported here: a warm `kb search` answers without loading SQLite at all
            from kb_search.knowledge_base import explain_error

            known = explain_error(exc)
            if known is None and os.environ.get("KB_DEBUG"):
                raise
            raise (UserError(str(known)) if known else _internal(exc)) from exc
        finally:
            if app is not None:
                app.close()

    return wrapper


def _internal(exc: Exception) -> UserError:
    """A bug, not a user error: one line (the traceback with KB_DEBUG=1)."""
    message = f"internal error: {type(exc).__name__}: {exc}".splitlines()[0]
    return UserError(f"{message} (set KB_DEBUG=1 for a traceback)")
