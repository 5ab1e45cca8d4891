"""The fallback for code without a tree-sitter grammar: regex definitions, then line windows."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kb_search.chunking.tokens import TokenCounter, count_tokens
from kb_search.formats.code.windows import span_chunk, window_chunks
from kb_search.parsed import ChunkSettings, ParsedChunk

MAX_MEMBER_DEPTH = 3


@dataclass
class Lang:
    """How to find definitions in one language family."""

    comment: str
    defs: list[re.Pattern[str]] = field(default_factory=list)
    members: list[re.Pattern[str]] = field(default_factory=list)
    block: str = "brace"  # brace | end | next (a definition runs to the next one)
    lead: re.Pattern[str] = re.compile(r"^\s*(//|/\*|\*|@|#\[)")


def _rx(*patterns: str, flags: int = 0) -> list[re.Pattern[str]]:
    return [re.compile(p, flags) for p in patterns]


_C_LEAD = re.compile(r"^\s*(//|/\*|\*|@|#\[|\[\w)")
_HASH_LEAD = re.compile(r"^\s*#")
_DASH_LEAD = re.compile(r"^\s*--")
_KEYWORDS = (
    r"(?!(?:if|for|foreach|while|switch|catch|return|else|do|new|throw|sizeof|elif|using|lock|"
    r"fixed|when|with|try|finally|synchronized)\b)"
)
_MODIFIERS = r"(?:(?:public|private|protected|internal|static|final|abstract|sealed|open|data|"
_MODIFIERS += r"override|async|readonly|virtual|inline|partial|export|default|declare|const|"
_MODIFIERS += r"unsafe|extern|suspend|lazy|mutating|fileprivate|synchronized|native)\s+)*"
_CLASSLIKE = (
    rf"^{_MODIFIERS}(?:class|interface|enum|record|struct|object|trait|protocol|extension|"
    r"namespace|module|union)\s+(?P<name>[\w$]+)"
)
# Members must open their body on the signature line, so calls inside big functions never match.
_C_MEMBER = (
    rf"^\s+{_KEYWORDS}(?:[\w@<>\[\],.?*&:]+\s+)*?(?P<name>[~\w$]+)\s*(?:<[^>]*>)?\s*"
    r"\([^;]*\)[^;{]*\{\s*$"
)
_KEYWORD_MEMBER = rf"^\s+{_MODIFIERS}(?:fun|func|def|function)\s+(?:<[^>]*>\s*)?(?P<name>\w+)"
_NESTED_CLASS = (
    rf"^\s+{_MODIFIERS}(?:class|interface|enum|struct|record|object|trait)\s+(?P<name>\w+)"
)

_BRACE_FAMILY = Lang(
    "//",
    _rx(
        _CLASSLIKE,
        rf"^{_MODIFIERS}(?:fun|func|def|function)\s+(?:<[^>]*>\s*)?(?:[\w.]+\.)?(?P<name>\w+)",
    ),
    _rx(_NESTED_CLASS, _KEYWORD_MEMBER, _C_MEMBER),
    lead=_C_LEAD,
)

LANGUAGES: dict[str, Lang] = {
    "go": Lang(
        "//",
        _rx(
            r"^func\s+\((?:\w+\s+)?\*?\s*(?P<recv>\w+)(?:\[[^\]]*\])?\)\s*(?P<name>\w+)",
            r"^func\s+(?P<name>\w+)",
            r"^type\s+(?P<name>\w+)",
        ),
    ),
    "bash": Lang(
        "#",
        _rx(r"^(?:function\s+)?(?P<name>[\w:.-]+)\s*\(\)", r"^function\s+(?P<name>[\w:.-]+)"),
        lead=_HASH_LEAD,
    ),
    "javascript": Lang(
        "//",
        _rx(
            r"^(?:export\s+(?:default\s+)?)?(?:declare\s+)?(?:async\s+)?function\s*\*?\s*(?P<name>[\w$]+)",
            r"^(?:export\s+(?:default\s+)?)?(?:declare\s+)?(?:abstract\s+)?class\s+(?P<name>[\w$]+)",
            r"^(?:export\s+)?(?:declare\s+)?(?:const|let|var)\s+(?P<name>[\w$]+)\s*(?::[^=]+)?="
            r"\s*(?:async\s+)?(?:function\b|\(|[\w$]+\s*=>)",
            r"^(?:export\s+)?(?:declare\s+)?(?:interface|enum|namespace|module)\s+(?P<name>[\w$]+)",
            r"^(?:export\s+)?type\s+(?P<name>[\w$]+)\s*(?:<[^>]*>)?\s*=",
        ),
        _rx(
            rf"^\s+{_KEYWORDS}(?:(?:public|private|protected|static|async|readonly|abstract|"
            r"override|get|set|declare)\s+)*\*?(?P<name>[#\w$]+)\s*(?:<[^>]*>)?\s*\([^;]*\)"
            r"[^;{]*\{\s*$",
            r"^\s+(?:(?:public|private|protected|static|readonly)\s+)*(?P<name>[#\w$]+)\s*=\s*"
            r"(?:async\s+)?\([^;]*=>\s*\{\s*$",
        ),
    ),
    "rust": Lang(
        "//",
        _rx(
            r"^(?:pub(?:\([^)]*\))?\s+)?(?:(?:async|const|unsafe|extern(?:\s+\"[^\"]*\")?)\s+)*"
            r"fn\s+(?P<name>\w+)",
            r"^(?:pub(?:\([^)]*\))?\s+)?(?:struct|enum|trait|union|mod|type)\s+(?P<name>\w+)",
            r"^(?:unsafe\s+)?impl(?:<[^>]*>)?\s+(?:[\w:<>, ]+?\s+for\s+)?(?P<name>[\w:]+)",
            r"^macro_rules!\s*(?P<name>\w+)",
        ),
        _rx(r"^\s+(?:pub(?:\([^)]*\))?\s+)?(?:(?:async|const|unsafe)\s+)*fn\s+(?P<name>\w+)"),
    ),
    "c": Lang(
        "//",
        _rx(
            r"^(?:typedef\s+)?(?:struct|enum|union|class|namespace)\s+(?P<name>\w+)[^;]*$",
            rf"^{_KEYWORDS}(?!(?:typedef|using|namespace|template)\b)[A-Za-z_][\w\s*&:<>,~]*?"
            r"\b(?P<name>[A-Za-z_~][\w:~]*)\s*\([^;]*$",
        ),
        _rx(_NESTED_CLASS, _C_MEMBER),
    ),
    "ruby": Lang(
        "#",
        _rx(r"^(?:def|class|module)\s+(?:self\.)?(?P<name>[\w:?!=]+)"),
        _rx(r"^\s+(?:def\s+(?:self\.)?|class\s+|module\s+)(?P<name>[\w:?!=]+)"),
        block="end",
        lead=_HASH_LEAD,
    ),
    "lua": Lang(
        "--",
        _rx(
            r"^(?:local\s+)?function\s+(?P<name>[\w.:]+)",
            r"^(?:local\s+)?(?P<name>[\w.]+)\s*=\s*function\b",
        ),
        block="end",
        lead=_DASH_LEAD,
    ),
    "sql": Lang(
        "--",
        _rx(
            r"^\s*create\s+(?:or\s+replace\s+)?(?:temp(?:orary)?\s+)?(?:unique\s+)?"
            r"(?:materialized\s+)?(?:table|view|function|procedure|index|trigger|type|schema|"
            r"sequence)\s+(?:if\s+not\s+exists\s+)?(?P<name>[\w.\"`\[\]]+)",
            flags=re.IGNORECASE,
        ),
        block="next",
        lead=_DASH_LEAD,
    ),
    "make": Lang("#", _rx(r"^(?P<name>[\w.%/-]+)\s*:(?!=)"), block="next", lead=_HASH_LEAD),
}
for _name in ("java", "csharp", "kotlin", "swift", "scala", "php"):
    LANGUAGES[_name] = _BRACE_FAMILY
LANGUAGES["typescript"] = LANGUAGES["javascript"]
LANGUAGES["cpp"] = LANGUAGES["c"]
LANGUAGES["zsh"] = LANGUAGES["bash"]

# A string never opens right after a backslash: an unclosed run of escaped quotes would
# otherwise be scanned again from each of them (quadratic).
_STRINGS = re.compile(r"(?<!\\)\"(?:\\.|[^\"\\])*\"|(?<!\\)'(?:\\.|[^'\\\n])*'|`[^`]*`")


@dataclass
class Segment:
    start: int  # 0-based, inclusive
    end: int  # exclusive
    name: str | None


def regex_chunks(
    lines: list[str], language: str, settings: ChunkSettings, count: TokenCounter = count_tokens
) -> list[ParsedChunk]:
    """A chunk per top-level definition found by regex, the rest in line windows; languages
    without patterns get line windows only."""
    lang = LANGUAGES.get(language)
    if lang is None:
        return window_chunks(lines, 0, len(lines), None, settings, count)
    return _definition_chunks(lines, lang, settings, count)


def _definition_chunks(
    lines: list[str], lang: Lang, settings: ChunkSettings, count: TokenCounter
) -> list[ParsedChunk]:
    chunks: list[ParsedChunk] = []
    for segment in top_level_segments(lines, lang):
        if segment.name is None:
            chunks += window_chunks(lines, segment.start, segment.end, None, settings, count)
        else:
            chunks += _definition(lines, segment, lang, settings, count, depth=0, context=None)
    return chunks


def top_level_segments(lines: list[str], lang: Lang) -> list[Segment]:
    """Definitions (with their leading comments) and the module code between them, in order."""
    segments: list[Segment] = []
    cursor = index = 0
    while index < len(lines):
        name = _match_name(lang.defs, lines[index])
        if name is None:
            index += 1
            continue
        start = _leading_start(lines, index, cursor, lang)
        end = _definition_end(lines, index, lang)
        if start > cursor:
            segments.append(Segment(cursor, start, None))
        segments.append(Segment(start, end, name))
        cursor = index = end
    if cursor < len(lines):
        segments.append(Segment(cursor, len(lines), None))
    return segments


def _match_name(patterns: list[re.Pattern[str]], line: str) -> str | None:
    for pattern in patterns:
        match = pattern.match(line)
        if match:
            groups = match.groupdict()
            name = groups["name"].replace("::", ".")
            return f"{groups['recv']}.{name}" if groups.get("recv") else name
    return None


def _leading_start(lines: list[str], index: int, floor: int, lang: Lang) -> int:
    """Pull comments, decorators and attributes directly above a definition into it."""
    start = index
    while start > floor and lines[start - 1].strip() and lang.lead.match(lines[start - 1]):
        start -= 1
    return start


def _definition_end(lines: list[str], start: int, lang: Lang) -> int:
    """Exclusive end of the definition starting at `start`."""
    if lang.block == "end":
        return _end_keyword(lines, start, lang)
    if lang.block == "next":
        return _next_definition(lines, start, lang)
    return _brace_end(lines, start, lang)


def _next_definition(lines: list[str], start: int, lang: Lang) -> int:
    for index in range(start + 1, len(lines)):
        if _match_name(lang.defs, lines[index]) is not None:
            return _leading_start(lines, index, start + 1, lang)
    return len(lines)


def _end_keyword(lines: list[str], start: int, lang: Lang) -> int:
    if re.search(r"\bend\s*$", lines[start]):
        return start + 1
    indent = _indent(lines[start])
    for index in range(start + 1, len(lines)):
        line = lines[index]
        if line.strip() == "end" and _indent(line) <= indent:
            return index + 1
        if _indent(line) <= indent and _match_name(lang.defs, line) is not None:
            return _leading_start(lines, index, start + 1, lang)
    return len(lines)


def _brace_end(lines: list[str], start: int, lang: Lang) -> int:
    depth, opened = 0, False
    for index in range(start, len(lines)):
        line = lines[index]
        if index > start and not opened and _ends_statement_before(line):
            return _trim_end(lines, start, index)
        if index > start and depth <= 0 and _match_name(lang.defs, line) is not None:
            return _leading_start(lines, index, start + 1, lang)
        code = _strip_strings(line, lang.comment)
        depth += code.count("{") - code.count("}")
        opened = opened or "{" in code
        if opened and depth <= 0:
            return index + 1
        if not opened and depth <= 0 and code.rstrip().endswith(";"):
            return index + 1
    return len(lines)


def _ends_statement_before(line: str) -> bool:
    """A new unindented line before any brace opened: the definition was a one-liner."""
    return bool(line.strip()) and not line[0].isspace() and line.lstrip()[0] not in "{(),=:.|&?"


def _trim_end(lines: list[str], start: int, end: int) -> int:
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return end


def _strip_strings(line: str, comment: str) -> str:
    code = _STRINGS.sub("", line)
    if comment == "#":
        return re.split(r"(?:^|\s)#", code, maxsplit=1)[0]
    return code.split(comment, 1)[0]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _definition(
    lines: list[str],
    segment: Segment,
    lang: Lang,
    settings: ChunkSettings,
    count: TokenCounter,
    depth: int,
    context: str | None,
) -> list[ParsedChunk]:
    """One chunk for a definition that fits, else one per member, else line windows."""
    chunk = span_chunk(lines, segment.start, segment.end, segment.name, count, context)
    if chunk is None:
        return []
    if chunk.token_count <= settings.max_tokens:
        return [chunk]
    members = _member_segments(lines, segment, lang) if depth < MAX_MEMBER_DEPTH else []
    if not members:
        header = _comment(lang, _def_line(lines, segment))
        return window_chunks(
            lines, segment.start, segment.end, segment.name, settings, count, context, header
        )
    inner_context = _comment(lang, _def_line(lines, segment))
    chunks: list[ParsedChunk] = []
    for member in members:
        if member.name is None:
            chunks += window_chunks(lines, member.start, member.end, segment.name, settings, count)
            continue
        member.name = f"{segment.name}.{member.name}"
        chunks += _definition(lines, member, lang, settings, count, depth + 1, inner_context)
    return chunks


def _def_line(lines: list[str], segment: Segment) -> str:
    for line in lines[segment.start : segment.end]:
        stripped = line.strip()
        if stripped and not re.match(r"(//|/\*|\*|#|--|@)", stripped):
            return stripped
    return lines[segment.start].strip()


def _comment(lang: Lang, line: str) -> str:
    return f"{lang.comment} {line}"


def _member_segments(lines: list[str], segment: Segment, lang: Lang) -> list[Segment]:
    """Members at the shallowest indentation inside a definition; the header comes first."""
    found = [
        (index, name)
        for index in range(segment.start + 1, segment.end)
        if lines[index].strip() and (name := _match_name(lang.members, lines[index])) is not None
    ]
    if not found:
        return []
    indent = min(_indent(lines[index]) for index, _ in found)
    starts = [(i, name) for i, name in found if _indent(lines[i]) == indent]
    bounds = [_leading_start(lines, i, segment.start + 1, lang) for i, _ in starts]
    members = [Segment(segment.start, bounds[0], None)] if bounds[0] > segment.start else []
    for position, (start, (_, name)) in enumerate(zip(bounds, starts)):
        end = bounds[position + 1] if position + 1 < len(bounds) else segment.end
        members.append(Segment(start, end, name))
    return members
