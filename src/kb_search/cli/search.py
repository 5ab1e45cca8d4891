"""`kb search` and `kb similar`."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kb_search.cli.app import FORMATS, App, UsageError, common_options, warn
from kb_search.cli.warm import warm_client
from kb_search.environment import process_age_ms

if TYPE_CHECKING:  # `kb --help` loads this module: the search types only when it runs
    from kb_search.cli.search_request import SearchRequest
    from kb_search.knowledge_base import KnowledgeBase
    from kb_search.search.results import SearchResponse

QUERY_SYNTAX = """\b
Query syntax:
  words         any may match; chunks with more of them rank higher
  "a phrase"    these words in this order (for the shell: '"a phrase"')
  -word         leave out chunks with this word; a query word that starts
                with - goes after --: kb search --top 5 -- -draft backups
  type:pdf  tag:work  path:notes/**  lang:go  after:2025-01-01  before:...
                inline filters, the same as the options below
  'raw FTS5'    a whole query in single quotes is SQLite FTS5 syntax:
                kb search "'git NEAR(install source, 5)'" --mode lexical"""

SEARCH_HELP = f"""Search the knowledge base (hybrid: keywords + meaning, fused).

QUERY is the rest of the command line: no quotes needed, options may come anywhere.

\b
Examples:
  kb search how do I roll back a release
  kb search backup retention type:pdf --top 5
  kb search '"write-ahead log"' sqlite --mode lexical
  kb search retry with jitter --path 'code/**' --format json
  kb search rollback --compact      # agents: id, citation, heading, text
  kb search rollback --fields citation,title,text
  kb search where is the retry delay computed --also 'lex: RETRY_TIMES'
       --also 'vec: how long to wait before retrying a failed request'
  kb search sync waves --files      # each file once, like rg -l
  kb search why is my sync stuck --expand   # + your chat model's phrasings

{QUERY_SYNTAX}

\b
Variants (--also, up to 4): more phrasings of the same request, fused
into one ranking; the query weighs most. Plain text searches both legs;
'lex: words' weighs mainly in the keyword leg, 'vec: words' mainly in the
meaning leg (each at half weight in the other). Each result's found_by
lists [phrasing, leg, rank] (phrasing 0 = the query).

Output: human on a terminal, JSON when piped (--format). JSON contract: `kb skill`."""


class QueryCommand(click.Command):
    """A command whose words are a query: an unknown option is most likely a query word
    that starts with "-", so the error says how to search for it."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        given = list(args)  # click consumes the list it parses
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            words, options = self._split(given)
            first = next((w for w in words if w.startswith("-")), exc.option_name)
            close = self._close_options(first)
            if close:
                raise UsageError(
                    f"{first} is not an option: did you mean {' or '.join(close)}?", ctx
                ) from None
            suggestion = shlex.join(["kb", ctx.info_name or "search", *options, "--", *words])
            raise UsageError(
                f"{first} is not an option. To search for a word that starts with '-',"
                f" put the query after '--': {suggestion}",
                ctx,
            ) from None

    def _close_options(self, given: str) -> list[str]:
        """Options spelled like `given` (a typo such as --topp), for "did you mean"."""
        import difflib

        if not given.startswith("--"):
            return []
        known = [o for p in self.params if isinstance(p, click.Option) for o in p.opts]
        known = [o for o in known if o.startswith("--")]
        return difflib.get_close_matches(given.split("=", 1)[0], known, n=2, cutoff=0.75)

    def _split(self, args: list[str]) -> tuple[list[str], list[str]]:
        """The query words, and the options with their values."""
        takes_value, known = set(), set()
        for param in self.params:
            if isinstance(param, click.Option):
                known.update([*param.opts, *param.secondary_opts])
                if not param.is_flag and not param.count:
                    takes_value.update(param.opts)
        words: list[str] = []
        options: list[str] = []
        expect_value = False
        for arg in args:
            if expect_value:
                options.append(arg)
                expect_value = False
            elif arg in takes_value:
                options.append(arg)
                expect_value = True
            elif arg in known or arg.split("=", 1)[0] in known:
                options.append(arg)
            elif arg != "--":
                words.append(arg)
        return words, options


@click.command(cls=QueryCommand, help=SEARCH_HELP, no_args_is_help=True)
@click.argument("query", nargs=-1, required=True)
@click.option(
    "--mode",
    type=click.Choice(["hybrid", "lexical", "vector"]),
    help="hybrid (default): both legs fused; lexical: exact words (BM25); vector: meaning.",
)
@click.option("--top", type=click.IntRange(min=1, max=1000), help="How many results (default 10).")
@click.option("--type", "types", multiple=True, help="Only these document types (pdf, code...).")
@click.option("--tag", "tags", multiple=True, help="Only documents with any of these tags.")
@click.option(
    "--path", "paths", multiple=True, help="Path glob: * stays in a folder, ** crosses them."
)
@click.option("--lang", "languages", multiple=True, help="Only this language (python, go...).")
@click.option("--after", "after", help="Only files modified on/after this date (YYYY-MM-DD).")
@click.option("--before", "before", help="Only files modified before this date (YYYY-MM-DD).")
@click.option(
    "--min-score",
    type=click.FloatRange(0, 1),
    help="Drop results scoring below this (with a reranker: below its score).",
)
@click.option(
    "--fusion",
    type=click.Choice(["convex", "rrf"]),
    help="hybrid: convex (default; min-max scores, equal weights) or rrf (reciprocal rank).",
)
@click.option(
    "--also",
    "variants",
    multiple=True,
    metavar="TEXT",
    help="Another phrasing of the request (repeatable, up to 4): 'lex: keywords',"
    " 'vec: a rephrasing', or plain text for both legs.",
)
@click.option(
    "--expand",
    is_flag=True,
    help="Ask your chat model (llm.model) for more phrasings, searched as --also ones"
    " (cached per query).",
)
@click.option(
    "--files", is_flag=True, help="Each file once, with its best chunk (like rg -l)."
)
@click.option(
    "--per-file",
    type=click.IntRange(min=0),
    help="At most N chunks of one file before other files' chunks (default 3; 0: no cap).",
)
@click.option(
    "--fields",
    help="JSON: only these result fields, comma-separated (citation,title,text...;"
    " source fields without 'source.').",
)
@click.option(
    "--compact",
    is_flag=True,
    help="JSON for agents: chunk_id, citation, heading, score, text per result.",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(min=1, max=1_000_000),
    help="Stop the answer before it passes N tokens (cl100k), between two results;"
    " next_cursor continues it.",
)
@click.option(
    "--cursor",
    metavar="CURSOR",
    help="Continue a search where its answer stopped: the next_cursor it returned"
    " (same query and options).",
)
@click.option(
    "--sync-stale",
    is_flag=True,
    help="Re-index the files of hits that changed or are gone since indexing, then search.",
)
@click.option(
    "--explain",
    "explain",
    metavar="PATH",
    help="Say where this file's chunks ranked in each leg and what cut them (or why it is"
    " not indexed).",
)
@click.option("--format", "fmt", type=FORMATS, help="json or human (default: by terminal).")
@common_options
def search(app: App, **params: Any) -> None:
    from kb_search.cli.search_request import SearchRequest
    from kb_search.search.fields import project

    startup = process_age_ms()
    request = SearchRequest.from_params(params)
    _warn_if_shell_expanded(params["query"], app)
    out = app.output_format("json" if request.fields and not request.fmt else request.fmt)
    client = warm_client(app.config, app.environment.env) if request.warm_can_answer else None
    answer = client.search(request, reply=out) if client is not None else None
    if isinstance(answer, dict):  # the JSON itself: this process needs no search code
        from kb_search.cli.warm.client import add_startup

        app.emit(add_startup(answer, startup), "json", str)
        return
    response = answer
    if response is None:
        try:
            response = _search_here(app, request)
        finally:
            if client is not None:
                client.start_if_wanted()  # after this search: its start-up would slow this one
    # the process's own start (interpreter, imports, opening the DB) is part of the answer's cost
    response.timings_ms["startup"] = startup
    response.timings_ms["total"] += startup

    def human() -> str:
        from kb_search.cli.render import search_human

        if request.files:
            return "\n".join(r.citation for r in response.results)
        return search_human(response, app.terminal)

    app.emit(project(response, request.fields), out, human, page=True)


def forwarded_request(argv: list[str]) -> SearchRequest | None:
    """The request a piped `kb search ARGV` (stdout not a terminal) makes of the warm server,
    parsed and checked by this command's own options; None when the command must run in full:
    a usage error or help (the full CLI says it), or human output. --data-dir/--db/--config
    were the client's to find this server (the request's identity proves the match)."""
    from kb_search.cli.search_request import SearchRequest

    if {"-h", "--help"} & set(argv):
        return None
    try:
        request = SearchRequest.from_params(search.make_context("search", list(argv)).params)
    except (click.ClickException, click.exceptions.Exit):
        return None
    if (request.fmt or "json") != "json" or not request.warm_can_answer:
        return None  # these run in full
    return request


def _search_here(app: App, request: SearchRequest) -> SearchResponse:
    """The search in this process (no warm server answered, or one it cannot run)."""
    kb = app.kb()
    options = kb.search_options(**request.search_values())
    response = kb.search(request.query, options, explain=request.explain, expand=request.expand)
    if request.sync_stale and _synced_stale(kb, response):
        # the answer the index gives once it is up to date
        response = kb.search(request.query, options, explain=request.explain)
    return response


def _warn_if_shell_expanded(query: tuple[str, ...], app: App) -> None:
    expanded = shell_expanded(query, app.environment.cwd)
    if expanded:
        warn(
            f"{', '.join(expanded)} {'is a file' if len(expanded) == 1 else 'are files'} here:"
            " did the shell expand a * or ? in the query? Put it in single quotes:"
            " kb search 'notes on pg*'"
        )


def _synced_stale(kb: KnowledgeBase, response: SearchResponse) -> bool:
    """Re-index the files of hits that changed or are gone (only those); whether there were
    some."""
    stale = list(
        dict.fromkeys(r.source.path for r in response.results if r.freshness not in (None, "fresh"))
    )
    if stale:
        kb.sync([Path(p) for p in stale])
        warn(f"re-indexed {len(stale)} changed or gone file(s) before answering")
    return bool(stale)


@click.command()
@click.argument("ref")
@click.option("--chunk", "is_chunk", is_flag=True, help="REF is a chunk id: similar chunks.")
@click.option("--top", type=click.IntRange(min=1, max=200), default=10, show_default=True)
@click.option(
    "--compact", is_flag=True, help="JSON with only chunk_id, citation, heading, score, text."
)
@click.option("--format", "fmt", type=FORMATS)
@common_options
def similar(
    app: App, ref: str, is_chunk: bool, top: int, compact: bool, fmt: str | None
) -> None:
    """Nearest documents to a document (id or path), or chunks to a chunk (--chunk).

    \b
    Examples:
      kb similar docs/git-admin.md
      kb similar 42 --chunk --top 5 --compact
    """
    from kb_search.search.fields import COMPACT, project

    response = app.kb().similar(ref, chunk=is_chunk, top=top)
    data = project(response, COMPACT if compact else None)

    def human() -> str:
        from kb_search.cli.render import search_human

        return search_human(response, app.terminal)

    app.emit(data, fmt, human, page=True)


COMMANDS = [search, similar]


def shell_expanded(words: tuple[str, ...], cwd: Path) -> list[str]:
    """Query words that are names of files in `cwd`, when they look like a shell's expansion
    of an unquoted * or ?: a name with a dot or a slash, or two such names in a row."""
    if len(words) < 2:
        return []
    # a stat per word, not a listing of the folder (a home directory can hold thousands)
    hits = [w for w in words if w.strip() and os.path.lexists(cwd / w)]
    looks_expanded = len(hits) >= 2 or any("." in w.strip(".") or "/" in w for w in hits)
    return hits if looks_expanded else []
