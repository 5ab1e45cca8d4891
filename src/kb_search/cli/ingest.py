"""Changing what is indexed: add, sync, remove, reindex."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kb_search.cli.app import FORMATS, App, Progress, common_options, emit


def _report(app: App, summary: Any, fmt: str | None) -> None:
    """The summary line (human) or object (JSON); where the failures are logged."""
    for note in getattr(summary, "notes", []):
        click.echo(f"Note: {note}", err=True)
    fmt = app.output_format(fmt)
    emit(summary.to_dict() | {"summary": summary.line()}, fmt, summary.line)
    if summary.failed and fmt == "human":
        click.echo(f"See {app.kb().error_log} for the failures.", err=True)


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--tag", "tags", multiple=True, help="Tag every added document (repeatable).")
@click.option("--type", "doc_type", help="Store the documents under this type.")
@click.option("--workers", type=click.IntRange(min=0), help="Parser processes (0: in-process).")
@click.option("--format", "fmt", type=FORMATS)
@common_options
def add(app: App, paths, tags, doc_type, workers, fmt: str | None) -> None:
    """Ingest files and directories (unchanged files are skipped)."""
    with Progress(app, "Indexing") as progress:
        summary = app.kb().add(
            paths, tags=tags, doc_type=doc_type, workers=workers, progress=progress
        )
    _report(app, summary, fmt)


def sync_paths(app: App, paths: list[Path] | None, workers: int | None = None) -> Any:
    with Progress(app, "Syncing") as progress:
        return app.kb().sync(paths, workers=workers, progress=progress)


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--workers", type=click.IntRange(min=0), help="Parser processes (0: in-process).")
@click.option("--format", "fmt", type=FORMATS)
@common_options
def sync(app: App, paths, workers: int | None, fmt: str | None) -> None:
    """Rescan what was added: new, changed, deleted and renamed files (honours .kbignore).

    With PATHS, only those files and directories (under added roots); a PATH that no
    longer exists removes its documents.
    """
    _report(app, sync_paths(app, list(paths) or None, workers), fmt)


@click.command()
@click.argument("refs", nargs=-1, required=True)
@click.option("--format", "fmt", type=FORMATS)
@common_options
def remove(app: App, refs, fmt: str | None) -> None:
    """Delete documents by id or path (chunks, FTS rows and vectors go with them)."""
    removed = app.kb().remove(refs)
    emit({"removed": removed}, app.output_format(fmt), lambda: f"Removed {len(removed)} documents.")


@click.command()
@click.option("--model", help="Switch to this embedding model (re-embeds everything).")
@click.option("--full", is_flag=True, help="Re-embed every chunk, not only missing vectors.")
@click.option("--format", "fmt", type=FORMATS)
@common_options
def reindex(app: App, model: str | None, full: bool, fmt: str | None) -> None:
    """Embed chunks that have no vector yet (resumable); --model switches models."""
    with Progress(app, "Embedding") as progress:
        summary = app.kb().reindex(model, full=full, progress=progress)
    emit(summary.to_dict(), app.output_format(fmt), summary.line)


COMMANDS = [add, sync, remove, reindex]
