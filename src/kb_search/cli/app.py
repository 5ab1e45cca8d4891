"""What every command shares: the per-invocation App, option decorators, output and errors."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kb_search.environment import Environment

if TYPE_CHECKING:
    from kb_search.knowledge_base import KnowledgeBase

FORMATS = click.Choice(["json", "human"])


class UserError(click.ClickException):
    """Exit 1 with a one-line message and no traceback."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        click.echo(f"Error: {self.format_message()}", err=True)


class App:
    """Per-invocation state: the environment, the resolved config and the knowledge base."""

    def __init__(self, environment: Environment, flags: dict[str, Any]):
        from kb_search.config import load_config

        self.environment = environment
        self.config = load_config(
            env=environment.env,
            cwd=environment.cwd,
            home=environment.home,
            flags={k: v for k, v in flags.items() if k != "config"},
            config_path=flags.get("config"),
        )
        self._kb: KnowledgeBase | None = None

    def kb(self, long_lived: bool = False) -> KnowledgeBase:
        """The knowledge base this command works on (closed when the command ends)."""
        if self._kb is None:
            from kb_search.knowledge_base import KnowledgeBase

            self._kb = KnowledgeBase(
                self.config, long_lived=long_lived, cwd=self.environment.cwd, warn=warn
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


def warn(message: str) -> None:
    click.echo(f"Warning: {message}", err=True)


class Progress:
    """A progress bar on stderr, only on a terminal (the core's Progress protocol)."""

    def __init__(self, app: App, label: str):
        self.app, self.label = app, label
        self.bar: Any = None

    def start(self, total: int) -> None:
        if self.app.environment.stderr_isatty and total:
            self.bar = click.progressbar(length=total, label=self.label, file=sys.stderr)
            self.bar.__enter__()

    def advance(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def common_options(fn: Callable) -> Callable:
    """--data-dir/--db/--config on every command (they also work before the command name);
    a KbError becomes one line on stderr and exit 1."""

    @click.option("--data-dir", type=click.Path(path_type=Path), help="Data directory (~/.kb).")
    @click.option("--db", "db_path", type=click.Path(path_type=Path), help="Database file.")
    @click.option("--config", "config_path", type=click.Path(path_type=Path), help="Config file.")
    @click.pass_context
    @functools.wraps(fn)
    def wrapper(ctx: click.Context, data_dir, db_path, config_path, **kwargs):
        from kb_search.errors import KbError
        from kb_search.store.db import DatabaseError, explain

        root = ctx.find_root()
        flags = dict(root.meta.get("kb.flags", {}))
        for key, value in (("data_dir", data_dir), ("db", db_path), ("config", config_path)):
            if value is not None:
                flags[key] = value
        app = None
        try:
            app = App(root.meta.get("kb.environment") or Environment(), flags)
            return fn(app, **kwargs)
        except KbError as exc:
            raise UserError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc
        except DatabaseError as exc:
            known = explain(exc)
            if known is None and os.environ.get("KB_DEBUG"):
                raise
            raise (UserError(str(known)) if known else _internal(exc)) from exc
        except (click.ClickException, click.exceptions.Exit, click.Abort, KeyboardInterrupt):
            raise
        except Exception as exc:
            if os.environ.get("KB_DEBUG"):
                raise
            raise _internal(exc) from exc
        finally:
            if app is not None:
                app.close()

    return wrapper


def _internal(exc: Exception) -> UserError:
    """A bug, not a user error: one line (the traceback with KB_DEBUG=1)."""
    message = f"internal error: {type(exc).__name__}: {exc}".splitlines()[0]
    return UserError(f"{message} (set KB_DEBUG=1 for a traceback)")


def emit(data: Any, fmt: str, human: Callable[[], str]) -> None:
    """Print data as JSON or as text for people; always valid UTF-8."""
    from kb_search.sanitize import valid_text

    if fmt == "json":
        click.echo(valid_text(json.dumps(data, ensure_ascii=False, indent=None, default=str)))
    else:
        click.echo(valid_text(human()))
