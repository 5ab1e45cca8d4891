"""Setting up and looking after a knowledge base: init, config, doctor, eval, export, hook."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kb_search.cli.app import FORMATS, App, common_options
from kb_search.profile import Profile
from kb_search.sanitize import printable


@click.command()
@click.option(
    "--model",
    help="Embedding model (default: all-MiniLM-L6-v2); openai:NAME or ollama:NAME for one"
    " served over HTTP (docs/models.md).",
)
@click.option(
    "--endpoint", metavar="URL", help="The server of an openai:/ollama: model (recorded in the DB)."
)
@click.option("--docling", is_flag=True, help="Also fetch Docling's PDF layout models (online).")
@click.option("--format", "fmt", type=FORMATS)
@common_options
def init(
    app: App, model: str | None, endpoint: str | None, docling: bool, fmt: str | None
) -> None:
    """Create the data directory and the database, and provision the embedding model
    (offline from the installed model package; converted to ONNX once). Also upgrades an
    existing database to this kb's schema.

    
    Examples:
      kb init
      kb --data-dir ~/work-kb init
      kb init --model ollama:nomic-embed-text
      kb init --model openai:NAME --endpoint https://api.example.com/v1
    """
    info = app.kb().init(model, endpoint=endpoint, docling=docling)
    app.emit(
        info,
        fmt,
        lambda: (
            f"Initialised {info['db']} ({info['documents']} documents, "
            f"model {info['model']}, {info['embedding_dim']} dimensions)."
        ),
    )


@click.group(invoke_without_command=True)
@click.option("--format", "fmt", type=FORMATS)
@click.pass_context
def config(ctx: click.Context, fmt: str | None) -> None:
    """Show the effective configuration: every setting, its value and where it came from
    (flag, KB_* environment variable, .kb.yaml, <data dir>/config.yaml, default), the files
    read, and whether the project's .kb.yaml is trusted.

    A project .kb.yaml sets where data goes, which model or cluster is used and the like only
    once you trust it (`kb config trust`); see docs/security.md.

    
    Examples:
      kb config
      KB_DEFAULT_TOP=5 kb config show --format json
      kb config trust
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(config_show, fmt=fmt)


def reports_trust(fn):
    """A config command says itself what an untrusted project file may not set: no warning."""
    fn.reports_trust = True
    return fn


@config.command("show")
@click.option("--format", "fmt", type=FORMATS)
@common_options
@reports_trust
def config_show(app: App, fmt: str | None) -> None:
    """Print every setting, its value and where it came from; the files read."""
    from kb_search.config import TrustState, trust_state
    from kb_search.trust import store_path

    cfg, env = app.config, app.environment
    rows = cfg.as_rows()
    data: dict = {key: {"value": value, "source": source} for key, value, source in rows}
    for key in cfg.ignored:
        data[key]["ignored_from"] = str(cfg.project_file)
    files = []
    for path in cfg.files:
        entry: dict = {"path": str(path), "kind": "user"}
        if path == cfg.project_file:
            entry.update(kind="project", trust=trust_state(path, env.env, env.home))
            entry["ignored"] = list(cfg.ignored)
        files.append(entry)
    data["files"] = files
    data["trust_store"] = str(store_path(env.env, env.home))

    def human() -> str:
        from kb_search.cli.render import table

        lines = [table(rows, ["setting", "value", "source"]), "", "Files read:"]
        for entry in files or [{"path": "none (all defaults)", "kind": ""}]:
            about = f"project file, {entry['trust']}" if entry["kind"] == "project" else "yours"
            lines.append(f"  {printable(entry['path'])} ({about if entry['kind'] else 'none'})")
            if entry.get("ignored"):
                lines.append(f"  {cfg.ignored_line()}")
            elif entry.get("trust") == TrustState.UNTRUSTED:
                lines.append("  it sets nothing that needs trust")
        lines.append(f"Trust records: {printable(data['trust_store'])}")
        return "\n".join(lines)

    app.emit(data, fmt, human)


def _target_file(app: App, file: Path | None) -> Path:
    from kb_search.cli.app import UserError

    if file is not None:
        return app.environment.cwd / file
    if app.config.project_file is None:
        raise UserError(f"no .kb.yaml in {app.environment.cwd} or above it: name the file to trust")
    return app.config.project_file


@config.command("trust")
@click.argument("file", required=False, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=FORMATS)
@common_options
@reports_trust
def config_trust(app: App, file: Path | None, fmt: str | None) -> None:
    """Trust FILE (default: the project's .kb.yaml) as it is now: its settings that choose
    where data goes, which model or cluster is used, apply from then on. Recorded by
    absolute path and SHA-256 of the content; any edit takes the trust away.

    
    Example:
      kb config trust .kb.yaml
    """
    from kb_search.config import trust_project_file

    env = app.environment
    done = trust_project_file(_target_file(app, file), env.env, env.home)

    def human() -> str:

        lets = ", ".join(done["settings"]) or "nothing that needs trust"
        return printable(
            f"Trusted {done['path']} (sha256 {str(done['sha256'])[:12]}); it now sets: {lets}."
        )

    app.emit(done, fmt, human)


@config.command("untrust")
@click.argument("file", required=False, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=FORMATS)
@common_options
@reports_trust
def config_untrust(app: App, file: Path | None, fmt: str | None) -> None:
    """Stop trusting FILE (default: the project's .kb.yaml)."""
    from kb_search.trust import record_key, untrust

    env = app.environment
    path = _target_file(app, file)
    removed = untrust(path, env.env, env.home)
    data = {"path": record_key(path), "removed": removed}

    def human() -> str:

        shown = printable(data["path"])
        return f"No longer trusted: {shown}." if removed else f"{shown} was not trusted."

    app.emit(data, fmt, human)


@click.command()
@click.option("--format", "fmt", type=FORMATS)
@common_options
def doctor(app: App, fmt: str | None) -> None:
    """Health checks; exit 1 when one fails (a warning is not a failure)."""
    checks = app.kb().doctor()
    ok = all(c.ok for c in checks)
    app.emit(
        {"ok": ok, "checks": [c.to_dict() for c in checks]},
        fmt,
        lambda: "\n".join(
            printable(f"[{_status(c.ok, c.warning)}] {c.name}: {c.detail}") for c in checks
        ),
    )
    if not ok:
        sys.exit(1)


def _status(ok: bool, warning: bool) -> str:
    if not ok:
        return "FAIL"
    return "warn" if warning else "ok"


@click.command("eval")
@click.argument("target", type=click.Path(path_type=Path, exists=True))
@click.option("--mode", "modes", multiple=True, type=click.Choice(["hybrid", "lexical", "vector"]))
@click.option(
    "--misses",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="Questions files: list up to N missed questions per mode.",
)
@click.option(
    "--fusion",
    type=click.Choice(["convex", "rrf"]),
    help="How hybrid combines the legs (default: the search.fusion setting, convex).",
)
@click.option(
    "--reranker",
    metavar="MODEL",
    help="Cross-encoder that reranks each mode's results (default: the search.reranker"
    " setting; none: no rerank stage).",
)
@click.option("--format", "fmt", type=FORMATS)
@common_options
def eval_cmd(
    app: App,
    target: Path,
    modes,
    misses: int,
    fusion: str | None,
    reranker: str | None,
    fmt: str | None,
) -> None:
    """Retrieval quality: TARGET is a BEIR-layout dataset directory (indexed once, kept and
    reused) or a questions file (.jsonl) over your indexed knowledge base.

    \b
    Questions file, one JSON object per line:
      {"id": "q1", "question": "how do I roll back a release",
       "relevant": ["docs/releases.md#L10-L24", "notes/ops.pdf#page=3"]}

    Relevant paths are relative to the folder you added (or any trailing part of the
    file's path); #L..-L.. or #page=N also scores chunks.

    
    Examples:
      kb eval ~/datasets/scifact
      kb eval questions.jsonl --mode hybrid --misses 10
      kb eval ~/datasets/scifact --mode hybrid --fusion rrf
      kb eval questions.jsonl --reranker cross-encoder/ms-marco-MiniLM-L-6-v2
    """
    modes = list(modes) or ["lexical", "vector", "hybrid"]
    with app.progress("Indexing dataset", "rerun to resume the indexing") as progress:
        kb = app.kb(Profile.SERVE)
        report = kb.eval(target, modes, progress=progress, fusion=fusion, reranker=reranker)
    data = dict(report, scores=[s.to_dict() for s in report["scores"]])

    def human() -> str:
        from kb_search.cli.render import beir_report_human, questions_report_human

        if report["kind"] == "beir":
            return beir_report_human(report)
        return questions_report_human(report, misses)

    app.emit(data, fmt, human)


@click.command("export")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite PATH if it exists.")
@click.option("--format", "fmt", type=FORMATS)
@common_options
def export(app: App, path: Path, force: bool, fmt: str | None) -> None:
    """Write a consistent copy of the database to PATH (safe while an ingest runs).

    
    Example:
      kb export /backup/kb-$(date +%F).db
    """
    with app.progress("Exporting", f"nothing was written to {path}") as progress:
        result = app.kb().export(path, force=force, progress=progress)
    app.emit(result.to_dict(), fmt, result.line)


# ---- git hooks -------------------------------------------------------------------------------


@click.group()
def hook() -> None:
    """Git hooks that keep the index in step with commits."""


def _baked_command(app: App) -> list[str]:
    from kb_search.git_hook import kb_command

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
    from kb_search.git_hook import LOG_NAME, install_hook, repo_top

    repo = repo or app.environment.cwd
    installed = install_hook(repo, app.config.data_dir.resolve(), _baked_command(app))
    top = repo_top(repo)
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

    app.emit(data, fmt, human)


def _repo_indexed(app: App, top: Path) -> bool:
    from kb_search.errors import DBError

    try:
        roots = app.kb().reads.roots()
    except DBError:
        return False
    return any(r == top or top in r.parents or r in top.parents for r in roots)


@hook.command("uninstall")
@click.argument("repo", required=False, type=click.Path(path_type=Path))
@common_options
def hook_uninstall(app: App, repo: Path | None) -> None:
    """Remove the kb post-commit hook (a hook it chained is put back)."""
    from kb_search.git_hook import uninstall_hook

    removed = uninstall_hook(repo or app.environment.cwd)
    click.echo("Removed the kb post-commit hook." if removed else "No kb hook installed.")


@hook.command("run", hidden=True)
@click.option("--repo", required=True, type=click.Path(path_type=Path))
@click.option("--commit", required=True)
@common_options
def hook_run(app: App, repo: Path, commit: str) -> None:
    """What the post-commit hook runs: sync the files COMMIT touched (writes the log line)."""
    from kb_search.cli.ingest import sync_paths
    from kb_search.git_hook import commit_paths, log_line

    try:
        paths = commit_paths(repo, commit)
        summary = sync_paths(app, paths, workers=0) if paths else None
    except Exception as exc:  # noqa: BLE001 - the log is the only place anyone will look
        click.echo(log_line(f"{repo}@{commit[:12]}: failed: {type(exc).__name__}: {exc}"))
        raise SystemExit(1) from exc
    text = summary.line() if summary else "nothing to sync"
    click.echo(log_line(f"{repo}@{commit[:12]}: {len(paths)} paths. {text}"))
    for failure in summary.failed if summary else []:
        click.echo(log_line(f"  failed: {failure.path}: {failure.reason}"))


# ---- about kb itself ------------------------------------------------------------------------


@click.command()
@click.option("--format", "fmt", type=FORMATS)
@common_options
def version(app: App, fmt: str | None) -> None:
    """kb's version, Python's, and the SQLite/sqlite-vec/onnxruntime it runs on."""
    from kb_search.diagnostics import versions

    info = versions(app.config["embedding.provider"])
    app.emit(info, fmt, lambda: "\n".join(f"{k}: {v}" for k, v in info.items()))


SHELLS = ("bash", "zsh", "fish")


@click.command()
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the shell completion script for SHELL (commands, options, choices, paths).

    \b
    Install it:
      bash:  kb completion bash > ~/.local/share/bash-completion/completions/kb
      zsh:   kb completion zsh > "${fpath[1]}/_kb"   (then: compinit)
      fish:  kb completion fish > ~/.config/fish/completions/kb.fish
    """
    from click.shell_completion import get_completion_class

    from kb_search.cli import cli

    completer = get_completion_class(shell)
    if completer is None:  # pragma: no cover - click ships all three
        raise click.UsageError(f"no completion for {shell}")
    click.echo(completer(cli, {}, "kb", "_KB_COMPLETE").source())


COMMANDS = [init, config, doctor, eval_cmd, export, hook, version, completion]
