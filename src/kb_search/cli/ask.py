"""`kb ask`: an answer from your documents by your own chat model, with citations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from kb_search.cli.app import FORMATS, App, common_options
from kb_search.cli.search import QueryCommand

if TYPE_CHECKING:
    from kb_search.ask import Answer

ASK_HELP = """Answer a question from the knowledge base with your chat model, citing passages.

kb searches as `kb search` does, gives the model only the passages it found (numbered,
each with its citation) and asks for a cited answer; when nothing found is close enough it
refuses and says what it searched. Citations open with `kb get CITATION`.

\b
Examples:
  kb ask how do I keep a PVC when its app is deleted
  kb ask what does maintenance_work_mem control --type html
  kb ask why does sync hang --expand --format json

\b
Needs a chat model (docs/models.md):
  llm.model: ollama:llama3.2                  Ollama on this machine
  llm.model: openai:NAME + llm.endpoint: URL  vLLM, llama.cpp, LM Studio...

JSON (--format json, or piped): answer, citations, claims, refused, reason, complete,
passages, timings_ms."""


@click.command(cls=QueryCommand, help=ASK_HELP, no_args_is_help=True)
@click.argument("question", nargs=-1, required=True)
@click.option("--mode", type=click.Choice(["hybrid", "lexical", "vector"]), help="How to search.")
@click.option(
    "--passages", type=click.IntRange(1, 50), help="Passages the model reads (ask.passages, 8)."
)
@click.option("--type", "types", multiple=True, help="Only these document types (pdf, code...).")
@click.option("--tag", "tags", multiple=True, help="Only documents with any of these tags.")
@click.option("--path", "paths", multiple=True, help="Path glob: * stays in a folder, ** crosses.")
@click.option("--lang", "languages", multiple=True, help="Only this language (python, go...).")
@click.option("--after", "after", help="Only files modified on/after this date (YYYY-MM-DD).")
@click.option("--before", "before", help="Only files modified before this date (YYYY-MM-DD).")
@click.option(
    "--also", "variants", multiple=True, metavar="TEXT", help="Another phrasing (as kb search)."
)
@click.option("--expand", is_flag=True, help="Let the chat model add phrasings to the search.")
@click.option("--format", "fmt", type=FORMATS, help="json or human (default: by terminal).")
@common_options
def ask(
    app: App,
    question: tuple[str, ...],
    mode: str | None,
    passages: int | None,
    types,
    tags,
    paths,
    languages,
    after,
    before,
    variants: tuple[str, ...],
    expand: bool,
    fmt: str | None,
) -> None:
    from kb_search.cli.search_request import filter_params
    from kb_search.search.query import Filters

    text = " ".join(question)
    out = app.output_format(fmt)
    kb = app.kb()
    kb.models.chat()  # no model: the one line that says how to set one, before any search
    options = kb.search_options(
        mode=mode,
        top=passages or app.config["ask.passages"],
        filters=Filters(**filter_params(types, tags, paths, languages, after, before)),
        variants=tuple(variants),
    )
    streamed = out != "json"
    if streamed:
        from kb_search.sanitize import printable

        def on_text(piece: str) -> None:
            click.echo(printable(piece, keep="\n\t"), nl=False)

        result = kb.ask(text, options, expand=expand, on_text=on_text)
    else:
        result = kb.ask(text, options, expand=expand)
    if out == "json":
        app.emit(result.to_dict(), "json", str)
    else:
        click.echo(_after_stream(result, app))
    if not result.complete:
        raise click.exceptions.Exit(1)


def _after_stream(result: Answer, app: App) -> str:
    """What a terminal shows once the answer has streamed: the sources, what was dropped, or
    the refusal."""
    from kb_search.sanitize import printable

    if result.refused:
        return f"No answer: {printable(result.reason)}"
    if not result.complete and not result.answer:
        return f"No answer: {printable(result.error)}"
    lines: list[Any] = [""]
    if not result.complete:
        lines.append(f"\n[the answer stopped here: {printable(result.error)}]")
    if result.citations:
        lines.append("\nSources:")
        for passage in result.citations:
            where = app.terminal.show_path(passage.citation)
            lines.append(f"  [{passage.number}] {printable(where)}  {printable(passage.title)}")
    dropped = result.dropped
    if dropped:
        numbers = ", ".join(f"[{n}]" for n in dropped)
        lines.append(
            f"Note: {numbers} cited a passage kb did not give the model: dropped; the claim"
            " is marked [uncited]"
        )
    uncited = sum(c.uncited for c in result.claims)
    if uncited and result.complete:
        lines.append(f"Note: {uncited} of {len(result.claims)} statements cite no passage")
    return "\n".join(lines)


COMMANDS = [ask]
