"""The `kb` command: a thin click shell over the library core."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from kb_search import __version__
from kb_search.cli.app import FORMATS, App, Progress, UserError, common_options, emit
from kb_search.environment import Environment


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--data-dir", type=click.Path(path_type=Path), help="Data directory (~/.kb).")
@click.option("--db", "db_path", type=click.Path(path_type=Path), help="Database file.")
@click.option("--config", "config_path", type=click.Path(path_type=Path), help="Config file.")
@click.version_option(__version__, prog_name="kb")
@click.pass_context
def cli(ctx: click.Context, data_dir, db_path, config_path) -> None:
    """kb: local hybrid search over your knowledge base, in one SQLite file."""
    flags = {"data_dir": data_dir, "db": db_path, "config": config_path}
    ctx.meta["kb.flags"] = {k: v for k, v in flags.items() if v is not None}
    if isinstance(ctx.obj, Environment):
        ctx.meta["kb.environment"] = ctx.obj


# ---- init / config ------------------------------------------------------------------------


@cli.command()
@click.option("--model", help="Embedding model (default: all-MiniLM-L6-v2).")
@click.option("--docling", is_flag=True, help="Also fetch Docling's PDF layout models (online).")
@click.option("--format", "fmt", type=FORMATS)
@common_options
def init(app: App, model: str | None, docling: bool, fmt: str | None) -> None:
    """Create the data directory and the database, and provision the embedding model."""
    from kb_search.store.inventory import stats
    from kb_search.vectors.model import prepare_for_writing

    if model:
        app.config.values["model"], app.config.sources["model"] = model, "flag"
    app.config.data_dir.mkdir(parents=True, exist_ok=True)
    conn = app.open_db(create=True)
    embedder, _ = prepare_for_writing(app.config, conn)
    info = stats(conn, app.config.db_path)
    conn.close()
    if docling:
        from kb_search.ingest.formats.docling import fetch_docling_models

        info["docling_models"] = str(fetch_docling_models())
    emit(
        {"data_dir": str(app.config.data_dir), "db": str(app.config.db_path), **info},
        app.output_format(fmt),
        lambda: (
            f"Initialised {app.config.db_path} ({info['documents']} documents, "
            f"model {embedder.name}, {embedder.dim} dimensions)."
        ),
    )


@cli.group()
def config() -> None:
    """Show the effective configuration."""


@config.command("show")
@click.option("--format", "fmt", type=FORMATS)
@common_options
def config_show(app: App, fmt: str | None) -> None:
    """Print every setting, its value and where it came from."""
    from kb_search.cli.render import table

    rows = app.config.as_rows()
    data = {key: {"value": value, "source": source} for key, value, source in rows}
    emit(data, app.output_format(fmt), lambda: table(rows, ["setting", "value", "source"]))


# ---- add / remove -------------------------------------------------------------------------


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--tag", "tags", multiple=True, help="Tag every added document (repeatable).")
@click.option("--type", "doc_type", help="Store the documents under this type.")
@click.option("--workers", type=click.IntRange(min=0), help="Parser processes (0: in-process).")
@click.option("--format", "fmt", type=FORMATS)
@common_options
def add(app: App, paths, tags, doc_type, workers, fmt: str | None) -> None:
    """Ingest files and directories (unchanged files are skipped)."""
    from kb_search.ingest.pipeline import ErrorLog, add_paths

    options = app.add_options(workers, tags=list(tags), doc_type=doc_type)
    app.config.data_dir.mkdir(parents=True, exist_ok=True)
    conn = app.open_db(create=True)
    vectors = app.writing_vectors(conn, options)
    progress = Progress(app, "Indexing")
    try:
        summary = add_paths(
            conn,
            list(paths),
            options,
            error_log=ErrorLog(app.error_log),
            vectors=vectors,
            on_start=progress.start,
            on_file=progress.step,
        )
    finally:
        progress.close()
        conn.close()
    for note in summary.notes:
        click.echo(f"Note: {note}", err=True)
    fmt = app.output_format(fmt)
    emit(summary.to_dict() | {"summary": summary.line()}, fmt, summary.line)
    if summary.failed and fmt == "human":
        click.echo(f"See {app.error_log} for the failures.", err=True)


@cli.command()
@click.argument("refs", nargs=-1, required=True)
@click.option("--format", "fmt", type=FORMATS)
@common_options
def remove(app: App, refs, fmt: str | None) -> None:
    """Delete documents by id or path (chunks, FTS rows and vectors go with them)."""
    from kb_search.store.documents import delete_document
    from kb_search.store.inventory import resolve_document_id

    conn = app.open_db()
    removed = []
    for ref in refs:
        doc_id = resolve_document_id(conn, ref, app.environment.cwd)
        if delete_document(conn, doc_id):
            removed.append(doc_id)
    emit({"removed": removed}, app.output_format(fmt), lambda: f"Removed {len(removed)} documents.")


# ---- search -------------------------------------------------------------------------------


@cli.command()
@click.argument("query")
@click.option("--mode", type=click.Choice(["hybrid", "lexical", "vector"]))
@click.option("--top", type=click.IntRange(min=1, max=1000))
@click.option("--type", "types", multiple=True, help="Only these document types.")
@click.option("--tag", "tags", multiple=True, help="Only documents with any of these tags.")
@click.option("--path", "paths", multiple=True, help="Path glob (* stays inside a folder).")
@click.option("--lang", "languages", multiple=True, help="Only this language.")
@click.option("--after", "after", help="Only files modified on/after this date (YYYY-MM-DD).")
@click.option("--before", "before", help="Only files modified before this date (YYYY-MM-DD).")
@click.option("--min-score", type=click.FloatRange(0, 1))
@click.option("--format", "fmt", type=FORMATS)
@common_options
def search(
    app: App, query, mode, top, types, tags, paths, languages, after, before, min_score, fmt
) -> None:
    """Search the knowledge base (hybrid by default)."""
    from kb_search.cli.render import search_human
    from kb_search.search.pipeline import SearchOptions
    from kb_search.search.pipeline import search as run_search
    from kb_search.search.query import Filters

    options = SearchOptions(
        mode=mode or app.config["search.default_mode"],
        top=top or app.config["search.default_top"],
        filters=Filters(
            list(types),
            list(tags),
            list(paths),
            list(languages),
            after=[after] if after else [],
            before=[before] if before else [],
        ),
        min_score=min_score,
        rrf_k=app.config["search.rrf_k"],
    )
    conn = app.open_db(readonly=True)
    vector, unavailable = vector_leg_for(app, conn, options.mode)
    response = run_search(conn, query, options, vector=vector, vector_unavailable=unavailable)
    fmt = app.output_format(fmt)
    color = fmt == "human" and app.environment.stdout_isatty
    emit(response.to_dict(), fmt, lambda: search_human(response, color=color))


def vector_leg_for(app: App, conn: Any, mode: str) -> tuple[Any, str | None]:
    """The vector leg for this DB, or why there is none."""
    from kb_search.vectors.model import model_for_search

    if mode == "lexical":
        return None, None
    return model_for_search(app.config, conn)


# ---- show / chunk / list / stats / tags -----------------------------------------------------


@cli.command()
@click.argument("ref")
@click.option("--format", "fmt", type=FORMATS)
@common_options
def show(app: App, ref: str, fmt: str | None) -> None:
    """A document with its chunks, by id or path."""
    from kb_search.cli.render import document_human
    from kb_search.store.inventory import get_document

    conn = app.open_db(readonly=True)
    doc = get_document(conn, ref, cwd=app.environment.cwd)
    emit(doc.to_dict(), app.output_format(fmt), lambda: document_human(doc))


@cli.command()
@click.argument("chunk_id", type=int)
@click.option("--context", type=click.IntRange(min=0, max=50), default=0, show_default=True)
@click.option("--format", "fmt", type=FORMATS)
@common_options
def chunk(app: App, chunk_id: int, context: int, fmt: str | None) -> None:
    """One chunk with `--context N` neighbours on each side."""
    from kb_search.cli.render import chunk_header
    from kb_search.store.inventory import get_chunk

    conn = app.open_db(readonly=True)
    chunks = get_chunk(conn, chunk_id, context)
    data = {"chunk_id": chunk_id, "chunks": [c.to_dict() for c in chunks]}

    def human() -> str:
        return "\n\n".join(f"{chunk_header(c)}\n{c.text}" for c in chunks)

    emit(data, app.output_format(fmt), human)


@cli.command("list")
@click.option("--type", "doc_type")
@click.option("--tag")
@click.option("--limit", type=click.IntRange(min=1))
@click.option("--format", "fmt", type=FORMATS)
@common_options
def list_cmd(app: App, doc_type, tag, limit, fmt: str | None) -> None:
    """Indexed documents."""
    from kb_search.cli.render import table
    from kb_search.store.inventory import list_documents

    conn = app.open_db(readonly=True)
    docs = list_documents(conn, doc_type, tag, limit)
    rows = [(d.document_id, d.type, d.chunk_count, d.rel_path, ", ".join(d.tags)) for d in docs]
    emit(
        {"documents": [d.to_dict() for d in docs], "count": len(docs)},
        app.output_format(fmt),
        lambda: table(rows, ["id", "type", "chunks", "path", "tags"]),
    )


@cli.command()
@click.option("--format", "fmt", type=FORMATS)
@common_options
def stats(app: App, fmt: str | None) -> None:
    """Counts, sizes and the model."""
    from kb_search.store.inventory import stats as get_stats

    conn = app.open_db(readonly=True)
    info = get_stats(conn, app.config.db_path)

    def human() -> str:
        types = ", ".join(f"{k}: {v}" for k, v in sorted(info["by_type"].items())) or "-"
        size = f"{info['db_bytes'] / 1e6:.1f} MB" if info["db_bytes"] else "-"
        return (
            f"Documents: {info['documents']} ({types})\nChunks: {info['chunks']}"
            f"\nTags: {info['tags']}\nModel: {info['model'] or '-'}\nDB: {info['db_path']} ({size})"
        )

    emit(info, app.output_format(fmt), human)


def _tag_names(tags: tuple[str, ...]) -> list[str]:
    names = [t.strip() for t in tags if t.strip()]
    if not names:
        raise UserError("give at least one non-empty tag")
    return names


@cli.command()
@click.argument("ref")
@click.argument("tags", nargs=-1, required=True)
@click.option("--format", "fmt", type=FORMATS)
@common_options
def tag(app: App, ref: str, tags, fmt: str | None) -> None:
    """Add tags to a document."""
    from kb_search.store.inventory import document_tags, resolve_document_id
    from kb_search.store.tags import add_tags

    names = _tag_names(tags)
    conn = app.open_db()
    doc_id = resolve_document_id(conn, ref, app.environment.cwd)
    add_tags(conn, doc_id, names)
    now = document_tags(conn, {doc_id}).get(doc_id, [])
    emit(
        {"document_id": doc_id, "added": names, "tags": now},
        app.output_format(fmt),
        lambda: f"Tagged document {doc_id}: {', '.join(names)}",
    )


@cli.command()
@click.argument("ref")
@click.argument("tags", nargs=-1, required=True)
@click.option("--format", "fmt", type=FORMATS)
@common_options
def untag(app: App, ref: str, tags, fmt: str | None) -> None:
    """Remove tags from a document."""
    from kb_search.store.inventory import document_tags, resolve_document_id
    from kb_search.store.tags import remove_tags

    names = _tag_names(tags)
    conn = app.open_db()
    doc_id = resolve_document_id(conn, ref, app.environment.cwd)
    removed = remove_tags(conn, doc_id, names)
    now = document_tags(conn, {doc_id}).get(doc_id, [])
    emit(
        {"document_id": doc_id, "removed": removed, "tags": now},
        app.output_format(fmt),
        lambda: f"Removed {removed} tags from document {doc_id}",
    )


@cli.command()
@click.option("--format", "fmt", type=FORMATS)
@common_options
def tags(app: App, fmt: str | None) -> None:
    """All tags with their document counts."""
    from kb_search.cli.render import table
    from kb_search.store.inventory import list_tags

    conn = app.open_db(readonly=True)
    rows = list_tags(conn)
    emit(
        {"tags": rows},
        app.output_format(fmt),
        lambda: table([(r["tag"], r["documents"]) for r in rows], ["tag", "documents"]),
    )


# ---- reindex / similar --------------------------------------------------------------------


@cli.command()
@click.option("--model", help="Switch to this embedding model (re-embeds everything).")
@click.option("--full", is_flag=True, help="Re-embed every chunk, not only missing vectors.")
@click.option("--format", "fmt", type=FORMATS)
@common_options
def reindex(app: App, model: str | None, full: bool, fmt: str | None) -> None:
    """Embed chunks that have no vector yet (resumable); --model switches models."""
    from kb_search.store import db
    from kb_search.vectors.model import canonical, load_embedder
    from kb_search.vectors.reindex import reindex as run_reindex

    conn = app.open_db()
    name = (
        canonical(model)
        if model
        else (db.get_meta(conn, "model_name") or canonical(app.config["model"]))
    )
    embedder = load_embedder(app.config, name)
    progress = Progress(app, "Embedding")
    try:
        summary = run_reindex(
            conn, embedder, full=full, on_start=progress.start, on_batch=progress.advance
        )
    finally:
        progress.close()
        conn.close()
    emit(summary.to_dict(), app.output_format(fmt), summary.line)


@cli.command()
@click.argument("ref")
@click.option("--chunk", "is_chunk", is_flag=True, help="REF is a chunk id: similar chunks.")
@click.option("--top", type=click.IntRange(min=1, max=200), default=10, show_default=True)
@click.option("--format", "fmt", type=FORMATS)
@common_options
def similar(app: App, ref: str, is_chunk: bool, top: int, fmt: str | None) -> None:
    """Nearest documents to a document (id or path), or chunks to a chunk (--chunk)."""
    from kb_search.cli.render import search_human
    from kb_search.search.similar import similar_chunks, similar_documents
    from kb_search.store.inventory import resolve_document_id
    from kb_search.vectors.model import model_for_search

    conn = app.open_db(readonly=True)
    vector, why = model_for_search(app.config, conn)
    if vector is None:
        raise UserError(f"similarity needs vectors: {why}")
    if is_chunk:
        if not ref.isdigit():
            raise UserError(f"--chunk needs a numeric chunk id, got {ref!r}")
        response = similar_chunks(conn, vector.index, int(ref), top)
    else:
        doc_id = resolve_document_id(conn, ref, app.environment.cwd)
        response = similar_documents(conn, vector.index, doc_id, top)
    emit(response.to_dict(), app.output_format(fmt), lambda: search_human(response))


# ---- doctor / eval ------------------------------------------------------------------------


@cli.command()
@click.option("--format", "fmt", type=FORMATS)
@common_options
def doctor(app: App, fmt: str | None) -> None:
    """Health checks; exit 1 when one fails."""
    from kb_search.doctor import run_checks
    from kb_search.vectors.model import model_checks

    conn = app.open_db()
    checks = run_checks(conn, model_checks(app.config, conn))
    ok = all(c.ok for c in checks)
    emit(
        {"ok": ok, "checks": [c.to_dict() for c in checks]},
        app.output_format(fmt),
        lambda: "\n".join(f"[{'ok' if c.ok else 'FAIL'}] {c.name}: {c.detail}" for c in checks),
    )
    if not ok:
        sys.exit(1)


@cli.command("eval")
@click.argument("dataset_dir", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--mode", "modes", multiple=True, type=click.Choice(["hybrid", "lexical", "vector"]))
@click.option("--format", "fmt", type=FORMATS)
@common_options
def eval_cmd(app: App, dataset_dir: Path, modes, fmt: str | None) -> None:
    """Retrieval quality on a BEIR-layout dataset; its index is kept and reused."""
    from kb_search.cli.render import table
    from kb_search.evaluate import run_eval
    from kb_search.vectors.model import configured_model, load_embedder

    modes = list(modes) or ["lexical", "vector", "hybrid"]
    embedder = None
    if set(modes) - {"lexical"}:
        embedder = load_embedder(app.config, configured_model(app.config).name)
    progress = Progress(app, "Indexing dataset")
    corpus = dataset_dir / "corpus.jsonl"
    progress.start(sum(1 for _ in corpus.open(encoding="utf-8")) if corpus.is_file() else 0)
    try:
        report = run_eval(
            dataset_dir,
            app.config.data_dir / "eval",
            app.chunk_settings(),
            modes,
            embedder=embedder,
            progress=progress.advance,
        )
    finally:
        progress.close()
    rows = [
        (
            s.mode,
            f"{s.ndcg_at_10:.4f}",
            f"{s.recall_at_100:.4f}",
            f"{s.mrr_at_10:.4f}",
            f"{s.p50_ms:.1f}",
            f"{s.p95_ms:.1f}",
            s.queries,
        )
        for s in report["scores"]
    ]

    def human() -> str:
        how = "reused" if report["reused"] else f"built in {report['index_seconds']:.1f} s"
        head = (
            f"Dataset {report['dataset']}: {report['documents']} documents,"
            f" {report['chunks']} chunks (index {how})"
        )
        cols = ["mode", "nDCG@10", "Recall@100", "MRR@10", "p50 ms", "p95 ms", "queries"]
        return head + "\n" + table(rows, cols)

    data = dict(report, scores=[s.to_dict() for s in report["scores"]])
    emit(data, app.output_format(fmt), human)


def _register_commands() -> None:
    from kb_search.cli.maintenance import COMMANDS as MAINTENANCE
    from kb_search.cli.serve import COMMANDS as SERVE

    for command in (*SERVE, *MAINTENANCE):
        cli.add_command(command)


_register_commands()


def main(argv: list[str] | None = None) -> None:
    if os.environ.get("KB_DEBUG"):
        cli.main(args=argv, prog_name="kb")
        return
    try:
        cli.main(args=argv, prog_name="kb", standalone_mode=True)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
