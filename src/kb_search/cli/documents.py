"""Reading and labelling what is indexed: show, chunk, list, stats, tags, tag, untag."""

from __future__ import annotations

import click

from kb_search.cli.app import FORMATS, App, UserError, common_options
from kb_search.sanitize import printable
from kb_search.text import plural


@click.command()
@click.argument("ref")
@click.option("--format", "fmt", type=FORMATS)
@common_options
def show(app: App, ref: str, fmt: str | None) -> None:
    """A document with its chunks, by id, path or citation (paged on a terminal); a
    citation with lines, a page or an anchor shows only that passage (as `kb get`).

    \b
    Examples:
      kb show 12
      kb show docs/git-admin.md
      kb show "docs/git-admin.md#L15-L19" --format json
    """
    if _is_passage(ref):
        _emit_reading(app, app.kb().get([ref]), fmt)
        return
    doc = app.kb().reads.document(ref)

    def human() -> str:
        from kb_search.cli.render import document_human

        return document_human(doc, app.terminal)

    app.emit(doc.to_dict(), fmt, human, page=True)


def _is_passage(ref: str) -> bool:
    """A citation that names a passage, not a whole document: `path#L10-L24`, `#page=3`,
    `#anchor`."""
    from kb_search.reading import parse_fragment

    if "#" not in ref:
        return False
    fragment = parse_fragment(ref.rsplit("#", 1)[1])
    return bool(fragment.lines or fragment.pages or fragment.anchor)


def _emit_reading(app: App, reading, fmt: str | None) -> None:
    def human() -> str:
        from kb_search.cli.render import reading_human

        return reading_human(reading, app.terminal)

    app.emit(reading.to_dict(), fmt, human, page=True)


@click.command()
@click.argument("citations", nargs=-1, required=True)
@click.option(
    "-C",
    "--context",
    type=click.IntRange(min=0, max=200),
    default=0,
    show_default=True,
    help="Lines of context around each cited range (neighbouring chunks for a page).",
)
@click.option(
    "--max-bytes",
    type=click.IntRange(min=1),
    help="Byte budget for all passages: whole ones first, the last cut, the rest omitted.",
)
@click.option(
    "--raw",
    is_flag=True,
    help="The file's own lines (HTML source, ...) instead of the clean text that was indexed.",
)
@click.option(
    "--symbol",
    is_flag=True,
    help="Widen a line of code to the function or class around it (path.py:120 --symbol).",
)
@click.option("--format", "fmt", type=FORMATS)
@common_options
def get(
    app: App,
    citations: tuple[str, ...],
    context: int,
    max_bytes,
    raw: bool,
    symbol: bool,
    fmt: str | None,
) -> None:
    """Exactly the cited passages of indexed documents, as the clean text that was indexed.

    A citation as `kb search` prints it (path#L10-L24, path#page=3, path#anchor), a code
    symbol (path.py#Class.method), a path relative to the current directory, path:10 or
    chunk:ID. Markdown, text and code come from the file when it is unchanged since indexing
    (from: disk); converted formats (HTML, PDF, EPUB, office, ...) and changed files from the
    index (from: index), with the source lines or pages they came from.

    \b
    Examples:
      kb get /home/me/notes/git.md#L15-L19 -C 3
      kb get chunk:18 "docs/manual.pdf#page=3" --max-bytes 4000
      kb get src/app.py#Retry.backoff          kb get src/app.py:120 --symbol
    """
    reading = app.kb().get(list(citations), context, max_bytes, raw=raw, symbol=symbol)
    _emit_reading(app, reading, fmt)


@click.command()
@click.argument("chunk_id")
@click.option(
    "--context",
    type=click.IntRange(min=0, max=50),
    default=0,
    show_default=True,
    help="Neighbouring chunks to show on each side.",
)
@click.option("--format", "fmt", type=FORMATS)
@common_options
def chunk(app: App, chunk_id: str, context: int, fmt: str | None) -> None:
    """One chunk (its id is in every search result) with `--context N` neighbours.

    \b
    Example:
      kb chunk 18 --context 2
    """
    from kb_search.sanitize import parse_id

    number = parse_id(chunk_id, "chunk id")
    kb = app.kb()
    chunks = kb.reads.chunk(number, context)
    data = {"chunk_id": number, "chunks": [c.to_dict() for c in chunks]}

    def human() -> str:
        from kb_search.cli.render import chunks_human

        path = kb.reads.document(str(chunks[0].document_id), with_chunks=False).path
        return chunks_human(chunks, path, app.terminal)

    app.emit(data, fmt, human, page=True)


@click.command("list")
@click.option("--type", "doc_type", help="Only this document type.")
@click.option("--tag", help="Only documents with this tag.")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many documents.")
@click.option(
    "--offset", type=click.IntRange(min=0), default=0, help="Skip this many (with --limit: pages)."
)
@click.option("--format", "fmt", type=FORMATS)
@common_options
def list_cmd(app: App, doc_type, tag, limit, offset: int, fmt: str | None) -> None:
    """Indexed documents, by path.

    \b
    Examples:
      kb list --type pdf
      kb list --tag work --limit 50 --offset 50
    """
    page = app.kb().reads.document_page(doc_type, tag, limit, offset)
    docs, data = page.documents, page.to_dict()

    def human() -> str:
        from kb_search.cli.render import table

        rows = [
            (d.document_id, d.type, d.chunk_count, app.show_path(d.path), ", ".join(d.tags))
            for d in docs
        ]
        text = table(rows, ["id", "type", "chunks", "path", "tags"], empty="No documents.")
        if page.next_offset is not None:
            text += f"\n{page.next_offset} of {page.total}: --offset {page.next_offset} for more."
        return text

    app.emit(data, fmt, human, page=True)


@click.command()
@click.option("--format", "fmt", type=FORMATS)
@common_options
def stats(app: App, fmt: str | None) -> None:
    """Counts, sizes and the model."""
    info = app.kb().reads.stats()

    def human() -> str:
        types = ", ".join(f"{k}: {v}" for k, v in sorted(info["by_type"].items())) or "none"
        size = f"{info['db_bytes'] / 1e6:.1f} MB" if info["db_bytes"] else "-"
        return (
            f"Documents: {info['documents']} ({printable(types)})\nChunks: {info['chunks']}"
            f"\nTags: {info['tags']}\nModel: {printable(info['model'] or 'none')}"
            f"\nDB: {printable(info['db_path'])} ({size})"
            + (f"\nOCR: {waiting} scanned pages wait" if (waiting := ocr_pages(info)) else "")
            + (f"\nCopies: {copied} documents another holds" if (copied := _copied(info)) else "")
        ) + (f"\nNote: {printable(note)}" if (note := info["paths_here"]["note"]) else "")

    app.emit(info, fmt, human)


def _copied(info: dict) -> int:
    """Documents whose text another holds (search names them in `also_at`)."""
    return int(info.get("copied_documents") or 0)


def ocr_pages(info: dict) -> int:
    """Scanned PDF pages queued for OCR (`kb add`/`kb sync` read them after the text)."""
    return int((info.get("ocr_waiting") or {}).get("pages") or 0)


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
    """Add tags to a document (by id or path): kb tag docs/plan.md work q3"""
    names = _tag_names(tags)
    doc_id, now = app.kb().tag(ref, names)
    app.emit(
        {"document_id": doc_id, "added": names, "tags": now},
        fmt,
        lambda: f"Tagged document {doc_id}: {printable(', '.join(names))}",
    )


@click.command()
@click.argument("ref")
@click.argument("tags", nargs=-1, required=True)
@click.option("--format", "fmt", type=FORMATS)
@common_options
def untag(app: App, ref: str, tags, fmt: str | None) -> None:
    """Remove tags from a document (by id or path): kb untag docs/plan.md q3"""
    names = _tag_names(tags)
    doc_id, removed, now = app.kb().untag(ref, names)
    app.emit(
        {"document_id": doc_id, "removed": removed, "tags": now},
        fmt,
        lambda: f"Removed {plural(removed, 'tag')} from document {doc_id}",
    )


@click.command()
@click.option("--format", "fmt", type=FORMATS)
@common_options
def tags(app: App, fmt: str | None) -> None:
    """All tags with their document counts."""
    rows = app.kb().reads.tags()

    def human() -> str:
        from kb_search.cli.render import table

        return table(
            [(r["tag"], r["documents"]) for r in rows], ["tag", "documents"], empty="No tags."
        )

    app.emit({"tags": rows}, fmt, human)


@click.command()
@click.option("--format", "fmt", type=FORMATS)
@common_options
def roots(app: App, fmt: str | None) -> None:
    """The folders added with `kb add`, with their documents and chunks.

    `kb sync` and `kb watch` rescan these; `kb remove FOLDER` removes a folder's documents and
    forgets it.
    """
    from dataclasses import asdict

    rows = app.kb().reads.root_summaries()

    def human() -> str:
        from kb_search.cli.render import table

        return table(
            [
                (app.terminal.show_path(r.path) + ("" if r.exists else "  (missing)"),
                 r.documents, r.chunks, ", ".join(r.tags))
                for r in rows
            ],
            ["folder", "documents", "chunks", "tags"],
            empty="No folders added yet: `kb add FOLDER`.",
        )  # fmt: skip

    app.emit({"roots": [asdict(r) for r in rows]}, fmt, human)


COMMANDS = [show, get, chunk, list_cmd, stats, tag, untag, tags, roots]
