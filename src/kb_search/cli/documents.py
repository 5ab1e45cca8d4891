"""Reading and labelling what is indexed: show, chunk, list, stats, tags, tag, untag."""

from __future__ import annotations

import click

from kb_search.cli.app import FORMATS, App, UserError, common_options, emit


@click.command()
@click.argument("ref")
@click.option("--format", "fmt", type=FORMATS)
@common_options
def show(app: App, ref: str, fmt: str | None) -> None:
    """A document with its chunks, by id or path."""
    from kb_search.cli.render import document_human

    doc = app.kb().document(ref)
    emit(doc.to_dict(), app.output_format(fmt), lambda: document_human(doc))


@click.command()
@click.argument("chunk_id")
@click.option("--context", type=click.IntRange(min=0, max=50), default=0, show_default=True)
@click.option("--format", "fmt", type=FORMATS)
@common_options
def chunk(app: App, chunk_id: str, context: int, fmt: str | None) -> None:
    """One chunk with `--context N` neighbours on each side."""
    from kb_search.cli.render import chunk_header

    chunks = app.kb().chunk(chunk_id, context)
    data = {"chunk_id": int(chunk_id), "chunks": [c.to_dict() for c in chunks]}

    def human() -> str:
        return "\n\n".join(f"{chunk_header(c)}\n{c.text}" for c in chunks)

    emit(data, app.output_format(fmt), human)


@click.command("list")
@click.option("--type", "doc_type")
@click.option("--tag")
@click.option("--limit", type=click.IntRange(min=1))
@click.option("--format", "fmt", type=FORMATS)
@common_options
def list_cmd(app: App, doc_type, tag, limit, fmt: str | None) -> None:
    """Indexed documents."""
    from kb_search.cli.render import table

    docs = app.kb().documents(doc_type, tag, limit)
    rows = [(d.document_id, d.type, d.chunk_count, d.rel_path, ", ".join(d.tags)) for d in docs]
    emit(
        {"documents": [d.to_dict() for d in docs], "count": len(docs)},
        app.output_format(fmt),
        lambda: table(rows, ["id", "type", "chunks", "path", "tags"]),
    )


@click.command()
@click.option("--format", "fmt", type=FORMATS)
@common_options
def stats(app: App, fmt: str | None) -> None:
    """Counts, sizes and the model."""
    info = app.kb().stats()

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


@click.command()
@click.argument("ref")
@click.argument("tags", nargs=-1, required=True)
@click.option("--format", "fmt", type=FORMATS)
@common_options
def tag(app: App, ref: str, tags, fmt: str | None) -> None:
    """Add tags to a document."""
    names = _tag_names(tags)
    doc_id, now = app.kb().tag(ref, names)
    emit(
        {"document_id": doc_id, "added": names, "tags": now},
        app.output_format(fmt),
        lambda: f"Tagged document {doc_id}: {', '.join(names)}",
    )


@click.command()
@click.argument("ref")
@click.argument("tags", nargs=-1, required=True)
@click.option("--format", "fmt", type=FORMATS)
@common_options
def untag(app: App, ref: str, tags, fmt: str | None) -> None:
    """Remove tags from a document."""
    names = _tag_names(tags)
    doc_id, removed, now = app.kb().untag(ref, names)
    emit(
        {"document_id": doc_id, "removed": removed, "tags": now},
        app.output_format(fmt),
        lambda: f"Removed {removed} tags from document {doc_id}",
    )


@click.command()
@click.option("--format", "fmt", type=FORMATS)
@common_options
def tags(app: App, fmt: str | None) -> None:
    """All tags with their document counts."""
    from kb_search.cli.render import table

    rows = app.kb().tags()
    emit(
        {"tags": rows},
        app.output_format(fmt),
        lambda: table([(r["tag"], r["documents"]) for r in rows], ["tag", "documents"]),
    )


COMMANDS = [show, chunk, list_cmd, stats, tag, untag, tags]
