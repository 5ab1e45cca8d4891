"""`kb search` and `kb similar`."""

from __future__ import annotations

import click

from kb_search.cli.app import FORMATS, App, common_options, emit


@click.command()
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
    from kb_search.search.query import Filters

    kb = app.kb()
    filters = Filters(
        types=list(types),
        tags=list(tags),
        paths=list(paths),
        languages=list(languages),
        after=[after] if after else [],
        before=[before] if before else [],
    )
    options = kb.search_options(mode=mode, top=top, filters=filters, min_score=min_score)
    response = kb.search(query, options)
    fmt = app.output_format(fmt)
    color = fmt == "human" and app.environment.stdout_isatty
    emit(response.to_dict(), fmt, lambda: search_human(response, color=color))


@click.command()
@click.argument("ref")
@click.option("--chunk", "is_chunk", is_flag=True, help="REF is a chunk id: similar chunks.")
@click.option("--top", type=click.IntRange(min=1, max=200), default=10, show_default=True)
@click.option("--format", "fmt", type=FORMATS)
@common_options
def similar(app: App, ref: str, is_chunk: bool, top: int, fmt: str | None) -> None:
    """Nearest documents to a document (id or path), or chunks to a chunk (--chunk)."""
    from kb_search.cli.render import search_human

    response = app.kb().similar(ref, chunk=is_chunk, top=top)
    emit(response.to_dict(), app.output_format(fmt), lambda: search_human(response))


COMMANDS = [search, similar]
