"""`kb sync`, `kb hook`, `kb export`: keeping the index fresh and the data safe."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from kb_search.cli.app import FORMATS, App, Progress, UserError, common_options, emit


def lazy_vectors(app: App, conn: Any, options: Any) -> Callable[[], Any]:
    """Loads the model only when a file must be embedded: a no-op sync stays fast."""
    return lambda: app.writing_vectors(conn, options)


def run_sync(app: App, paths: list[Path] | None, workers: int | None = None) -> Any:
    from kb_search.ingest.pipeline import ErrorLog
    from kb_search.ingest.sync import SyncError, sync

    options = app.add_options(workers)
    conn = app.open_db()
    progress = Progress(app, "Syncing")
    try:
        return sync(
            conn,
            paths,
            options,
            error_log=ErrorLog(app.error_log),
            on_start=progress.start,
            on_file=progress.step,
            lazy_vectors=lazy_vectors(app, conn, options),
        )
    except SyncError as exc:
        raise UserError(str(exc)) from exc
    finally:
        progress.close()
        conn.close()


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
    summary = run_sync(app, list(paths) or None, workers)
    fmt = app.output_format(fmt)
    emit(summary.to_dict() | {"summary": summary.line()}, fmt, summary.line)
    if summary.failed and fmt == "human":
        click.echo(f"See {app.error_log} for the failures.", err=True)


@click.group()
def hook() -> None:
    """Git hooks that keep the index in step with commits."""


def _baked_command(app: App) -> list[str]:
    from kb_search.ingest.hooks import kb_command

    command = [*kb_command(), "--data-dir", str(app.config.data_dir.resolve())]
    command += ["--db", str(Path(app.config.db_path).resolve())]
    # an explicit --config is the first config file unless it is the data dir's own
    default = (app.config.data_dir / "config.yaml").resolve()
    first = app.config.files[0].resolve() if app.config.files else None
    if first is not None and first != default and first.name != ".kb.yaml":
        command += ["--config", str(first)]
    return command


@hook.command("install")
@click.argument("repo", required=False, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=FORMATS)
@common_options
def hook_install(app: App, repo: Path | None, fmt: str | None) -> None:
    """Install a post-commit hook in REPO (default: the current directory)."""
    from kb_search.ingest.hooks import LOG_NAME, HookError, install_hook, repo_top

    repo = repo or app.environment.cwd
    try:
        installed = install_hook(repo, app.config.data_dir.resolve(), _baked_command(app))
        top = repo_top(repo)
    except HookError as exc:
        raise UserError(str(exc)) from exc
    log = app.config.data_dir.resolve() / LOG_NAME
    data = {
        "hook": str(installed.hook),
        "chained": str(installed.chained) if installed.chained else None,
        "updated": installed.updated,
        "log": str(log),
        "repo_indexed": _repo_indexed(app, top),
    }

    def human() -> str:
        lines = [f"{'Updated' if installed.updated else 'Installed'} {installed.hook}."]
        if installed.chained:
            lines.append(f"The hook that was there runs first: {installed.chained}.")
        lines.append(f"Each commit now syncs the files it touched in the background; log: {log}")
        if not data["repo_indexed"]:
            lines.append(
                f"Note: {top} is not under an added root, so commits change nothing yet:"
                f" run `kb add {top}` (or a folder in it)."
            )
        return "\n".join(lines)

    emit(data, app.output_format(fmt), human)


def _repo_indexed(app: App, top: Path) -> bool:
    from kb_search.store.db import DBError

    try:
        conn = app.open_db(readonly=True)
    except DBError:
        return False
    try:
        roots = [Path(r[0]) for r in conn.execute("SELECT path FROM roots")]
    finally:
        conn.close()
    return any(r == top or top in r.parents or r in top.parents for r in roots)


@hook.command("uninstall")
@click.argument("repo", required=False, type=click.Path(path_type=Path))
@common_options
def hook_uninstall(app: App, repo: Path | None) -> None:
    """Remove the kb post-commit hook (a hook it chained is put back)."""
    from kb_search.ingest.hooks import HookError, uninstall_hook

    try:
        removed = uninstall_hook(repo or app.environment.cwd)
    except HookError as exc:
        raise UserError(str(exc)) from exc
    click.echo("Removed the kb post-commit hook." if removed else "No kb hook installed.")


@hook.command("run", hidden=True)
@click.option("--repo", required=True, type=click.Path(path_type=Path))
@click.option("--commit", required=True)
@common_options
def hook_run(app: App, repo: Path, commit: str) -> None:
    """What the post-commit hook runs: sync the files COMMIT touched (writes the log line)."""
    from kb_search.ingest.hooks import commit_paths, log_line

    try:
        paths = commit_paths(repo, commit)
        summary = run_sync(app, paths, workers=0) if paths else None
    except Exception as exc:  # noqa: BLE001 - the log is the only place anyone will look
        click.echo(log_line(f"{repo}@{commit[:12]}: failed: {type(exc).__name__}: {exc}"))
        raise SystemExit(1) from exc
    text = summary.line() if summary else "nothing to sync"
    click.echo(log_line(f"{repo}@{commit[:12]}: {len(paths)} paths. {text}"))
    for failure in summary.failed if summary else []:
        click.echo(log_line(f"  failed: {failure.path}: {failure.reason}"))


@click.command("export")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite PATH if it exists.")
@click.option("--format", "fmt", type=FORMATS)
@common_options
def export(app: App, path: Path, force: bool, fmt: str | None) -> None:
    """Write a consistent copy of the database to PATH (safe while an ingest runs)."""
    from kb_search.store.export import ExportError, export_db

    conn = app.open_db(readonly=True)
    try:
        result = export_db(conn, path, force=force)
    except ExportError as exc:
        raise UserError(str(exc)) from exc
    finally:
        conn.close()
    emit(result.to_dict(), app.output_format(fmt), result.line)


COMMANDS = [sync, hook, export]
