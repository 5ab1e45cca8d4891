"""Turning any user string into a safe FTS5 expression plus filters.

User text never reaches MATCH raw: every term is quoted. The only pass-through is a query
wrapped whole in single quotes, which is taken as an FTS5 expression on purpose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kb_search.cjk import cjk_runs
from kb_search.errors import SearchError
from kb_search.sanitize import valid_text

FILTER_KEYS = {
    "type": "types",
    "tag": "tags",
    "path": "paths",
    "lang": "languages",
    "language": "languages",
    "after": "after",
    "before": "before",
}

# Dropped from OR queries (they match nearly every chunk and only cost time); kept when the
# query has nothing else.
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "she",
        "should",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)

# FTS5 parses an expression in time that grows with the square of its terms and does not call
# SQLite's progress handler while it does (700 KB of ORs took 19.5 s), so the parse itself is
# bounded: a query is at most this many characters, and the expression built from it holds at
# most MAX_FTS_TERMS terms and phrases (and as many exclusions).
DEFAULT_MAX_QUERY_CHARS = 4000
MAX_FTS_TERMS = 64

_TOKEN = re.compile(r'-?"[^"]*"?|\S+')
_WORD = re.compile(r"\w+\*?", re.UNICODE)


@dataclass
class Filters:
    types: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)  # dates: file modified on/after
    before: list[str] = field(default_factory=list)  # dates: file modified before

    def merged(self, other: Filters) -> Filters:
        return Filters(
            types=[*self.types, *other.types],
            tags=[*self.tags, *other.tags],
            paths=[*self.paths, *other.paths],
            languages=[*self.languages, *other.languages],
            after=[*self.after, *other.after],
            before=[*self.before, *other.before],
        )

    def cleaned(self) -> Filters:
        """The same filters with every value valid text (stripped), path globs checked."""
        clean = {
            name: [valid_text(v).strip() for v in getattr(self, name) if valid_text(v).strip()]
            for name in ("types", "tags", "paths", "languages", "after", "before")
        }
        if clean["paths"]:
            from kb_search.store.globs import check_glob

            for pattern in clean["paths"]:
                check_glob(pattern)
        if clean["after"] or clean["before"]:
            # Checked here, before any leg runs: a leg that reports its own errors (vector)
            # would otherwise turn a bad date into "vector search unavailable".
            for date in [*clean["after"], *clean["before"]]:
                date_timestamp(date)
        return Filters(**clean)

    def is_empty(self) -> bool:
        return not (
            self.types or self.tags or self.paths or self.languages or self.after or self.before
        )


@dataclass
class ParsedQuery:
    text: str  # the words left once filters are taken out (for embedding)
    terms: list[str] = field(default_factory=list)  # words, `*` kept on prefix terms
    phrases: list[str] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)  # words or phrases after `-`
    filters: Filters = field(default_factory=Filters)
    raw_fts: str | None = None  # explicit FTS5 expression ('...')
    left_out: str = ""  # a subject the request excludes in plain words: not searched for

    def fts_expression(self) -> str | None:
        """An FTS5 MATCH string (OR of terms and phrases, minus exclusions), or None."""
        if self.raw_fts is not None:
            return self.raw_fts
        positives = [_quote(p) for p in self.phrases]
        words = [t for t in self.terms if t.rstrip("*").lower() not in STOPWORDS]
        if not words and not positives:
            words = self.terms
        positives += [_quote_term(t) for t in _unique(words)]
        if not positives:
            return None
        expr = " OR ".join(positives[:MAX_FTS_TERMS])
        if self.excluded:
            excluded = _unique(self.excluded)[:MAX_FTS_TERMS]
            expr = f"({expr})" + "".join(f" NOT {_quote(x)}" for x in excluded)
        return expr

    def terms_left_out(self) -> int:
        """Distinct terms and phrases past MAX_FTS_TERMS that the keyword leg does not search."""
        if self.raw_fts is not None:
            return 0
        words = [t for t in self.terms if t.rstrip("*").lower() not in STOPWORDS] or self.terms
        return max(0, len(self.phrases) + len(_unique(words)) - MAX_FTS_TERMS)

    def only_stopwords(self) -> bool:
        """The words are all stop words (and there is no phrase): FTS5 then matches them."""
        return bool(self.terms) and not self.phrases and all(
            t.rstrip("*").lower() in STOPWORDS for t in self.terms
        )

    def cjk_runs(self) -> list[str]:
        runs: list[str] = []
        for piece in [*self.phrases, *self.terms]:
            runs += cjk_runs(piece)
        return _unique(runs)[:MAX_FTS_TERMS]


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _quote_term(term: str) -> str:
    if term.endswith("*") and len(term) > 1:
        return _quote(term[:-1]) + "*"
    return _quote(term)


def _words(text: str) -> list[str]:
    out = []
    for match in _WORD.finditer(text):
        word = match.group(0)
        # A `*` only makes a prefix query at the end of a word of two or more characters.
        if word.endswith("*") and (
            len(word) < 3 or match.end() < len(text) and text[match.end()].isalnum()
        ):
            word = word.rstrip("*")
        if word.strip("*_"):
            out.append(word)
    return out


def check_query_length(query: str, limit: int = DEFAULT_MAX_QUERY_CHARS) -> None:
    """SearchError for a query over `limit` characters (search.max_query_chars)."""
    if len(query) > limit:
        raise SearchError(
            f"the query is {len(query):,} characters long, over the {limit:,} limit:"
            " shorten it (or raise search.max_query_chars)"
        )


# Requests written in plain words with an exclusion ("X, but don't mention Y", "Z without W"):
# how the subject after the cue is handled. "off": searched like any word; "lexical": the cue
# and the subject leave the keyword leg (the meaning leg reads the whole request); "both":
# they leave both legs. "both" is the only choice under which hybrid beats both legs on
# eval/questions/negation-qa.jsonl (hybrid nDCG@10 .8705, lexical .8626, vector .6564; with
# "lexical": .8327 < .8626); every other set scores the same either way.
PLAIN_EXCLUSION = "both"
# The cues of a topic left out: a named exclusion anywhere ("excluding Y", "don't mention Y");
# "not Y" and "without Y" only as a clause of their own after a comma ("X, without Y"), or
# "without using Y": "runs without TLS" or "hangs without printing" ask about that very thing.
_EXCLUSION_CUE = re.compile(
    r"(?i)\b(?:excluding|except(?:\s+for)?|other\s+than)\b"
    r"|\b(?:don'?t|do\s+not|never)\s+(?:mention(?:ing)?|talk(?:ing)?\s+about|include|cover|use)\b"
    r"|,\s*(?:but\s+)?(?:not|without)\b"
    r"|\bwithout\s+(?:using|mentioning|including|covering|involving)\b"
)
_CLAUSE_END = re.compile(r"[,;!?]|\.(?:\s|$)")


def plain_exclusion(text: str) -> tuple[str, str]:
    """(the request without its exclusion clause, the excluded subject); ("", "") when the
    request has no plain-words exclusion."""
    match = _EXCLUSION_CUE.search(text)
    if not match:
        return "", ""
    rest = text[match.end() :]
    end = _CLAUSE_END.search(rest)
    subject = rest[: end.start()] if end else rest
    kept = text[: match.start()] + (rest[end.start() :] if end else "")
    return kept.strip(" ,;"), subject.strip()


def parse_query(query: str) -> ParsedQuery:
    """Split a query into words, "phrases", -exclusions and key:value filters."""
    parsed = _parse(query)
    if PLAIN_EXCLUSION == "off" or parsed.raw_fts is not None:
        return parsed
    kept, subject = plain_exclusion(parsed.text)
    if not subject or not _words(kept):
        return parsed
    narrowed = _parse(kept)
    parsed.terms, parsed.phrases = narrowed.terms, narrowed.phrases
    if PLAIN_EXCLUSION == "both":
        parsed.text = narrowed.text
    parsed.left_out = subject
    return parsed


def _parse(query: str) -> ParsedQuery:
    stripped = query.strip()
    if len(stripped) >= 2 and stripped[0] == stripped[-1] == "'":
        return ParsedQuery(text=stripped[1:-1], raw_fts=stripped[1:-1])
    parsed = ParsedQuery(text="")
    kept: list[str] = []
    for token in _TOKEN.findall(stripped):
        negated = token.startswith("-") and len(token) > 1
        body = token[1:] if negated else token
        if body.startswith('"'):
            phrase = body.strip('"').strip()
            words = _words(phrase)
            if not words:
                continue
            target = parsed.excluded if negated else parsed.phrases
            target.append(" ".join(w.rstrip("*") for w in words))
            if not negated:
                kept.append(phrase)
            continue
        key, sep, value = body.partition(":")
        if sep and value and not negated and key.lower() in FILTER_KEYS:
            getattr(parsed.filters, FILTER_KEYS[key.lower()]).append(value)
            continue
        words = _words(body)
        if negated:
            parsed.excluded += [w.rstrip("*") for w in words]
        elif words:
            parsed.terms += words
            kept.append(body)
    parsed.text = " ".join(kept)
    return parsed


# Variant phrasings searched with a query in one call (the query itself is phrasing 0).
MAX_VARIANTS = 4
# "lex: words" searches only the keyword leg, "vec: words" only the meaning leg.
VARIANT_PREFIXES = {"lex": "lexical", "vec": "vector"}


@dataclass(frozen=True)
class Phrasing:
    """One more way to ask the same thing: its words and the legs it searches."""

    text: str
    use: str = "both"  # "both", "lexical" or "vector"

    def searches(self, leg: str) -> bool:
        return self.use in ("both", leg)

    def to_dict(self) -> dict[str, str]:
        return {"text": self.text, "use": self.use}


def parse_variant(text: str) -> Phrasing:
    """ "lex: max_connections" -> mainly keywords; "vec: ..." -> mainly meaning; else both
    (a typed phrasing weighs `fusion.CROSS_SHARE` in its other leg)."""
    body = valid_text(text).strip()
    prefix, sep, rest = body.partition(":")
    use = VARIANT_PREFIXES.get(prefix.strip().lower()) if sep else None
    if use is not None:
        body = rest.strip()
    if not _words(body):
        raise SearchError(f"variant {text.strip()[:60]!r} has no words to search for")
    return Phrasing(body, use or "both")


def parse_variants(texts: list[str] | tuple[str, ...]) -> list[Phrasing]:
    if len(texts) > MAX_VARIANTS:
        raise SearchError(
            f"{len(texts)} variants: give at most {MAX_VARIANTS} (the query is the first phrasing)"
        )
    return [parse_variant(t) for t in texts]


def date_timestamp(date: str) -> float:
    """An ISO date or datetime (local time when no zone is given) as a Unix timestamp; dates
    the platform cannot convert (year 1, year 9999) are before or after every file."""
    from datetime import datetime


    try:
        moment = datetime.fromisoformat(date.strip())
    except ValueError as exc:
        raise SearchError(f"not a date: {date!r} (use YYYY-MM-DD)") from exc
    try:
        return moment.timestamp()
    except (OverflowError, OSError, ValueError):
        return float("-inf") if moment.year < 1970 else float("inf")
