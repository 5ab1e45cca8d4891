"""How sure an answer is: evidence labels per hit, a coverage grade per answer.

Labels come from what the search already knows about each hit:

- `both_legs`: the keyword and the meaning leg both found it (any phrasing);
  `one_leg`: only one of them did;
- `exact_phrase`: the query (or a quoted phrase of it, or a keyword phrasing) occurs in the
  chunk word for word;
- `defines`: the chunk defines an identifier of the query (its symbol, heading or a line that
  starts with it);
- `phrasings_agree`: with phrasings, at least two of them ranked it in their top AGREE_RANK;
- `weak`: no leg of any phrasing ranked it in its top WEAK_RANK.

`coverage` grades the answer by its first hit: `strong` when most of the rankings that ran
(each leg of each phrasing) put it in their top 3 (half of them with an exact phrase or a
definition), `weak` when none did (unless it is a definition or phrasings agree on it),
`partial` otherwise. Measured on
every question set (`kb eval` says how often a weak answer misses and a strong one hits).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

BOTH_LEGS, ONE_LEG = "both_legs", "one_leg"
EXACT, DEFINES, AGREE, WEAK = "exact_phrase", "defines", "phrasings_agree", "weak"
LABELS = (BOTH_LEGS, ONE_LEG, EXACT, DEFINES, AGREE, WEAK)
STRONG, PARTIAL, WEAK_COVERAGE = "strong", "partial", "weak"
AGREE_RANK = 10  # a phrasing "finds" a hit when one of its legs ranks it this high
WEAK_RANK = 20  # a hit no ranking has this high is `weak`
# coverage: the share of the rankings that ran (each leg of each phrasing) that rank the first
# hit in their top SUPPORT_RANK; measured on every question set (docs/results.md): on
# docs-qa, first hits that 2/3 of the rankings put in their top 3 were right 83-92% of the
# time, the others 54-74%, and those no ranking put there (and no phrasings agreed on, and
# not a definition) 0 of 4. A threshold on the fused score for `weak` was wrong on pg-qa (6
# of 6 such answers right), as was "in no ranking's top 3" alone (definitions moved up, and
# chunks every phrasing ranks 4th-10th, were right 11 of 11).
SUPPORT_RANK = 3
STRONG_SHARE = 2 / 3
EXACT_SHARE = 0.5  # enough with an exact phrase or a definition
MIN_PHRASE_WORDS = 2
WEAK_ADVICE = (
    "coverage is weak: no result has independent support; add phrasings (--also 'lex: the"
    " words the answer would use', --also 'vec: a rephrasing') or narrow the filters"
)

_SPACE = re.compile(r"\s+")
_QUOTED = re.compile(r'"([^"]+)"')


def _normal(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def phrases(query: str, keyword_phrasings: Sequence[str] = ()) -> list[str]:
    """What counts as an exact phrase: the query itself, its quoted phrases and the keyword
    phrasings, each of at least MIN_PHRASE_WORDS words (or one identifier-like word with a
    character other than a letter: `--flag`, `snake_case`, `a.b`)."""
    found = []
    for text in (query, *_QUOTED.findall(query), *keyword_phrasings):
        phrase = _normal(text.replace('"', " "))
        words = phrase.split()
        if not words:
            continue
        if len(words) >= MIN_PHRASE_WORDS or not words[0].isalpha():
            found.append(phrase)
    return list(dict.fromkeys(found))


def labels(
    found_by: Sequence[Sequence[Any]],
    breakdown: dict[str, Any],
    text: str,
    exact: Sequence[str],
    phrasings: int,
) -> list[str]:
    """The evidence labels of one hit (see the module's doc), in LABELS order."""
    legs = {leg for _, leg, _ in found_by}
    best: dict[int, int] = {}  # phrasing -> its best rank of this hit
    for phrasing, _, rank in found_by:
        best[phrasing] = min(best.get(phrasing, rank), rank)
    out = []
    if {"lexical", "vector"} <= legs:
        out.append(BOTH_LEGS)
    elif legs:
        out.append(ONE_LEG)
    body = _normal(text)
    if any(p in body for p in exact):
        out.append(EXACT)
    if breakdown.get("defines"):
        out.append(DEFINES)
    if phrasings > 1 and sum(1 for r in best.values() if r <= AGREE_RANK) >= 2:
        out.append(AGREE)
    if not best or min(best.values()) > WEAK_RANK:
        out.append(WEAK)
    return out


def coverage(first: tuple[Sequence[Sequence[Any]], list[str]] | None, rankings: int) -> str:
    """The answer's grade from its first hit's (found_by, labels), given how many rankings
    (legs of phrasings) ran; `weak` with no hit."""
    if first is None or rankings < 1:
        return WEAK_COVERAGE
    found_by, hit = first
    near_top = sum(1 for _, _, rank in found_by if rank <= SUPPORT_RANK) / rankings
    exact = EXACT in hit or DEFINES in hit
    if near_top >= STRONG_SHARE or (exact and near_top >= EXACT_SHARE):
        return STRONG
    if near_top == 0 and DEFINES not in hit and AGREE not in hit:
        return WEAK_COVERAGE
    return PARTIAL
