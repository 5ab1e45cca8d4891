"""Changing what is indexed: add, sync, remove, reindex."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from kb_search.cli.app import FORMATS, App, UserError, common_options
from kb_search.errors import RunInterrupted
from kb_search.executor_choice import ExecutorChoice
from kb_search.sanitize import printable
from kb_search.text import OCR_NOTE_PREFIX, plural

WORKERS_HELP = "Parser processes (0: parse in this process; default from config)."
RETRY_HELP = "Also parse files that failed before and have not changed since."
GENERATED_HELP = (
    "Also index minified, generated and lock files (left out by default; setting"
    " ingestion.include_generated)."
)
EXECUTOR_HELP = (
    "Where files are parsed and embedded: local processes, or a Ray cluster"
    " (needs kb-search[ray]; default from config)."
)
ADDRESS_HELP = (
    "Ray cluster for --executor ray: auto, ray://host:port or host:port"
    " (default: a local Ray started for the run)."
)


def executor_options(command: Any) -> Any:
    """--executor and --address, shared by add, sync and reindex (read by `executor_choice`)."""
    command = click.option("--address", "ray_address", metavar="ADDRESS", help=ADDRESS_HELP)(
        command
    )
    return click.option("--executor", type=click.Choice(["local", "ray"]), help=EXECUTOR_HELP)(
        command
    )


def executor_choice(app: App, executor: str | None, ray_address: str | None) -> ExecutorChoice:
    """Where this command's heavy work runs: `--executor` (else `ingestion.executor`) with its
    settings, `--address` replacing Ray's."""
    return ExecutorChoice.configured(app.config, executor, address=ray_address)


def _report(app: App, summary: Any, fmt: str | None, interrupted: bool = False) -> None:
    """The summary line (human) or object (JSON, with `interrupted` after Ctrl-C: the counts
    of what was done before it); where the failures are logged."""
    human = app.output_format(fmt) == "human"
    data = summary.to_dict() | {"summary": summary.line()}
    if interrupted:
        data["interrupted"] = True
    app.emit(data, fmt, lambda: printable(summary.line(app.show_path)))
    if summary.failed and human:
        click.echo(f"Details of the failures: {printable(app.kb().error_log)}", err=True)
    if human and summary.notes:
        for note in summary.notes:
            if note.startswith(OCR_NOTE_PREFIX):
                click.echo(printable(note), err=True)


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--tag", "tags", multiple=True, help="Tag every added document (repeatable).")
@click.option("--type", "doc_type", help="Store the documents under this type.")
@click.option("--workers", type=click.IntRange(min=0), help=WORKERS_HELP)
@click.option("--retry-failed", is_flag=True, help=RETRY_HELP)
@click.option("--include-generated", is_flag=True, help=GENERATED_HELP)
@executor_options
@click.option("--format", "fmt", type=FORMATS)
@common_options
def add(
    app: App,
    paths,
    tags,
    doc_type,
    workers,
    retry_failed: bool,
    include_generated: bool,
    executor: str | None,
    ray_address: str | None,
    fmt: str | None,
) -> None:
    """Index files and folders. Unchanged files are skipped (size and mtime, then content),
    so adding a folder again only indexes what changed; files that failed are skipped until
    they change. A folder is remembered: `kb sync` rescans it, and its --tag/--type apply to
    files found there later.

    \b
    Examples:
      kb add ~/notes
      kb add ~/work/docs --tag work
      kb add report.pdf --type paper
      kb add ~/papers --executor ray --address auto
    """
    with reported_on_stop(app, fmt), app.progress("Indexing") as progress:
        summary = app.kb().add(
            paths,
            tags=tags,
            doc_type=doc_type,
            workers=workers,
            retry_failed=retry_failed,
            progress=progress,
            executor=executor_choice(app, executor, ray_address),
            include_generated=include_generated,
        )
    _report(app, summary, fmt)
    if reason := summary.nothing_added(app.show_path):
        raise UserError(reason)


@contextlib.contextmanager
def reported_on_stop(app: App, fmt: str | None) -> Iterator[None]:
    """Ctrl-C in `kb add`/`kb sync`: the summary of what was done before it (failures and
    files left out included), then the one line of what is left (`App.interrupted`)."""
    try:
        yield
    except RunInterrupted as stop:  # the progress line (entered after this) is closed
        _report(app, stop.summary, fmt, interrupted=True)
        raise


def sync_paths(
    app: App,
    paths: list[Path] | None,
    workers: int | None = None,
    retry_failed: bool = False,
    executor: str | None = None,
    ray_address: str | None = None,
    include_generated: bool = False,
) -> Any:
    with app.progress("Syncing") as progress:
        return app.kb().sync(
            paths,
            workers=workers,
            retry_failed=retry_failed,
            progress=progress,
            executor=executor_choice(app, executor, ray_address),
            include_generated=include_generated,
        )


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--workers", type=click.IntRange(min=0), help=WORKERS_HELP)
@click.option("--retry-failed", is_flag=True, help=RETRY_HELP)
@click.option("--include-generated", is_flag=True, help=GENERATED_HELP)
@executor_options
@click.option("--format", "fmt", type=FORMATS)
@common_options
def sync(
    app: App,
    paths,
    workers: int | None,
    retry_failed: bool,
    include_generated: bool,
    executor: str | None,
    ray_address: str | None,
    fmt: str | None,
) -> None:
    """Rescan what was added: new, changed, deleted and renamed files (honours .kbignore).

    With PATHS, only those files and directories (under added roots); a PATH that no
    longer exists removes its documents. Nothing is read when nothing changed, and the
    embedding model is loaded only when a file must be embedded.

    \b
    Examples:
      kb sync
      kb sync ~/notes/projects
    """
    chosen = list(paths) or None
    with reported_on_stop(app, fmt):
        summary = sync_paths(
            app, chosen, workers, retry_failed, executor, ray_address, include_generated
        )
    _report(app, summary, fmt)


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--workers",
    type=click.IntRange(min=0),
    help=WORKERS_HELP + " A save of a few small text files is parsed in-process.",
)
@click.option("--format", "fmt", type=FORMATS, help="json: one JSON object per line per batch.")
@common_options
def watch(app: App, paths, workers: int | None, fmt: str | None) -> None:
    """Keep the index in step with the files while they change: new, edited, renamed and
    deleted files are synced as they happen (the same work as `kb sync PATH...`).

    Watches every added folder, or only PATHS under them. Starts with a full sync, then
    prints one line (or JSON object) per batch of changes. Bursts of changes (a checkout, an
    editor's save) are gathered into one batch; renames move documents without re-embedding.
    The model loads on the first file to embed and stays loaded. Ctrl-C stops after the batch
    in progress (exit 130); a second Ctrl-C stops at once (every finished file is kept).

    \b
    Examples:
      kb watch
      kb watch ~/notes/projects --format json
    """
    from kb_search.cli.watching import run_watch

    run_watch(app, list(paths) or None, workers, fmt)


@click.command()
@click.argument("refs", nargs=-1, required=True)
@click.option("--format", "fmt", type=FORMATS)
@common_options
def remove(app: App, refs, fmt: str | None) -> None:
    """Delete documents by id or path, or a folder's documents (chunks, FTS rows and vectors
    go with them). Removing an added folder also forgets it, so `kb sync` leaves it alone.

    A file under an added folder stays out of the index: `kb sync` will not bring it back
    until you add it by name (`kb add FILE`). Paths that match nothing are reported; the rest
    is removed in one transaction.
    """
    from dataclasses import asdict

    result = app.kb().remove(refs)

    def human() -> str:
        lines = [f"Removed {plural(len(result.removed), 'document')}."]
        lines += [f"Forgot folder {app.terminal.show_path(r)}." for r in result.forgotten_roots]
        lines += [f"Not indexed: {printable(ref)}" for ref in result.not_found]
        return "\n".join(lines)

    app.emit(asdict(result), fmt, human)


@click.command()
@click.option("--model", help="Switch to this embedding model (re-embeds everything).")
@click.option(
    "--endpoint", metavar="URL", help="Server of an openai:NAME / ollama:NAME model."
)
@click.option("--full", is_flag=True, help="Re-embed every chunk, not only missing vectors.")
@executor_options
@click.option("--format", "fmt", type=FORMATS)
@common_options
def reindex(
    app: App,
    model: str | None,
    endpoint: str | None,
    full: bool,
    executor: str | None,
    ray_address: str | None,
    fmt: str | None,
) -> None:
    """Embed chunks that have no vector yet (resumable); --model switches models.

    \b
    Examples:
      kb reindex
      kb reindex --model sentence-transformers/all-MiniLM-L12-v2
      kb reindex --model ollama:nomic-embed-text
      kb reindex --model openai:bge-m3 --endpoint http://localhost:8080/v1
    """
    with app.progress("Embedding") as progress:
        summary = app.kb().reindex(
            model,
            full=full,
            progress=progress,
            executor=executor_choice(app, executor, ray_address),
            endpoint=endpoint,
        )
    app.emit(summary.to_dict(), fmt, summary.line)


COMMANDS = [add, sync, watch, remove, reindex]
