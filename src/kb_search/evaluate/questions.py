"""`kb eval QUESTIONS.jsonl`: retrieval quality on your own questions over the indexed KB.

One JSON object per line: `{"id": "q1", "question": "how do I ...", "relevant":
["docs/guide.md#L10-L24", "notes/x.pdf#page=3", "src/app.py"]}`, optionally `"grade": [2, 1,
1]` (graded relevance, parallel to `relevant`; 1 by default) and `"variants": ["lex: ...",
"vec: ..."]` (the phrasings an agent would add; when questions have them, the hybrid mode is
also scored with them, as `hybrid+variants`, beside the question alone). A relevant path names
an indexed file by its path relative to the folder it was added from (or any trailing part of
its absolute path); a location narrows it to lines or a page for chunk-level scoring.

Scored per mode at file level (the file of each result, best rank first) and at chunk level (a
result counts when it overlaps a located target): hit@1/5/10, MRR@10, nDCG@10; latency
p50/p95; and the questions each mode missed, with what came first instead.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb_search.errors import EvalError
from kb_search.evaluate.metrics import percentile
from kb_search.search.results import Result, SearchResponse
from kb_search.store.db import Connection
from kb_search.store.inventory import counts, document_locations
from kb_search.store.vectors import db_model

_LOCATION = re.compile(r"^(?P<path>.*?)(?:#(?:L(?P<a>\d+)(?:-L?(?P<b>\d+))?|page=(?P<p>\d+)))?$")


@dataclass(frozen=True)
class Target:
    path: str  # as written: relative to an added folder's parent, or a path tail
    lines: tuple[int, int] | None = None
    page: int | None = None
    grade: int = 1

    @property
    def located(self) -> bool:
        return self.lines is not None or self.page is not None

    @classmethod
    def parse(cls, text: str, grade: int = 1) -> Target:
        match = _LOCATION.match(text.strip())
        if not match or not match.group("path"):
            raise ValueError(f"not a path: {text!r}")
        lines = None
        if match.group("a"):
            start = int(match.group("a"))
            lines = (start, int(match.group("b") or start))
        page = int(match.group("p")) if match.group("p") else None
        return cls(match.group("path").strip("/"), lines, page, grade)


@dataclass
class Question:
    id: str
    text: str
    targets: list[Target]
    kind: str | None = None
    variants: tuple[str, ...] = ()


def load_questions(path: Path) -> list[Question]:
    questions: list[Question] = []
    seen: set[str] = set()
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                text = item.get("question") or item.get("query")
                relevant = item["relevant"]
                if isinstance(relevant, str):
                    relevant = [relevant]
                grades = item.get("grade") or [1] * len(relevant)
                targets = [Target.parse(r, int(g)) for r, g in zip(relevant, grades)]
                variants = item.get("variants") or []
                if not isinstance(variants, list) or not all(isinstance(v, str) for v in variants):
                    raise ValueError("variants must be a list of strings")
            except (ValueError, KeyError, TypeError) as exc:
                raise EvalError(f"{path}:{number}: not a question line ({exc})") from exc
            if not text or not targets:
                raise EvalError(f"{path}:{number}: needs a question and relevant paths")
            qid = str(item.get("id") or number)
            if qid in seen:
                raise EvalError(f"{path}:{number}: duplicate id {qid!r}")
            seen.add(qid)
            questions.append(Question(qid, text, targets, item.get("kind"), tuple(variants)))
    if not questions:
        raise EvalError(f"{path}: no questions")
    return questions


# ---- matching results to targets -----------------------------------------------------------


def _tail_matches(target: str, rel_path: str, abs_path: str) -> bool:
    if rel_path == target or rel_path.endswith("/" + target):
        return True
    return abs_path.endswith("/" + target)


def _overlaps(target: Target, result: Result) -> bool:
    source = result.source
    if target.page is not None and source.page is not None:
        return source.page <= target.page <= (source.page_end or source.page)
    if target.lines is not None and source.lines:
        return source.lines[0] <= target.lines[1] and target.lines[0] <= source.lines[1]
    return False


@dataclass
class Indexed:
    """Which indexed documents each target path names (to report targets not in the index)."""

    documents: dict[str, set[int]]

    @classmethod
    def load(cls, conn: Connection, questions: list[Question]) -> Indexed:
        rows = document_locations(conn)
        found: dict[str, set[int]] = {}
        for question in questions:
            for target in question.targets:
                if target.path not in found:
                    found[target.path] = {
                        doc_id
                        for doc_id, rel, path in rows
                        if _tail_matches(target.path, rel, path)
                    }
        return cls(found)


def score_question(
    question: Question, results: list[Result], indexed: Indexed
) -> tuple[dict[str, float], dict[str, float] | None, dict[str, Any]]:
    """File-level metrics, chunk-level metrics (None when no target is located), details
    (with `page`: the metrics over the targets located by a PDF page, None when none is)."""
    file_grade: dict[int, int] = {}
    for target in question.targets:
        for doc_id in indexed.documents.get(target.path, ()):
            file_grade[doc_id] = max(file_grade.get(doc_id, 0), target.grade)
    files: list[int] = list(dict.fromkeys(r.source.document_id for r in results))
    file_gains = [file_grade.get(doc_id, 0) for doc_id in files]
    file_scores = gain_metrics(file_gains, list(file_grade.values()))
    located = [t for t in question.targets if t.located]
    chunk_scores = _located_scores(located, results, indexed) if located else None
    paged = [t for t in question.targets if t.page is not None]
    first = next((i for i, g in enumerate(file_gains) if g > 0), None)
    details = {
        "id": question.id,
        "question": question.text,
        "file_rank": None if first is None else first + 1,
        "not_indexed": [t.path for t in question.targets if not indexed.documents.get(t.path)],
        "top": [r.citation for r in results[:3]],
        "page": _located_scores(paged, results, indexed) if paged else None,
    }
    return file_scores, chunk_scores, details


def _located_scores(
    located: list[Target], results: list[Result], indexed: Indexed
) -> dict[str, float]:
    """Metrics of the ranking where a result counts when it overlaps a located target."""
    credited: set[Target] = set()
    gains = []
    for result in results:
        hit = [
            t
            for t in located
            if t not in credited
            and result.source.document_id in indexed.documents.get(t.path, ())
            and _overlaps(t, result)
        ]
        credited.update(hit)  # a target counts once, however many chunks it spans
        gains.append(max((t.grade for t in hit), default=0))
    return gain_metrics(gains, [t.grade for t in located])


def gain_metrics(gains: list[int], ideal: list[int]) -> dict[str, float]:
    """hit@1/5/10, MRR@10 and nDCG@10 of a ranking given as the gain at each rank, against
    the gains an ideal ranking would have (linear gains, as trec_eval)."""
    first = next((i for i, g in enumerate(gains[:10]) if g > 0), None)
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains[:10]) if g > 0)
    best = sorted((g for g in ideal if g > 0), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(best))
    return {
        "hit@1": float(first is not None and first < 1),
        "hit@5": float(first is not None and first < 5),
        "hit@10": float(first is not None),
        "mrr@10": 0.0 if first is None else 1.0 / (first + 1),
        "ndcg@10": dcg / idcg if idcg else 0.0,
    }


# ---- a run ---------------------------------------------------------------------------------


@dataclass
class QuestionScores:
    mode: str
    questions: int
    file: dict[str, float]
    chunk: dict[str, float]
    chunk_questions: int
    p50_ms: float
    p95_ms: float
    misses: list[dict[str, Any]] = field(default_factory=list)  # file not in the top 10
    legs: dict[str, int] = field(default_factory=dict)
    # answers per coverage grade, and how often each grade's first file is relevant (hit@1)
    # or a relevant file is in the top 5 (hit@5): is `weak` a miss, `strong` a hit?
    coverage: dict[str, dict[str, float]] = field(default_factory=dict)
    # over the questions whose answer is located by a PDF page: a result counts on that page
    page: dict[str, float] = field(default_factory=dict)
    page_questions: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "questions": self.questions,
            "file": {k: round(v, 4) for k, v in self.file.items()},
            "chunk": {k: round(v, 4) for k, v in self.chunk.items()},
            "chunk_questions": self.chunk_questions,
            "p50_ms": round(self.p50_ms, 2),
            "p95_ms": round(self.p95_ms, 2),
            "misses": self.misses,
            "legs": self.legs,
            "coverage": {
                grade: {k: round(v, 4) for k, v in row.items()}
                for grade, row in self.coverage.items()
            },
            "page": {k: round(v, 4) for k, v in self.page.items()},
            "page_questions": self.page_questions,
        }


WITH_VARIANTS = "+variants"  # a mode scored with each question's variants
WITH_EXPANSION = "+expand"  # a mode scored with the chat model's phrasings (`--expand`)
# ... and with them plain: each variant's `lex:`/`vec:` prefix taken off, so it searches both
WITH_PLAIN_VARIANTS = "+plain-variants"


def scored_modes(questions: list[Question], modes: list[str], expand: bool = False) -> list[str]:
    """The modes asked for, and hybrid with variants (as written, and plain) beside hybrid when
    questions have them; with `expand` (a chat model is configured), hybrid with its phrasings
    too."""
    scored = list(modes)
    if "hybrid" in modes and any(q.variants for q in questions):
        scored += ["hybrid" + WITH_VARIANTS, "hybrid" + WITH_PLAIN_VARIANTS]
    if "hybrid" in modes and expand:
        scored.append("hybrid" + WITH_EXPANSION)
    return scored


def plain_variant(text: str) -> str:
    """A variant without its `lex:`/`vec:` prefix (it then searches both legs)."""
    head, sep, rest = text.partition(":")
    if sep and head.strip().lower() in ("lex", "vec") and rest.strip():
        return rest.strip()
    return text


def coverage_rows(graded: list[tuple[str, float, float]]) -> dict[str, dict[str, float]]:
    """(grade, hit@1, hit@5) per answer -> per grade: answers, hit@1 and hit@5 rates."""
    rows: dict[str, dict[str, float]] = {}
    for grade in ("strong", "partial", "weak"):
        picked = [g for g in graded if g[0] == grade]
        if picked:
            rows[grade] = {
                "answers": len(picked),
                "hit@1": sum(g[1] for g in picked) / len(picked),
                "hit@5": sum(g[2] for g in picked) / len(picked),
            }
    return rows


def evaluate_questions(
    conn: Connection,
    questions: list[Question],
    modes: list[str],
    run: Callable[..., SearchResponse],
) -> list[QuestionScores]:
    """`run(question, mode, variants)` searches the KB (at least DEPTH results); each mode
    ending in WITH_VARIANTS runs its base mode with the question's variants, each ending in
    WITH_EXPANSION with the chat model's phrasings (`run(..., expand=True)`)."""
    indexed = Indexed.load(conn, questions)
    out = []
    for mode in modes:
        tally = _Tally()
        for question in questions:
            t0 = time.perf_counter()
            response = _search_as(mode, question, run)
            tally.add(question, response, indexed, (time.perf_counter() - t0) * 1000)
        out.append(tally.scores(mode, len(questions)))
    return out


def _search_as(mode: str, question: Question, run: Callable[..., SearchResponse]) -> SearchResponse:
    """The question searched as `mode` asks: its base mode, with the question's variants (as
    typed or plain) or the chat model's phrasings."""
    expand = mode.endswith(WITH_EXPANSION)
    base = mode.removesuffix(WITH_VARIANTS).removesuffix(WITH_PLAIN_VARIANTS)
    base = base.removesuffix(WITH_EXPANSION)
    with_variants = mode.endswith((WITH_VARIANTS, WITH_PLAIN_VARIANTS))
    variants = question.variants if with_variants else ()
    if mode.endswith(WITH_PLAIN_VARIANTS):
        variants = tuple(plain_variant(v) for v in variants)
    if expand:
        return run(question.text, base, variants, expand=True)
    return run(question.text, base, variants)


@dataclass
class _Tally:
    """One mode's sums over its questions."""

    file: dict[str, float] = field(default_factory=dict)
    chunk: dict[str, float] = field(default_factory=dict)
    chunk_n: int = 0
    page: dict[str, float] = field(default_factory=dict)
    page_n: int = 0
    latencies: list[float] = field(default_factory=list)
    misses: list[dict[str, Any]] = field(default_factory=list)
    legs: dict[str, int] = field(default_factory=dict)
    graded: list[tuple[str, float, float]] = field(default_factory=list)

    def add(
        self, question: Question, response: SearchResponse, indexed: Indexed, ms: float
    ) -> None:
        self.latencies.append(ms)
        for leg, state in response.legs.items():
            self.legs[f"{leg}:{state}"] = self.legs.get(f"{leg}:{state}", 0) + 1
        file_scores, chunk_scores, details = score_question(question, response.results, indexed)
        _add_to(self.file, file_scores)
        if chunk_scores is not None:
            self.chunk_n += 1
            _add_to(self.chunk, chunk_scores)
        page = details.pop("page")
        if page is not None:
            self.page_n += 1
            _add_to(self.page, page)
        if file_scores["hit@10"] == 0.0:
            self.misses.append(details)
        grade = getattr(response, "coverage", None)
        if grade:
            self.graded.append((grade, file_scores["hit@1"], file_scores["hit@5"]))

    def scores(self, mode: str, n: int) -> QuestionScores:
        return QuestionScores(
            mode=mode,
            questions=n,
            file={k: v / n for k, v in self.file.items()},
            chunk={k: v / self.chunk_n for k, v in self.chunk.items()} if self.chunk_n else {},
            chunk_questions=self.chunk_n,
            p50_ms=percentile(self.latencies, 50),
            p95_ms=percentile(self.latencies, 95),
            misses=self.misses,
            legs=self.legs,
            coverage=coverage_rows(self.graded),
            page={k: v / self.page_n for k, v in self.page.items()} if self.page_n else {},
            page_questions=self.page_n,
        )


def _add_to(sums: dict[str, float], values: dict[str, float]) -> None:
    for key, value in values.items():
        sums[key] = sums.get(key, 0.0) + value


def questions_report(
    conn: Connection,
    path: Path,
    modes: list[str],
    run: Callable[..., SearchResponse],
    expand: bool = False,
) -> dict[str, Any]:
    """The questions file at `path` scored over the KB `conn` reads, `run` searching it (see
    `evaluate_questions`), with what the index held; `expand`: a hybrid+expand row too."""
    questions = load_questions(path)
    scores = evaluate_questions(conn, questions, scored_modes(questions, modes, expand), run)
    documents, chunks = counts(conn)
    return {
        "kind": "questions",
        "questions_file": str(path),
        "questions": len(questions),
        "documents": documents,
        "chunks": chunks,
        "model": db_model(conn),
        "scores": scores,
    }
