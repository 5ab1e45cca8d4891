"""Human-readable output for the terminal (JSON output is each object's to_dict()).

Rendered with Rich through a `Terminal`: lines fit its visible width (wide characters and
escape codes measured as they show), styles only where the terminal allows them, paths a
person can open (`path:line`, relative to the current directory), hyperlinks to the files.

Every string from outside (content, titles, headings, file names, tags, the query) passes
through `printable` here, as a Text (never markup): no control character or escape sequence
of theirs reaches the terminal. BLOCK keeps what a chunk's layout needs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.cells import cell_len
from rich.padding import Padding
from rich.style import Style
from rich.text import Text

from kb_search.cli.plain import snippet_text, strip_markdown, without_heading
from kb_search.cli.terminal import Terminal
from kb_search.sanitize import printable
from kb_search.search.results import HL_CLOSE, HL_OPEN, SearchResponse
from kb_search.text import plural

TITLE, SCORE, HEADING, MATCH, NOTE, DIM = "bold", "cyan", "magenta", "bold yellow", "yellow", "dim"
INDENT = 3
BLOCK = "\n\t"


def _highlighted(snippet: str) -> Text:
    """FTS5's match markers as bold spans."""
    text = Text()
    for i, part in enumerate(snippet.replace(HL_CLOSE, HL_OPEN).split(HL_OPEN)):
        text.append(printable(part), style=MATCH if i % 2 else "")
    return text


def _fit(text: Text, width: int) -> Text:
    text = text.copy()
    text.truncate(max(1, width), overflow="ellipsis")
    return text


def location(
    term: Terminal,
    path: str,
    lines: list[int] | None = None,
    page: int | None = None,
    page_end: int | None = None,
    cited: str | None = None,
) -> Text:
    """Where a chunk is, as a person opens it: `path:line`, `path p. 3`, linked to the file
    (at the page its citation `cited` opens, for a chunk that spans pages)."""
    shown = term.show_path(path)
    if page is not None:
        pages = f"pp. {page}-{page_end}" if page_end and page_end != page else f"p. {page}"
        fragment = f"#page={page}"
        if cited and cited.startswith(path + "#page="):
            fragment = cited[len(path) :]
        label = f"{shown} {pages}"
    elif lines:
        label, fragment = f"{shown}:{lines[0]}", ""
    else:
        label, fragment = shown, ""
    url = term.link(path, fragment)
    return Text(label, style=Style(link=url) if url else "")


def _title_line(number: int, title: str, score: float, width: int) -> Text:
    left = Text(f"{number}. ") + Text(printable(title), style=TITLE)
    right = Text(f"{score:.2f}", style=SCORE)
    room = width - cell_len(right.plain) - 1
    if cell_len(left.plain) > room:
        left = _fit(left, room)
    return left + Text(" " * (width - cell_len(left.plain) - cell_len(right.plain))) + right


def _heading(source: Any) -> str:
    """The heading chain without the title it repeats, and the symbol."""
    heading = source.heading or ""
    if heading.startswith(source.title + " > "):
        heading = heading[len(source.title) + 3 :]
    elif heading == source.title:
        heading = ""
    if source.type != "code":
        heading = strip_markdown(heading.replace("\n", " "))
    parts = (heading.replace(" > ", " › "), source.symbol)
    return printable(" › ".join(x for x in parts if x))


def _location_line(
    term: Terminal, source: Any, chunk_id: int, width: int, citation: str | None = None
) -> Padding:
    """`path:line · type · tags · chunk N`. The openable part is never cut: what does not fit
    beside it is left out, and a path longer than the line wraps, indented as the line is."""
    line = location(term, source.path, source.lines, source.page, source.page_end, citation)
    for extra in (printable(source.type), printable(", ".join(source.tags)), f"chunk {chunk_id}"):
        if extra and INDENT + cell_len(line.plain) + cell_len(extra) + 3 <= width:
            line += Text(f" · {extra}", DIM)
    return _indented(line)


def _also_at_line(term: Terminal, copies: list[Any]) -> Padding:
    """`also at: guide.html:120, guide.txt:88`: the same text in other documents, openable;
    a path that wraps stays under the result, not at the margin."""
    line = Text("also at: ", DIM)
    for number, copy in enumerate(copies):
        if number:
            line += Text(", ", DIM)
        line += location(term, copy.path, copy.lines, copy.page, None, copy.citation)
    return _indented(line)


def _indented(line: Text) -> Padding:
    return Padding(line, (0, 0, 0, INDENT), expand=False)


def search_human(response: SearchResponse, term: Terminal) -> str:
    shown, total = len(response.results), response.total_matches
    if shown and total >= shown:
        counts = f"top {shown} of {plural(total, 'matching chunk')}"
    else:
        counts = f"{plural(shown, 'result')} ({total} with its words)"
    mode = response.mode
    if any("rerank" in r.score_breakdown for r in response.results):
        mode += ", reranked"  # the scores are the reranker's, not the fused ones
    parts: list[Any] = [Text(f'Search "{printable(response.query)}" ({mode}): {counts}')]
    bad_legs = [
        f"{leg}: {state}" for leg, state in response.legs.items() if state not in ("ok", "empty")
    ]
    if bad_legs:
        parts.append(Text("Note: " + "; ".join(bad_legs), style=NOTE))
    parts += [Text(f"Note: {printable(note)}", style=NOTE) for note in response.notes]
    parts += phrasing_lines(response.variants)
    width = term.width
    for i, result in enumerate(response.results, start=1):
        s = result.source
        parts.append(Text(""))
        parts.append(_title_line(i, s.title, result.score, width))
        if result.freshness in STALE_WORDS:
            parts.append(Text(" " * INDENT + STALE_WORDS[result.freshness], style=NOTE))
        heading = _heading(s)
        if heading:
            parts.append(_fit(Text(" " * INDENT) + Text(heading, style=HEADING), width))
        text = snippet_text(result.snippet, s.type, result.text)
        if heading and s.type != "code":  # code starts with its signature, not a repeat
            text = without_heading(text, heading)
        snippet = _highlighted(text)
        parts.append(Padding(snippet, (0, 0, 0, INDENT), expand=False))
        parts.append(_location_line(term, s, result.chunk_id, width, result.citation))
        if result.also_at:
            parts.append(_also_at_line(term, result.also_at))
        if response.variants:
            parts.append(Text(" " * INDENT + found_by_line(result.found_by), style=DIM))
    if not response.results:
        parts += [
            Text(""),
            Text("No results. Try other words, --mode vector, or fewer filters."),
        ]
    if response.next_cursor:
        parts += [Text(""), Text(f"More: --cursor {response.next_cursor}", style=DIM)]
    if response.explanation is not None:
        parts += [Text("")] + explanation_lines(response.explanation, term)
    return term.render(*parts)


def phrasing_lines(variants: list[dict[str, Any]]) -> list[Text]:
    """The phrasings searched beside the query, numbered as `found_by` numbers them."""
    lines = []
    for number, variant in enumerate(variants, start=1):
        legs = {"lexical": "keywords", "vector": "meaning"}.get(variant["use"], "both")
        who = ", by your chat model" if variant.get("from") == "model" else ""
        text = printable(variant["text"])
        ignored = f" (took no part: {variant['ignored']})" if variant.get("ignored") else ""
        lines.append(Text(f"Also searched [{number}] ({legs}{who}): {text}{ignored}", style=NOTE))
    return lines


def found_by_line(found_by: list[list[Any]]) -> str:
    """Which phrasing (q: the query, [n]: variant n) found a result, in which leg, at what rank."""
    legs = {"lexical": "kw", "vector": "meaning"}
    places = [
        f"{'q' if phrasing == 0 else f'[{phrasing}]'} {legs.get(leg, leg)} #{rank}"
        for phrasing, leg, rank in found_by
    ]
    return "found by: " + ", ".join(places)


STALE_WORDS = {
    "gone": "[gone] this file is no longer where it was indexed: `kb sync` updates the index",
    "changed": "[changed] this file changed since it was indexed: `kb sync` re-reads it",
}


def explanation_lines(explanation: Any, term: Terminal) -> list[Text]:
    """`--explain PATH`: the verdict, then each of the file's best chunks at every stage."""
    verdict = f"{explanation.status}: {printable(explanation.reason)}"
    lines = [Text(f"Explain {term.show_path(explanation.path)}: {verdict}", style=NOTE)]
    for item in explanation.chunks:
        places = [
            f"{name} #{place.rank} ({place.score:.3f})" if place else f"{name} -"
            for name, place in (("lexical", item.lexical), ("vector", item.vector),
                                ("fused", item.fused))
        ]  # fmt: skip
        fragment = item.citation.removeprefix(explanation.path)
        where = term.show_path(explanation.path) + printable(fragment)
        lines.append(Text(f"  chunk {item.chunk_id} {where}: " + ", ".join(places)))
        if item.returned:
            lines.append(Text(f"    returned at rank {item.returned}", style=DIM))
        lines += [Text(f"    cut: {printable(reason)}", style=DIM) for reason in item.cut]
    return lines


def document_human(doc: Any, term: Terminal) -> str:
    meta = [doc.type, doc.language or "", plural(doc.chunk_count, "chunk")]
    if doc.page_count:
        meta.append(plural(doc.page_count, "page"))
    if doc.tags:
        meta.append("tags: " + ", ".join(doc.tags))
    parts: list[Any] = [
        Text(f"[{doc.document_id}] ") + Text(printable(doc.title), style=TITLE),
        Text("  ") + location(term, doc.path),
        Text("  " + printable(" · ".join(m for m in meta if m)), style=DIM),
    ]
    for chunk in doc.chunks or []:
        parts.append(Text(""))
        parts.append(chunk_header(chunk, doc.path, term))
        parts.append(Padding(Text(printable(chunk.text, BLOCK)), (0, 0, 0, 4), expand=False))
    return term.render(*parts)


def chunk_header(chunk: Any, path: str, term: Terminal) -> Text:
    label = printable(" › ".join(x for x in (chunk.heading, chunk.symbol) if x))
    head = Text(f"── chunk {chunk.chunk_id} (#{chunk.chunk_index}) ", style=DIM)
    head += location(term, path, chunk.lines, chunk.page, chunk.page_end, chunk.citation)
    if label:
        head += Text(f"  {label}", style=HEADING)
    return _fit(head, term.width)


def chunks_human(chunks: list[Any], path: str, term: Terminal) -> str:
    parts: list[Any] = []
    for chunk in chunks:
        if parts:
            parts.append(Text(""))
        parts += [chunk_header(chunk, path, term), Text(printable(chunk.text, BLOCK))]
    return term.render(*parts)


class Verbatim(Text):
    """Text printed with its own line breaks only (Terminal.render does not fold it)."""

    verbatim = True


def reading_human(reading: Any, term: Terminal) -> str:
    """`kb get`: each passage under its citation (the path as this directory opens it) and
    where it was read from; what the byte budget cut, last."""
    parts: list[Any] = []
    for passage in reading.passages:
        fragment = printable(passage.citation[len(passage.path) :])
        head = Text(f"== {term.show_path(passage.path)}{fragment} ", style=TITLE)
        parts.append(head + Text(f"(from: {passage.from_})", style=DIM))
        if passage.note:
            parts.append(Text(f"Note: {passage.note}", style=NOTE))
        # the lines as the file has them, never re-wrapped to the terminal's width
        parts += [Verbatim(printable(passage.text, keep="\n\t")), Text("")]
    if reading.omitted:
        omitted = printable(", ".join(reading.omitted))
        parts.append(Text(f"Omitted by --max-bytes: {omitted}", style=NOTE))
    return term.render(*parts)


def table(rows: Iterable[Iterable[Any]], headers: list[str], empty: str = "none") -> str:
    """A plain-text table (columns sized by visible width); `empty` when there are no rows."""
    rows = [[("" if v is None else printable(v)) for v in row] for row in rows]
    if not rows:
        return empty
    widths = [cell_len(h) for h in headers]
    for row in rows:
        widths = [max(w, cell_len(v)) for w, v in zip(widths, row)]

    def line(cells: Iterable[str]) -> str:
        return "  ".join(c + " " * (w - cell_len(c)) for c, w in zip(cells, widths)).rstrip()

    out = [line(headers), line("-" * w for w in widths)]
    out += [line(row) for row in rows]
    return "\n".join(out)


def beir_report_human(report: dict[str, Any]) -> str:
    rows = [
        (
            s.mode,
            f"{s.ndcg_at_10:.4f}",
            f"{s.recall_at_100:.4f}",
            f"{s.mrr_at_10:.4f}",
            f"{s.hit_at_1:.3f}",
            f"{s.hit_at_5:.3f}",
            f"{s.p50_ms:.1f}",
            f"{s.p95_ms:.1f}",
            s.queries,
        )
        for s in report["scores"]
    ]
    how = "reused" if report["reused"] else f"built in {report['index_seconds']:.1f} s"
    head = (
        f"Dataset {printable(report['dataset'])}: {report['documents']} documents,"
        f" {report['chunks']} chunks (index {how})"
    )
    cols = ["mode", "nDCG@10", "Recall@100", "MRR@10", "hit@1", "hit@5", "p50 ms", "p95 ms",
            "queries"]  # fmt: skip
    return head + _reranked(report) + "\n" + table(rows, cols)


def _reranked(report: dict[str, Any]) -> str:
    name = report.get("reranker") or "none"
    if name == "none":
        return ""
    return f"; reranked by {printable(name)} (top {report['rerank_depth']})"


def questions_report_human(report: dict[str, Any], misses: int = 5) -> str:
    rows = []
    # a page column when the set locates answers by PDF page
    has_pages = any(s.page for s in report["scores"])
    for s in report["scores"]:
        f, c = s.file, s.chunk
        chunk = [f"{c[k]:.3f}" for k in ("hit@5", "mrr@10", "ndcg@10")] if c else ["-"] * 3
        paged = s.page
        rows.append(
            (
                s.mode,
                *(f"{f[k]:.3f}" for k in ("hit@1", "hit@5", "hit@10", "mrr@10", "ndcg@10")),
                *chunk,
                *([f"{paged['hit@5']:.3f}"] if has_pages else []),
                f"{s.p50_ms:.0f}/{s.p95_ms:.0f}",
            )
        )
    cols = ["mode", "hit@1", "hit@5", "hit@10", "MRR@10", "nDCG@10",
            "chunk hit@5", "chunk MRR", "chunk nDCG",
            *(["page hit@5"] if has_pages else []), "p50/p95 ms"]  # fmt: skip
    chunked = report["scores"][0].chunk_questions if report["scores"] else 0
    lines = [
        f"Questions {printable(report['questions_file'])}: {report['questions']} questions"
        f" ({chunked} with located answers) over {report['documents']} documents,"
        f" {report['chunks']} chunks{_reranked(report)}",
        "File level, then chunk level:",
        table(rows, cols),
    ]
    for s in report["scores"]:
        if s.coverage:
            grades = [
                f"{grade} {row['answers']:.0f} (hit@1 {row['hit@1']:.3f}, hit@5 {row['hit@5']:.3f})"
                for grade, row in s.coverage.items()
            ]
            lines.append(f"Coverage, {s.mode}: " + "; ".join(grades))
    for s in report["scores"]:
        if not s.misses or not misses:
            continue
        lines.append(f"\n{s.mode}: {len(s.misses)} questions with no relevant file in the top 10")
        for miss in s.misses[:misses]:
            note = (
                f" (not indexed: {', '.join(miss['not_indexed'])})" if miss["not_indexed"] else ""
            )
            lines.append(printable(f"  [{miss['id']}] {miss['question']}{note}"))
            lines.extend(printable(f"      {i}. {c}") for i, c in enumerate(miss["top"], start=1))
    return "\n".join(lines)
