"""What every command shares: the per-invocation App, option decorators, output and errors."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from kb_search.environment import Environment

FORMATS = click.Choice(["json", "human"])


class UserError(click.ClickException):
    """Exit 1 with a one-line message and no traceback."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        click.echo(f"Error: {self.format_message()}", err=True)


class App:
    """Per-invocation state: environment, resolved config, and DB opening."""

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

    @property
    def error_log(self) -> Path:
        return self.config.data_dir / "ingest-errors.log"

    def open_db(self, readonly: bool = False, create: bool = False):
        from kb_search.store import db

        return db.connect(self.config.db_path, readonly=readonly, create=create)

    def chunk_settings(self):
        from kb_search.models import ChunkSettings

        return ChunkSettings(
            max_tokens=self.config["chunking.max_tokens"],
            min_tokens=self.config["chunking.min_tokens"],
        )

    def add_options(self, workers: int | None = None, **overrides: Any) -> Any:
        """The ingestion options every writing command uses (`add`, `sync`, the git hook)."""
        from kb_search.ingest.pipeline import AddOptions

        return AddOptions(
            settings=self.chunk_settings(),
            max_file_bytes=int(self.config["ingestion.max_file_mb"] * 1_000_000),
            follow_symlinks=self.config["ingestion.follow_symlinks"],
            ocr=self.config["ingestion.enable_ocr"],
            workers=self.config["ingestion.workers"] if workers is None else workers,
            timeout_s=self.config["ingestion.timeout_s"],
            memory_mb=self.config["ingestion.max_memory_mb"],
            **overrides,
        )

    def writing_vectors(self, conn: Any, options: Any) -> Any:
        """The ChunkEmbedder new chunks go through, or None (with a loud warning) when no
        model can be had; a model that contradicts the DB is a hard error."""
        from kb_search.store.db import DBError
        from kb_search.vectors.model import ModelMismatch, prepare_for_writing
        from kb_search.vectors.tables import ChunkEmbedder

        try:
            embedder, table = prepare_for_writing(self.config, conn)
        except ModelMismatch:
            raise
        except DBError as exc:
            click.echo(
                f"Warning: no embedding model ({exc}); indexing for lexical search only."
                " Run `kb reindex` once the model is available.",
                err=True,
            )
            return None
        options.tokenizer_path = str(embedder.info.tokenizer_path)
        return ChunkEmbedder(embedder, table)

    def output_format(self, fmt: str | None) -> str:
        if fmt:
            return fmt
        return "human" if self.environment.stdout_isatty else "json"


class Progress:
    """A progress bar on stderr, only on a terminal; callbacks for the core's hooks."""

    def __init__(self, app: App, label: str):
        self.app, self.label = app, label
        self.bar: Any = None

    def start(self, total: int) -> None:
        if self.app.environment.stderr_isatty and total:
            self.bar = click.progressbar(length=total, label=self.label, file=sys.stderr)
            self.bar.__enter__()

    def step(self, _item: Any = None) -> None:
        self.advance(1)

    def advance(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


def _known_errors() -> tuple[type[BaseException], ...]:
    from kb_search.config import ConfigError
    from kb_search.evaluate import EvalError
    from kb_search.models import IngestError
    from kb_search.search.pipeline import SearchError
    from kb_search.store.db import DBError
    from kb_search.store.inventory import NotFound

    return (ConfigError, DBError, SearchError, NotFound, EvalError, IngestError)


def common_options(fn: Callable) -> Callable:
    """--data-dir/--db/--config on every command (they also work before the command name)."""

    @click.option("--data-dir", type=click.Path(path_type=Path), help="Data directory (~/.kb).")
    @click.option("--db", "db_path", type=click.Path(path_type=Path), help="Database file.")
    @click.option("--config", "config_path", type=click.Path(path_type=Path), help="Config file.")
    @click.pass_context
    @functools.wraps(fn)
    def wrapper(ctx: click.Context, data_dir, db_path, config_path, **kwargs):
        root = ctx.find_root()
        flags = dict(root.meta.get("kb.flags", {}))
        for key, value in (("data_dir", data_dir), ("db", db_path), ("config", config_path)):
            if value is not None:
                flags[key] = value
        try:
            app = App(root.meta.get("kb.environment") or Environment(), flags)
            return fn(app, **kwargs)
        except _known_errors() as exc:
            raise UserError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc
        except (click.ClickException, click.exceptions.Exit, click.Abort, KeyboardInterrupt):
            raise
        except Exception as exc:
            if os.environ.get("KB_DEBUG"):
                raise
            message = f"internal error: {type(exc).__name__}: {exc}".splitlines()[0]
            raise UserError(f"{message} (set KB_DEBUG=1 for a traceback)") from exc

    return wrapper


def emit(data: Any, fmt: str, human: Callable[[], str]) -> None:
    if fmt == "json":
        click.echo(json.dumps(data, ensure_ascii=False, indent=None, default=str))
    else:
        click.echo(human())
