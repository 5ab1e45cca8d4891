"""`kb search --expand`: phrasings written by the person's chat model, searched as `--also`.

The model is asked for keyword lines (`lex:`), a rephrasing (`vec:`) and optionally a short
hypothetical passage (`hyde:`, searched by meaning like `vec:`). What comes back is parsed
leniently (other lines are ignored), phrasings that use only the question's words are dropped, and
at most MAX_EXPANSIONS are kept: they join the query's variants and are fused exactly as
`--also` phrasings are (`search.fusion`), the question weighing most.

A model's phrasing counts only when it agrees with the question: one of its top 10 hits is
among the question's own candidates (`agreeing`); else it is searched, reported as `ignored`,
and takes no part in the ranking. So an off-topic or vague phrasing cannot pull unrelated
chunks above the question's.

Expansions are cached per query, model and endpoint in `<data_dir>/expansions/` (never in the
DB: a search does not write to it), so a repeated search asks the model nothing. A model that
fails or is late costs the search nothing but a note: the question is searched alone.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kb_search.errors import EndpointError, SearchError
from kb_search.search.query import MAX_VARIANTS, parse_variant
from kb_search.search.shaping import identifiers

if TYPE_CHECKING:
    from kb_search.search.legs import LegResult
    from kb_search.search.results import SearchResponse


class PhrasingModel(Protocol):
    """What `--expand` needs of a chat model (`models.chat.ChatModel` is one): models sit above
    search and hand it down."""

    name: str
    settings: Any  # its `endpoint` keys the cache

    def complete(
        self,
        messages: list[dict[str, str]],
        max_tokens: int | None = None,
        deadline: float | None = None,
    ) -> str: ...


PROMPT_VERSION = 1  # part of the cache key: a new prompt asks again
MAX_EXPANSIONS = 3
MAX_PHRASING_CHARS = 400
MAX_ANSWER_CHARS = 8000
CACHE_FILES = 5000  # more than this: the older half goes
AGREEMENT_DEPTH = 10
IGNORED = "none of its top 10 hits is among the question's own candidates"
SYSTEM = """You write search phrasings for a search engine over one person's documents \
(keyword search and meaning search, fused). Given a question, answer with lines only:
lex: 3 to 8 keywords, identifiers or terms the answering passage is likely to contain
vec: the question rephrased in the words such a document would use
hyde: one or two sentences that passage could contain (optional)
No other text, no numbering, no explanation."""
_LINE = re.compile(r"^\s*[-*\d.)\s]*(lex|vec|hyde)\s*:\s*(.+?)\s*$", re.IGNORECASE)
_WORD = re.compile(r"\w+")


@dataclass
class Expansion:
    """The phrasings the model wrote for a query (as `--also` variants), and how they came."""

    phrasings: list[str] = field(default_factory=list)
    cached: bool = False
    ms: float = 0.0
    error: str | None = None

    def note(self) -> str | None:
        if self.error:
            return f"--expand: {self.error}; the question was searched alone"
        if not self.phrasings:
            return (
                "--expand: the chat model wrote no usable phrasing; the question alone was searched"
            )
        return None


def messages(query: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": query}]


def parse_expansion(text: str, query: str) -> list[str]:
    """The `lex:`/`vec:` variants in a model's answer (`hyde:` becomes `vec:`): one `lex`,
    one `vec` and one `hyde` at most, none whose words are all the question's (the question
    repeated, or one of its words: measured, such a phrasing costs hit@5 up to 0.08 and
    MRR@10 up to 0.20, since it only weighs some of the question's words above the rest),
    none of a single plain word (one the question lacks, "configuration", cost code-qa hit@5
    0.019 even through the agreement gate; the sets' own one-word phrasings are identifiers,
    `url_is_from_any_domain`, `pg_isready`, and stay)."""
    asked = _words(query)
    kept: dict[str, str] = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        kind, body = match.group(1).lower(), match.group(2).strip().strip('"')[:MAX_PHRASING_CHARS]
        words = _words(body)
        if kind in kept or not words or words <= asked:
            continue  # nothing new: it can only outweigh some of the question's own words
        if len(words) == 1 and not identifiers(body):
            continue  # one plain word is no phrasing (an identifier is: a name to pin down)
        kept[kind] = body
    use = {"lex": "lex", "vec": "vec", "hyde": "vec"}
    order = [k for k in ("lex", "vec", "hyde") if k in kept]
    return [p for p in (f"{use[k]}: {kept[k]}" for k in order) if _searchable(p)][:MAX_EXPANSIONS]


def _searchable(phrasing: str) -> bool:
    """Whether the search takes it as a variant (a model's odd line must not fail a search)."""
    try:
        parse_variant(phrasing)
    except SearchError:
        return False
    return True


def _words(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(text))


def expand(
    model: PhrasingModel, query: str, cache_dir: Path | None, deadline: float | None = None
) -> Expansion:
    """The phrasings for `query`: from the cache, else from the model (then cached)."""
    started = time.perf_counter()
    path = cache_dir / f"{_key(model, query)}.json" if cache_dir is not None else None
    answer = _read(path)
    if answer is not None:  # the model's words are kept: a better parser reads them anew
        phrasings = parse_expansion(answer, query)
        return Expansion(phrasings, cached=True, ms=(time.perf_counter() - started) * 1000)
    try:
        answer = model.complete(messages(query), max_tokens=256, deadline=deadline)
    except EndpointError as exc:
        return Expansion(error=str(exc), ms=(time.perf_counter() - started) * 1000)
    if path is not None:
        _write(path, {"model": model.name, "query": query, "answer": answer[:MAX_ANSWER_CHARS]})
    return Expansion(parse_expansion(answer, query), ms=(time.perf_counter() - started) * 1000)


def _key(model: PhrasingModel, query: str) -> str:
    import hashlib  # here: a search without --expand should not load OpenSSL (~4 ms)

    text = f"{PROMPT_VERSION}\0{model.name}\0{model.settings.endpoint}\0{query}"
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _read(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        answer = json.loads(path.read_text(encoding="utf-8"))["answer"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return answer if isinstance(answer, str) else None


def _write(path: Path, data: dict[str, object]) -> None:
    """Best effort: a cache that cannot be written costs the next search a model call."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        os.replace(temporary, path)
        _prune(path.parent)
    except OSError:
        pass


def _prune(folder: Path) -> None:
    entries = list(os.scandir(folder))
    if len(entries) <= CACHE_FILES:
        return
    entries.sort(key=lambda e: e.stat().st_mtime)
    for entry in entries[: len(entries) // 2]:
        try:
            os.unlink(entry.path)
        except OSError:
            pass


def agreeing(
    legs: dict[str, LegResult],
    variant_legs: list[dict[str, LegResult]],
    expanded: int,
    uses: list[str] | None = None,
) -> tuple[list[dict[str, LegResult]], set[int]]:
    """The variants' legs with those of each of the last `expanded` (the model's) that does
    not agree with the question left out (no legs: it takes no part in the fusion), and the
    numbers (1-based, as in `found_by`) of those left out.

    A model's phrasing agrees when one of its top AGREEMENT_DEPTH hits, in any leg, is among
    the question's own candidates. Measured with a scripted model (`python -m bench expand`):
    one word the question lacks ("configuration"), fused as `--also`, cost docs-qa hit@5
    0.042 and MRR@10 0.036. On docs-qa and negation-qa (md_argocd_docs), 210 of the sets' own
    216 phrasings agree and 67 of 216 off-topic ones and 42 of 216 one-word ones do; left out
    when they do not, the good keep their whole gain and the bad cost nothing."""
    first = len(variant_legs) - expanded
    pool = {cid for leg in legs.values() for cid, _ in leg.hits}
    kept, ignored = [], set()
    for number, found in enumerate(variant_legs, start=1):
        # A typed phrasing agrees by the leg it was written for: its other leg (searched at
        # fusion.CROSS_SHARE) always finds neighbours by meaning, whatever the words.
        use = uses[number - 1] if uses else "both"
        own = [leg for name, leg in found.items() if use in ("both", name)]
        top = {cid for leg in own for cid, _ in leg.hits[:AGREEMENT_DEPTH]}
        if number > first and not top & pool:
            kept.append({})
            ignored.add(number)
        else:
            kept.append(found)
    return kept, ignored


def with_expansion(variants: tuple[str, ...], expansion: Expansion) -> tuple[str, ...]:
    """The caller's variants, then the expansion's phrasings (at most MAX_VARIANTS in all:
    the caller's come first; `expansion.phrasings` keeps those that fit)."""
    room = max(0, MAX_VARIANTS - len(variants))
    expansion.phrasings = expansion.phrasings[:room]
    return (*variants, *expansion.phrasings)


def mark_expanded(response: SearchResponse, expansion: Expansion) -> None:
    """Say in the response which variants the model wrote (`from: "model"`), how long asking
    took (`timings_ms.expand`; 0 from the cache) and, when it failed, why."""
    first = len(response.variants) - len(expansion.phrasings)
    for variant in response.variants[first:]:
        variant["from"] = "model"
    response.timings_ms["expand"] = expansion.ms
    if (note := expansion.note()) is not None:
        response.notes.append(note)
