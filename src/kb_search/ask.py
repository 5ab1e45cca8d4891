"""`kb ask QUESTION`: an answer from the retrieved passages, with citations, or a refusal.

    search (as `kb search`: filters, phrasings, --expand) -> gate (is anything close enough?)
    -> prompt (only the passages, numbered, each with its citation; "cite every claim")
    -> the chat model's answer, streamed -> citations checked against the passages given

The gate refuses when nothing matched, or no passage is close to the question in meaning (the
vector leg's cosine under `ask.min_similarity`); the refusal says what was searched and how
close the best passage came. Keyword scores cannot gate: BM25 squashed to [0, 1] is 0.87-0.93
for questions about bread or cricket over Argo CD's docs, as for real ones (common words
match); cosine separates them (MiniLM: real questions >= 0.37, off-topic ones <= 0.27).

A citation of a passage the model was not given is dropped and its claim marked uncited; only
the passages given can be cited, so every citation in an answer opens with `kb get`. A model
that stops mid-answer leaves what it said, marked incomplete, with the reason.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kb_search.errors import EndpointError

if TYPE_CHECKING:
    from kb_search.models.chat import ChatModel
    from kb_search.search.results import Result, SearchResponse

MAX_PASSAGE_CHARS = 2000
SYSTEM = """You answer a question using only the numbered passages from the user's own \
documents that follow it. After every claim, cite the passage or passages it comes from by \
number in square brackets, like [2] or [1][3]. Never cite a number that is not listed. If \
the passages do not answer the question, say so in one sentence. Be brief and exact."""
_MARKER = re.compile(r"\[(\d{1,3}(?:\s*[,;]\s*\d{1,3})*)\]")
_CLAIM_END = re.compile(r"(?<=[.!?])\s+(?!\[)|\n+")


@dataclass
class Passage:
    number: int
    citation: str
    chunk_id: int
    title: str
    heading: str | None
    text: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "citation": self.citation,
            "chunk_id": self.chunk_id,
            "title": self.title,
            "heading": self.heading,
            "score": round(self.score, 6),
        }


@dataclass
class Claim:
    text: str
    citations: list[int]  # passage numbers, all among those given
    dropped: list[int] = field(default_factory=list)  # numbers cited that were not given

    @property
    def uncited(self) -> bool:
        return not self.citations

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "citations": self.citations,
            "dropped": self.dropped,
            "uncited": self.uncited,
        }


@dataclass
class Answer:
    question: str
    answer: str
    refused: bool
    passages: list[Passage]
    claims: list[Claim] = field(default_factory=list)
    reason: str | None = None  # why it refused
    complete: bool = True  # False: the model stopped mid-answer (`error` says why)
    error: str | None = None
    model: str | None = None
    searched: dict[str, Any] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def citations(self) -> list[Passage]:
        """The passages the answer cites, in the order first cited."""
        by_number = {p.number: p for p in self.passages}
        numbers = dict.fromkeys(n for c in self.claims for n in c.citations)
        return [by_number[n] for n in numbers]

    @property
    def dropped(self) -> list[int]:
        return list(dict.fromkeys(n for c in self.claims for n in c.dropped))

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.answer,
            "refused": self.refused,
            "reason": self.reason,
            "complete": self.complete,
            "error": self.error,
            "model": self.model,
            "citations": [p.to_dict() for p in self.citations],
            "claims": [c.to_dict() for c in self.claims],
            "dropped_citations": self.dropped,
            "passages": [p.to_dict() for p in self.passages],
            "searched": self.searched,
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
        }


def passages_of(results: list[Result]) -> list[Passage]:
    return [
        Passage(
            number,
            r.citation,
            r.chunk_id,
            r.source.title,
            r.source.heading,
            r.text[:MAX_PASSAGE_CHARS],
            r.score,
        )
        for number, r in enumerate(results, start=1)
    ]


def refusal(response: SearchResponse, min_similarity: float) -> str | None:
    """Why the evidence is too weak to answer from (None: it is not)."""
    searched = f'searched for "{response.query}" ({_what_searched(response)})'
    if not response.results:
        return f"the knowledge base has nothing on this: {searched}, and nothing matched"
    vector = [r.score_breakdown.get("vector") for r in response.results]
    best_vector = max((v for v in vector if v is not None), default=None)
    if best_vector is None:  # no vector leg (a keyword-only DB, --mode lexical): words matched
        return None
    if best_vector >= min_similarity:
        return None
    closest = response.results[vector.index(best_vector)].citation
    return (
        f"the knowledge base has nothing on this: {searched}; the closest passage, {closest},"
        f" is {best_vector:.2f} close in meaning (kb answers from {min_similarity:.2f}:"
        " ask.min_similarity)"
    )


def _what_searched(response: SearchResponse) -> str:
    parts = [response.mode]
    f = response.filters
    named = {"type": f.types, "tag": f.tags, "path": f.paths, "lang": f.languages,
             "after": f.after, "before": f.before}  # fmt: skip
    parts += [f"{k}: {', '.join(map(str, v))}" for k, v in named.items() if v]
    if response.variants:
        parts.append(f"{len(response.variants)} more phrasings")
    parts.append(f"{response.total_matches} keyword matches")
    return ", ".join(parts)


def messages(question: str, passages: list[Passage]) -> list[dict[str, str]]:
    blocks = []
    for p in passages:
        where = " > ".join(x for x in (p.title, p.heading) if x)
        blocks.append(
            f"[{p.number}] {p.citation}" + (f" ({where})" if where else "") + f"\n{p.text}"
        )
    user = "Passages:\n\n" + "\n\n".join(blocks) + f"\n\nQuestion: {question}"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def claims_of(text: str, given: int) -> list[Claim]:
    """The answer cut into claims (sentences, lines), each with the passage numbers it cites;
    a number outside 1..`given` is dropped from its claim (kept in `dropped`)."""
    claims = []
    for part in _CLAIM_END.split(text):
        if not part.strip():
            continue
        numbers = [int(n) for m in _MARKER.finditer(part) for n in re.split(r"[,;]", m.group(1))]
        valid = list(dict.fromkeys(n for n in numbers if 1 <= n <= given))
        dropped = list(dict.fromkeys(n for n in numbers if not 1 <= n <= given))
        claims.append(Claim(part.strip(), valid, dropped))
    return claims


def checked_text(text: str, given: int) -> str:
    """The answer with each marker of a passage not given removed; a claim left with no
    citation says [uncited] where the dropped one was."""
    out = []
    for part in re.split(r"((?<=[.!?])\s+(?!\[)|\n+)", text):
        numbers = [int(n) for m in _MARKER.finditer(part) for n in re.split(r"[,;]", m.group(1))]
        if not numbers or all(1 <= n <= given for n in numbers):
            out.append(part)
            continue
        if any(1 <= n <= given for n in numbers):  # the valid numbers stay, the rest go
            fixed = _MARKER.sub(lambda m: _kept_marker(m.group(1), given), part)
        else:  # no citation left: the claim says so, before its closing punctuation
            fixed = _MARKER.sub("", part).rstrip()
            cut = re.search(r"[.!?]*$", fixed).start()  # type: ignore[union-attr]
            fixed = fixed[:cut].rstrip() + " [uncited]" + fixed[cut:]
        out.append(re.sub(r"  +", " ", fixed))
    return "".join(out)


def _kept_marker(numbers: str, given: int) -> str:
    kept = [n for n in re.split(r"\s*[,;]\s*", numbers) if 1 <= int(n) <= given]
    return f"[{', '.join(kept)}]" if kept else ""


def answer(
    model: ChatModel,
    question: str,
    response: SearchResponse,
    min_similarity: float,
    on_text: Callable[[str], None] | None = None,
) -> Answer:
    """Gate, prompt, stream, check: the Answer to `question` from the search `response`."""
    passages = passages_of(response.results)
    searched = {
        "query": response.query,
        "mode": response.mode,
        "variants": response.variants,
        "total_matches": response.total_matches,
        "notes": response.notes,
    }
    timings = {"search": response.timings_ms.get("total", 0.0)}
    reason = refusal(response, min_similarity)
    if reason is not None:
        return Answer(question, "", True, passages, reason=reason, model=model.name,
                      searched=searched, timings_ms=timings)  # fmt: skip
    pieces: list[str] = []
    error = None
    started = time.perf_counter()
    try:
        for piece in model.stream(messages(question, passages)):
            if not pieces:
                timings["first_token"] = (time.perf_counter() - started) * 1000
            pieces.append(piece)
            if on_text is not None:
                on_text(piece)
    except EndpointError as exc:
        error = str(exc)
    timings["answer"] = (time.perf_counter() - started) * 1000
    text = "".join(pieces)
    given = len(passages)
    return Answer(
        question,
        checked_text(text, given),
        False,
        passages,
        claims=claims_of(text, given),
        complete=error is None,
        error=error,
        model=model.name,
        searched=searched,
        timings_ms=timings,
    )
