"""Human-readable output for the terminal (JSON output is each object's to_dict())."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from typing import Any

from kb_search.search.results import HL_CLOSE as _HL_CLOSE
from kb_search.search.results import HL_OPEN as _HL_OPEN
from kb_search.search.results import SearchResponse


def _highlight(snippet: str, color: bool) -> str:
    if color:
        return snippet.replace(_HL_OPEN, "\x1b[1m").replace(_HL_CLOSE, "\x1b[0m")
    return snippet.replace(_HL_OPEN, "").replace(_HL_CLOSE, "")


def _where(source: Any) -> str:
    if source.page is not None:
        if source.page_end and source.page_end != source.page:
            return f" (pp.{source.page}-{source.page_end})"
        return f" (p.{source.page})"
    if source.lines:
        return f" (L{source.lines[0]}-{source.lines[1]})"
    return ""


def search_human(response: SearchResponse, color: bool = False) -> str:
    shown = len(response.results)
    lines = [
        f'Search: "{response.query}" ({response.total_matches} matches, showing top {shown})',
    ]
    bad_legs = [
        f"{leg}: {state}" for leg, state in response.legs.items() if state not in ("ok", "empty")
    ]
    if bad_legs:
        lines.append("Note: " + "; ".join(bad_legs))
    lines += [f"Note: {note}" for note in response.notes]
    for i, result in enumerate(response.results, start=1):
        s = result.source
        tags = f" [{', '.join(s.tags)}]" if s.tags else ""
        where = " > ".join(x for x in (s.heading, s.symbol) if x)
        lines.append("")
        lines.append(f"{i}. [{result.score:.2f}] {s.title}{_where(s)} [{s.type}]{tags}")
        if where:
            lines.append(f"   {where}")
        body = " ".join(_highlight(result.snippet, color).split())
        lines.extend(textwrap.wrap(body, width=96, initial_indent="   ", subsequent_indent="   "))
        lines.append(f"   {result.citation}  (chunk {result.chunk_id})")
    if not response.results:
        lines.append("")
        lines.append("No results.")
    return "\n".join(lines)


def document_human(doc: Any) -> str:
    tags = f"  tags: {', '.join(doc.tags)}" if doc.tags else ""
    lines = [
        f"[{doc.document_id}] {doc.title}",
        f"  {doc.path}",
        f"  type: {doc.type}  language: {doc.language or '-'}  chunks: {doc.chunk_count}{tags}",
    ]
    for chunk in doc.chunks or []:
        lines.append("")
        lines.append(chunk_header(chunk))
        lines.append(textwrap.indent(chunk.text, "    "))
    return "\n".join(lines)


def chunk_header(chunk: Any) -> str:
    label = " > ".join(x for x in (chunk.heading, chunk.symbol) if x)
    return f"--- chunk {chunk.chunk_id} (#{chunk.chunk_index}) {chunk.citation}" + (
        f"  {label}" if label else ""
    )


def table(rows: Iterable[Iterable[Any]], headers: list[str]) -> str:
    rows = [[("" if v is None else str(v)) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(v)) for w, v in zip(widths, row)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*headers), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*row) for row in rows]
    return "\n".join(out)


def beir_report_human(report: dict[str, Any]) -> str:
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
    how = "reused" if report["reused"] else f"built in {report['index_seconds']:.1f} s"
    head = (
        f"Dataset {report['dataset']}: {report['documents']} documents,"
        f" {report['chunks']} chunks (index {how})"
    )
    cols = ["mode", "nDCG@10", "Recall@100", "MRR@10", "p50 ms", "p95 ms", "queries"]
    return head + "\n" + table(rows, cols)


def questions_report_human(report: dict[str, Any], misses: int = 5) -> str:
    rows = []
    for s in report["scores"]:
        f, c = s.file, s.chunk
        chunk = [f"{c[k]:.3f}" for k in ("hit@5", "mrr@10", "ndcg@10")] if c else ["-"] * 3
        rows.append(
            (
                s.mode,
                *(f"{f[k]:.3f}" for k in ("hit@1", "hit@5", "hit@10", "mrr@10", "ndcg@10")),
                *chunk,
                f"{s.p50_ms:.0f}/{s.p95_ms:.0f}",
            )
        )
    cols = ["mode", "hit@1", "hit@5", "hit@10", "MRR@10", "nDCG@10",
            "chunk hit@5", "chunk MRR", "chunk nDCG", "p50/p95 ms"]  # fmt: skip
    chunked = report["scores"][0].chunk_questions if report["scores"] else 0
    lines = [
        f"Questions {report['questions_file']}: {report['questions']} questions"
        f" ({chunked} with located answers) over {report['documents']} documents,"
        f" {report['chunks']} chunks",
        "File level, then chunk level:",
        table(rows, cols),
    ]
    for s in report["scores"]:
        if not s.misses or not misses:
            continue
        lines.append(f"\n{s.mode}: {len(s.misses)} questions with no relevant file in the top 10")
        for miss in s.misses[:misses]:
            note = (
                f" (not indexed: {', '.join(miss['not_indexed'])})" if miss["not_indexed"] else ""
            )
            lines.append(f"  [{miss['id']}] {miss['question']}{note}")
            lines.extend(f"      {i}. {c}" for i, c in enumerate(miss["top"], start=1))
    return "\n".join(lines)
