"""Path globs for the `path:` filter: `*` stays inside one path segment, `**` crosses them,
`?` is one character, `[abc]`/`[!abc]` a class.

Globs are translated to a regular expression and matched with RE2, whose time is linear in
the path's length whatever the pattern: a pattern of twenty stars cannot stall a search (with
a backtracking engine it took minutes).
"""

from __future__ import annotations

import functools
import re

import re2

from kb_search.errors import SearchError

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a bad pattern is reported to the user, not logged to stderr


def glob_to_regex(pattern: str) -> str:
    """The regular expression of a glob (to be matched against the whole text)."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str) -> tuple[re2._Regexp, re2._Regexp]:
    """(whole text, any trailing part after a `/`)."""
    body = glob_to_regex(pattern)
    try:
        return re2.compile(body, options=_OPTIONS), re2.compile(f"(?:.*/)?{body}", _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise SearchError(f"bad path pattern {pattern!r}: {reason}") from None


def check_glob(pattern: str) -> None:
    """Raise SearchError (one line) for a pattern that cannot be used."""
    _compiled(pattern)


def path_matches(pattern: str, rel_path: str, abs_path: str) -> bool:
    """A pattern without `/` matches the file name; `/x` the absolute path; else the path
    relative to its root, or any trailing part of the absolute path."""
    whole, tail = _compiled(pattern)
    if "/" not in pattern:
        return whole.fullmatch(abs_path.rsplit("/", 1)[-1]) is not None
    if pattern.startswith("/"):
        return whole.fullmatch(abs_path) is not None
    return whole.fullmatch(rel_path) is not None or tail.fullmatch(abs_path) is not None
