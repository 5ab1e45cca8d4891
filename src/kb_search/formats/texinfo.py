"""Texinfo (`*.texi`): a line-for-line conversion to Markdown, then the Markdown chunker.

`@settitle` gives the title; `@chapter`/`@section`/... (and their `@unnumbered`/`@appendix`
kin, `@top`, `@heading`s) become `#` sections; `@example`/`@verbatim`/`@lisp` become fences;
`@itemize`/`@enumerate`/`@table` items become list lines and `@multitable` rows table-like
lines. Dropped: comments (`@c`), `@node` lines, menus, the title page, index entries and
setup commands (`@setfilename`, `@documentencoding`...). Brace commands keep their text:
`@code{x}` is `` `x` ``, `@emph{x}` is `x`, `@uref{url, text}` is `text`, `@xref{Node}` is
`see Node`; `@value{name}` is what `@set name` said. Every converted line stands for its own
line of the file, so chunks cite real line ranges. No library: none on PyPI reads Texinfo,
and `makeinfo` (a Perl program) may not be installed.
"""

from __future__ import annotations

import re

from kb_search.formats.converted import MarkdownBuilder
from kb_search.formats.registry import Source
from kb_search.parsed import ParsedDocument

SECTION_LEVELS = {
    "top": 1, "chapter": 1, "unnumbered": 1, "appendix": 1, "majorheading": 1,
    "chapheading": 1, "centerchap": 1,
    "section": 2, "unnumberedsec": 2, "appendixsec": 2, "appendixsection": 2, "heading": 2,
    "subsection": 3, "unnumberedsubsec": 3, "appendixsubsec": 3, "subheading": 3,
    "subsubsection": 4, "unnumberedsubsubsec": 4, "appendixsubsubsec": 4,
    "subsubheading": 4,
}  # fmt: skip
# Blocks whose lines are code, shown as they are (brace commands still read)
FENCED = frozenset({"example", "smallexample", "lisp", "smalllisp", "verbatim"})
# Blocks left out whole: navigation, the printed title page, Info directory entries, TeX
DROPPED = frozenset({"menu", "detailmenu", "titlepage", "direntry", "tex", "ignore", "macro"})
LISTS = frozenset({"itemize", "enumerate", "table", "ftable", "vtable", "multitable"})
# Blocks whose text is read as it stands (conditionals: kb reads every output's text)
PLAIN_BLOCKS = frozenset({
    "copying", "quotation", "smallquotation", "display", "smalldisplay", "format",
    "smallformat", "cartouche", "flushleft", "flushright", "group", "ifinfo", "ifnottex",
    "ifhtml", "ifnothtml", "iftex", "ifplaintext", "ifnotinfo", "ifdocbook", "ifnotdocbook",
    "ifxml", "ifnotxml", "ifset", "ifclear", "html", "float",
})  # fmt: skip
# Line commands that are setup or an index entry: the whole line goes
SETUP = frozenset({
    "setfilename", "documentencoding", "documentlanguage", "setchapternewpage", "node",
    "finalout", "paragraphindent", "firstparagraphindent", "headings", "footnotestyle",
    "contents", "shortcontents", "summarycontents", "printindex", "bye", "insertcopying",
    "dircategory", "page", "sp", "vskip", "need", "noindent", "indent", "refill", "syncodeindex",
    "synindex", "defindex", "defcodeindex", "everyheading", "everyfooting", "evenheading",
    "oddheading", "evenfooting", "oddfooting", "smallbook", "afourpaper", "exampleindent",
    "cindex", "findex", "kindex", "vindex", "pindex", "tindex", "clear", "set", "settitle",
    "allowcodebreaks", "frenchspacing", "include", "raisesections", "lowersections",
})  # fmt: skip
CODE_COMMANDS = frozenset({
    "code", "samp", "command", "option", "env", "file", "kbd", "key", "t", "verb",
    "indicateurl",
})  # fmt: skip
SYMBOLS = {
    "dots": "...", "enddots": "...", "copyright": "©", "registeredsymbol": "®", "tie": " ",
    "result": "=>", "expansion": "==>", "equiv": "==", "error": "error-->", "print": "-|",
    "point": "-!-", "minus": "-", "bullet": "•", "comma": ",", "TeX": "TeX", "LaTeX": "LaTeX",
    "today": "", "arrow": "->", "click": "->", "euro": "€", "pounds": "£", "geq": ">=",
    "leq": "<=", "textdegree": "°", "exclamdown": "¡", "questiondown": "¿",
}  # fmt: skip

_LINE_COMMAND = re.compile(r"^\s*@(\w+)\b\s?(.*)$")
_END = re.compile(r"^\s*@end\s+(\w+)")
_COMMENT = re.compile(r"^\s*@(?:c|comment)(?:\s|$)")
_GROUPING = re.compile(r"^\s*@(?:group|end\s+group|noindent|c|comment)(?:\s|$)")
# innermost first: a brace command whose argument holds no brace
_BRACED = re.compile(r"@(\w+)\{([^{}]*)\}")
_ESCAPES = {"@@": "\x03", "@{": "\x01", "@}": "\x02"}
_ESCAPE = re.compile(r"@[@{}]")
_UNBALANCED = re.compile(r"@(\w+)\{|\}")
_PUNCT = re.compile(r"@([.:!?*\-/ \t'\"^`,=~])")
# `@.` ends a sentence, `@:` and `@-` are spacing and hyphenation hints, `@*` a line break;
# an accent (`@'e`) keeps its letter
_PUNCTUATION = {".": ".", "!": "!", "?": "?", " ": " ", "\t": " "}
MAX_NESTING = 12  # brace levels read; deeper text keeps its braces
# Blocks open at once; a deeper opening is read as a plain line (real manuals nest < 10, and
# every line checks the open blocks: an unbounded stack made a 1 MB file quadratic)
MAX_BLOCKS = 64
# Characters `@value{...}` may add to one line: a value that names itself
# (`@set a @value{a}@value{a}`) would double a line at every nesting level read
MAX_VALUE_CHARS = 10_000


def parse_texinfo(source: Source) -> ParsedDocument:
    builder = MarkdownBuilder()
    values: dict[str, str] = {}
    title = ""
    stack: list[str] = []  # open blocks, innermost last
    open_: list[str] = []  # brace commands open past a line's end; a paragraph ends them
    for number, line in enumerate(source.text().split("\n"), start=1):
        if not line.strip():
            open_.clear()
        if number == 1 and line.startswith("\\input"):
            builder.line("", number)
            continue
        ended = _END.match(line)
        if ended and ended.group(1) in stack:
            name = ended.group(1)
            while stack and stack.pop() != name:
                pass
            builder.line("```" if name in FENCED and not _dropping(stack) else "", number)
            continue
        if _dropping(stack):
            builder.line("", number)
            continue
        if stack and stack[-1] == "verbatim":
            builder.line(line, number)  # Texinfo reads no command in it: `@@` is two at signs
            continue
        if stack and stack[-1] in FENCED:
            inside = "" if _GROUPING.match(line) else _inline(line, values, open_)
            builder.line(inside, number)
            continue
        if _COMMENT.match(line):
            builder.line("", number)
            continue
        command = _LINE_COMMAND.match(line)
        name, rest = (command.group(1), command.group(2)) if command else ("", "")
        if name == "settitle":
            title = title or _inline(rest, values).strip()
        elif name == "set":
            key, _, value = rest.partition(" ")
            values[key] = value.strip()
        converted = _convert(name, rest, line, stack, values, open_)
        builder.line(converted, number)
    if stack and stack[-1] in FENCED:
        builder.add("```")  # an unclosed example still makes a valid fence
    document = builder.parse(source.name, source.settings, source.count)
    document.title = title or document.title
    document.doc_type = "texinfo"
    return document


def _dropping(stack: list[str]) -> bool:
    return any(block in DROPPED for block in stack)


def _convert(
    name: str, rest: str, line: str, stack: list[str], values: dict[str, str], open_: list[str]
) -> str:
    if not name or name in CODE_COMMANDS or name in SYMBOLS or line.lstrip()[:1] != "@":
        return _inline(line, values, open_)
    if name == "center":
        return _inline(rest, values, open_)
    if name in SECTION_LEVELS:
        return f"{'#' * SECTION_LEVELS[name]} {_inline(rest, values).strip() or '(untitled)'}"
    if name in FENCED or name in DROPPED or name in LISTS:
        if not _open_block(name, stack):
            return _inline(line, values, open_)
        return "```" if name in FENCED else ""
    if name in ("item", "itemx", "headitem") and stack:
        return _item(rest, stack[-1], values)
    if name in ("tab",):
        return " | " + _inline(rest, values, open_)
    if name in SETUP or name == "end":
        return ""  # an `@end` of a block not opened here (`@end deffn`) too
    if name.startswith("def"):
        return "" if name.endswith("index") else _definition(rest, values)
    if name in PLAIN_BLOCKS:
        _open_block(name, stack)  # their text is read as it stands
        return ""
    return _inline(line, values, open_)


def _open_block(name: str, stack: list[str]) -> bool:
    if len(stack) >= MAX_BLOCKS:
        return False
    stack.append(name)
    return True


def _item(rest: str, block: str, values: dict[str, str]) -> str:
    text = _inline(rest, values).strip()
    if block == "multitable":
        return "| " + " | ".join(cell.strip() for cell in text.split("@tab")) + " |"
    if block == "enumerate":
        return f"1. {text}" if text else ""
    return f"- {text}" if text else ""


def _definition(rest: str, values: dict[str, str]) -> str:
    """`@deftypefn {Function} int BZ2_bzRead (...)`: the category, then the signature."""
    text = _inline(rest, values)
    return f"**{text.strip()}**" if text.strip() else ""


def _inline(text: str, values: dict[str, str], open_: list[str] | None = None) -> str:
    """A line's brace commands read. `open_`: the commands whose argument runs on past a
    line's end (`@samp{bzip2 --` ... `}`), innermost last, carried from line to line."""
    text = _ESCAPE.sub(lambda m: _ESCAPES[m.group(0)], text)
    budget = [MAX_VALUE_CHARS]
    for _ in range(MAX_NESTING):
        replaced = _BRACED.sub(lambda m: _command(m.group(1), m.group(2), values, budget), text)
        if replaced == text:
            break
        text = replaced
    if open_ is not None:
        text = _UNBALANCED.sub(lambda m: _open_or_close(m, open_), text)
    text = _PUNCT.sub(lambda m: _PUNCTUATION.get(m.group(1), ""), text)
    return text.replace("\x03", "@").replace("\x01", "{").replace("\x02", "}")


def _open_or_close(match: re.Match[str], open_: list[str]) -> str:
    if match.group(1) is not None:  # `@samp{` whose `}` is on a later line
        open_.append(match.group(1))
        return "`" if match.group(1) in CODE_COMMANDS else ""
    if not open_:
        return "}"  # a brace of the text itself
    return "`" if open_.pop() in CODE_COMMANDS else ""


def _command(name: str, argument: str, values: dict[str, str], budget: list[int]) -> str:
    if name in SYMBOLS:
        return SYMBOLS[name]
    if name == "value":
        value = values.get(argument.strip(), argument)
        if len(value) > budget[0]:
            return argument  # past the line's budget: the name, not another copy
        budget[0] -= len(value)
        return value
    parts = [part.strip() for part in argument.split(",")]
    if name == "verb":
        return f"`{argument[1:-1]}`" if len(argument) >= 2 else argument
    if name in CODE_COMMANDS:
        return f"`{argument}`" if argument.strip() else ""
    if name in ("uref", "url"):
        return parts[1] if len(parts) > 1 and parts[1] else parts[0]
    if name == "email":
        return parts[0]
    if name in ("xref", "pxref"):
        return f"see {parts[0]}"
    if name in ("ref", "inforef"):
        return parts[0]
    if name == "footnote":
        return f" ({argument.strip()})"
    if name in ("anchor", "w", "hyphenation", "image", "errormsg", "caption", "shortcaption"):
        return argument if name in ("w", "caption") else ""
    return argument  # emph, strong, var-like markup, acronym, sc, r, i, b, dfn, cite...


def parse_texinfo_source(source: Source) -> ParsedDocument:
    return parse_texinfo(source)
