"""LaTeX: sections become Markdown headings, paragraphs go through `pylatexenc`'s
latex-to-text (accents, quotes, math as text; citations, labels, figures' file names and
layout macros dropped), then the Markdown chunker. Each paragraph remembers its line range,
so chunks cite the lines of the .tex file. `\\title`, `\\author`, `\\date` and `\\keywords`
of the preamble become the title, metadata and tags; `\\input` files are not followed.

Plain TeX (a reference card, a macro file: no preamble to split off) opens with page setup:
register assignments (`\\hsize=...`, `\\advance\\hsize by -\\temp`), font loads and macro
definitions. Those lines are no text (`setup_lines`): left out, so neither the title nor the
first chunk is `=11in =8.5in ...`. A document without `\\title` or a heading is titled by its
first short line of text.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from kb_search.formats.converted import MarkdownBuilder, Origin
from kb_search.formats.registry import Source
from kb_search.parsed import ParsedDocument

SECTION_LEVELS = {
    "part": 0, "chapter": 1, "section": 2, "subsection": 3, "subsubsection": 4, "paragraph": 5,
}  # fmt: skip
_SECTION = re.compile(r"\\(" + "|".join(SECTION_LEVELS) + r")\*?\s*(?:\[[^\]]*\])?\s*\{")
_BEGIN = re.compile(r"\\begin\s*\{([^}]+)\}")
_END = re.compile(r"\\end\s*\{([^}]+)\}")
_COMMENT = re.compile(r"(?<!\\)%.*$")
_VERBATIM = ("verbatim", "verbatim*", "lstlisting", "minted", "Verbatim", "comment")
_NAMED_ENVIRONMENTS = {"abstract": "Abstract", "thebibliography": "References"}
# Macros whose output is noise for search: references, labels, layout.
_DROPPED_MACROS = (
    "cite", "citep", "citet", "citealp", "citeauthor", "nocite", "ref", "eqref", "pageref",
    "autoref", "cref", "Cref", "label", "includegraphics", "maketitle", "tableofcontents",
    "listoffigures", "listoftables", "bibliographystyle", "bibliography", "bibitem", "vspace",
    "hspace", "newpage", "clearpage", "centering", "noindent", "hline", "cline", "toprule",
    "midrule", "bottomrule", "addbibresource", "printbibliography", "input", "include",
)  # fmt: skip
_PREAMBLE_FIELDS = ("title", "author", "date", "keywords")
_SPACES = re.compile(r"[ \t\u00a0]+")
# Where a dropped \cite or \ref was: "hard~\cite{x}." -> "hard ." -> "hard."
_SPACE_BEFORE_PUNCTUATION = re.compile(r"(?<![ \t\u00a0])[ \t\u00a0]+([.,;:)])")  # linear
MAX_BLOCK_CHARS = 200_000
_SPECIAL_TEXT = {"~": " ", "&": " ", "``": "\u201c", "''": "\u201d"}
# Plain TeX's layout glue and row ends: text on both sides stays apart.
_SPACING_MACROS = {"hfil": " ", "hfill": " ", "hss": " ", "quad": " ", "qquad": " ", "cr": "\n"}
# A line that starts one of these defines or sets something up (to its closing brace).
_SETUP_START = re.compile(
    r"\\(?:(?:long|outer|global|protected)\\)*(?:[gex]?def|let|font|new(?:dimen|count|skip|box|toks"
    r"|if|read|write|muskip)|output|footline|headline|everypar|setbox|chardef|mathchardef"
    r"|catcode|countdef|dimendef|skipdef|toksdef|magnification|(?:re)?newcommand|providecommand"
    r"|(?:re)?newenvironment|DeclareMathOperator\*?)(?![A-Za-z])"
)
# What a setup line is made of: control words, `#1`, dimensions, TeX's keywords, `=` and
# braces. A line with nothing else (and an `=`, a definition or a conditional) gives no text.
_SETUP_PARTS = re.compile(
    r"\\(?:[A-Za-z@]+|.)|#\d|-?(?:\d+\.?\d*|\.\d+)\s*(?:pt|in|pc|em|ex|mm|cm|bp|sp|dd|cc|true"
    r"|fil+)?|\b(?:by|to|plus|minus|height|width|depth|spread|fil+)\b|[=<>{}\[\]();,.\s-]"
)
_LET = re.compile(r"\\(?:global\\)?let\\(?:[A-Za-z@]+|.)\s*=?\s*(?:\\(?:[A-Za-z@]+|.)|.)")
# Conditionals, and plain TeX's last line (`\\bye`, `\\end` without an environment).
_CONDITIONAL = re.compile(r"\\(?:if[A-Za-z]*|else|fi|or|bye|end)(?![A-Za-z])")
TITLE_CHARS = 100  # a first line longer than this is a paragraph, not a title
_SPECIALS = re.compile(r"``|''|(?<!\\)[~&]")


def parse_latex(source: Source) -> ParsedDocument:
    raw = source.text().split("\n")
    lines = [_COMMENT.sub("", line) for line in raw]
    for number in setup_lines(lines):
        lines[number] = ""
    text = "\n".join(lines)
    preamble = text.split("\\begin{document}", 1)[0] if "\\begin{document}" in text else ""
    fields = _preamble_fields(preamble)
    body_start, body_end = _body_range(lines, raw)
    levels = _level_map(lines[body_start:body_end])
    builder = MarkdownBuilder()
    index = body_start
    while index < body_end:
        index = _convert_from(lines, raw, index, body_end, levels, builder)
    document = builder.parse(source.name, source.settings, source.count)
    untitled = document.title == Path(source.name).stem  # no heading: the parser's fallback
    first_line = _first_line(builder) if untitled else ""
    document.title = fields.pop("title", "") or first_line or document.title
    document.doc_type = "latex"
    keywords = fields.pop("keywords", "")
    document.tags = [k.strip() for k in re.split(r"[,;]", keywords) if k.strip()]
    document.metadata = fields
    return document


def setup_lines(lines: list[str]) -> list[int]:
    """The (comment-free) lines that only set TeX up: a definition to its closing brace, or a
    line of assignments, register arithmetic or conditionals with no word of text."""
    found: list[int] = []
    opened: list[int] = []  # the lines of a definition whose closing brace is still to come
    depth = 0
    for number, line in enumerate(lines):
        stripped = line.strip()
        if opened and "\\begin{document}" in stripped:
            # never closed before the text (a `{` in `\verb`, a stray brace): only its first
            # line was setup, the rest is judged line by line
            found.append(opened[0])
            found.extend(n for n in opened[1:] if _is_assignment(lines[n].strip()))
            opened, depth = [], 0
        if depth > 0 or (_SETUP_START.match(stripped) and not _text_after_let(stripped)):
            depth = max(0, depth + _brace_balance(stripped))
            opened.append(number)
            if depth == 0:
                found.extend(opened)
                opened = []
        elif stripped and _is_assignment(stripped):
            found.append(number)
    if opened:  # a brace that never closes: the rest of the file is text, not its body
        found.append(opened[0])
        found.extend(n for n in opened[1:] if lines[n].strip() and _is_assignment(lines[n].strip()))
    return sorted(found)


def _text_after_let(line: str) -> bool:
    """`\\let` takes two tokens; text after them is the line's own (a paper's
    `\\let\\thefootnote\\relax\\footnotetext{Funded by ...}`)."""
    match = _LET.match(line)
    return match is not None and bool(_SETUP_PARTS.sub("", line[match.end() :]))


def _brace_balance(line: str) -> int:
    line = line.replace("\\{", "").replace("\\}", "")
    return line.count("{") - line.count("}")


def _is_assignment(line: str) -> bool:
    if _SETUP_PARTS.sub("", line):
        return False  # a word of text remains
    return "=" in line or " by " in line or bool(_CONDITIONAL.search(line))


def _first_line(builder: MarkdownBuilder) -> str:
    """The first line of text, when it is short enough to be a title."""
    for line in builder.lines:
        text = " ".join(line.lstrip("#").split())
        if text:
            return text if len(text) <= TITLE_CHARS else ""
    return ""


def _body_range(lines: list[str], raw: list[str]) -> tuple[int, int]:
    """Lines between \\begin{document} and \\end{document}; the whole file when it has none.
    Text on the same line as either marker stays in the body (a one-line document is a
    document): those lines are cut at the marker, in `lines` and `raw` alike."""
    begin, finish = "\\begin{document}", "\\end{document}"
    start = next((n for n, line in enumerate(lines) if begin in line), None)
    if start is None:
        return 0, len(lines)
    _cut_line(lines, raw, start, after=begin)
    for number in range(start, len(lines)):
        if finish in lines[number]:
            _cut_line(lines, raw, number, before=finish)
            return start, number + 1
    return start, len(lines)


def _cut_line(
    lines: list[str], raw: list[str], number: int, after: str = "", before: str = ""
) -> None:
    for texts in (lines, raw):
        text = texts[number]
        if after and after in text:
            text = text.split(after, 1)[1]
        if before and before in text:
            text = text.split(before, 1)[0]
        texts[number] = text


def _preamble_fields(preamble: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for name in _PREAMBLE_FIELDS:
        match = re.search(r"\\" + name + r"\s*(?:\[[^\]]*\])?\s*\{", preamble)
        if match:
            argument = _braced(preamble, match.end() - 1)
            parts = re.split(r"\\and\b|\\\\", argument) if name == "author" else [argument]
            texts = [_SPACES.sub(" ", to_text(part)).strip() for part in parts]
            text = ", ".join(t for t in texts if t)
            if text:
                fields[name] = text
    return fields


def _level_map(lines: list[str]) -> dict[str, int]:
    """Markdown level per sectioning command: the highest one used becomes `#`."""
    used = {m.group(1) for line in lines for m in [_SECTION.match(line.lstrip())] if m}
    top = min((SECTION_LEVELS[name] for name in used), default=0)
    return {name: max(1, level - top + 1) for name, level in SECTION_LEVELS.items()}


def _convert_from(
    lines: list[str],
    raw: list[str],
    start: int,
    end: int,
    levels: dict[str, int],
    builder: MarkdownBuilder,
) -> int:
    """Convert what starts at line `start` (a heading, a verbatim block or a paragraph);
    return the index of the next line to look at. `lines` lost their comments; `raw` did not."""
    line = lines[start].strip()
    if not line:
        return start + 1
    section = _SECTION.match(line)
    if section:
        title = _braced(line, section.end() - 1)
        builder.heading(levels[section.group(1)], to_text(title), Origin(start + 1, start + 1))
        rest = line[section.end() + len(title) + 1 :].strip()
        if rest:
            builder.block(_clean(to_text(rest)), Origin(start + 1, start + 1))
        return start + 1
    begin = _BEGIN.match(line)
    if begin and begin.group(1) in _VERBATIM:
        return _verbatim(raw, start, end, begin.group(1), builder)
    if begin and begin.group(1) in _NAMED_ENVIRONMENTS:
        builder.heading(
            min(levels["section"], 6), _NAMED_ENVIRONMENTS[begin.group(1)], Origin(start + 1)
        )
    stop = _paragraph_end(lines, start, end)
    text = "\n".join(lines[start:stop])
    builder.block(_clean(to_text(text)), Origin(start + 1, stop))
    return stop


def _paragraph_end(lines: list[str], start: int, end: int) -> int:
    """A paragraph ends at a blank line outside environments, or before a section command."""
    depth = 0
    index = start
    while index < end:
        line = lines[index]
        stripped = line.strip()
        if index > start and depth <= 0 and (not stripped or _SECTION.match(stripped)):
            break
        if index > start and depth <= 0 and _starts_special(stripped):
            break
        depth += len(_BEGIN.findall(line)) - len(_END.findall(line))
        index += 1
    return index


def _starts_special(line: str) -> bool:
    begin = _BEGIN.match(line)
    return bool(begin) and (begin.group(1) in _VERBATIM or begin.group(1) in _NAMED_ENVIRONMENTS)


def _verbatim(lines: list[str], start: int, end: int, name: str, builder: MarkdownBuilder) -> int:
    closing = "\\end{" + name + "}"
    stop = next((i for i in range(start + 1, end) if closing in lines[i]), end)
    if name != "comment":
        code = "\n".join(lines[start + 1 : stop]).strip("\n")
        fence = "~~~" if "```" in code else "```"
        builder.block(f"{fence}\n{code}\n{fence}", Origin(start + 1, min(stop + 1, end)))
    return stop + 1


def _braced(text: str, open_index: int) -> str:
    """The argument in braces that opens at `open_index` (to the end of text if unbalanced)."""
    depth = 0
    for index in range(open_index, len(text)):
        char = text[index]
        if char == "{" and text[index - 1 : index] != "\\":
            depth += 1
        elif char == "}" and text[index - 1 : index] != "\\":
            depth -= 1
            if depth == 0:
                return text[open_index + 1 : index]
    return text[open_index + 1 :]


def _clean(text: str) -> str:
    text = _SPACE_BEFORE_PUNCTUATION.sub(r"\1", text)
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    kept: list[str] = []
    for line in lines:
        if line or (kept and kept[-1]):
            kept.append(_escape(line))
    return "\n".join(kept).strip()


_UNDERLINE = re.compile(r"[=-]+")


def _escape(line: str) -> str:
    """Text that Markdown would read as a heading (also a setext underline: `==`), a fence or
    a table stays text."""
    if line.startswith(("#", "|", "```", "~~~")) or _UNDERLINE.fullmatch(line):
        return "\\" + line
    return line


def to_text(latex: str) -> str:
    """LaTeX -> plain text with pylatexenc; a block it cannot parse loses only its macros."""
    if len(latex) > MAX_BLOCK_CHARS:
        return _strip_macros(latex)
    from pylatexenc import latexwalker

    walker_context, converter = _pylatexenc()
    try:
        latex = _SPECIALS.sub(lambda m: _SPECIAL_TEXT[m.group(0)], latex)
        walker = latexwalker.LatexWalker(latex, latex_context=walker_context, tolerant_parsing=True)
        nodes, _, _ = walker.get_latex_nodes()
        return converter.nodelist_to_text(nodes)
    except (RecursionError, IndexError, ValueError, latexwalker.LatexWalkerError):
        return _strip_macros(latex)


def _strip_macros(latex: str) -> str:
    return re.sub(r"\\[A-Za-z]+\*?|[{}$]", " ", latex)


@functools.cache
def _pylatexenc() -> tuple[Any, Any]:
    from pylatexenc import latexwalker, macrospec
    from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec
    from pylatexenc.latex2text import get_default_latex_context_db as text_context

    # Without "specials" (~, &, ``, --) the walker is 1.6x faster; to_text replaces the few
    # that matter before walking.
    walker_context = latexwalker.get_default_latex_context_db().filter_context(
        keep_which=["macros", "environments"]
    )
    walker_context.add_context_category(
        "kb",
        prepend=True,
        macros=[
            macrospec.MacroSpec("href", "{{"),
            macrospec.MacroSpec("includegraphics", "[{"),
            macrospec.MacroSpec("bibitem", "[{"),
        ],
    )
    context = text_context()
    context.add_context_category(
        "kb",
        prepend=True,
        macros=[MacroTextSpec(name, "") for name in _DROPPED_MACROS]
        + [
            MacroTextSpec("href", simplify_repl="%(2)s"),
            MacroTextSpec("url", simplify_repl="%(1)s"),
        ]
        + [MacroTextSpec(name, simplify_repl=text) for name, text in _SPACING_MACROS.items()],
    )
    return walker_context, LatexNodes2Text(latex_context=context, math_mode="text")


def parse_latex_source(source: Source) -> ParsedDocument:
    return parse_latex(source)
