"""AsciiDoc: a line-for-line conversion to Markdown, then the Markdown chunker.

`= Title` / `== Section` become `#` / `##`, as do two-line titles (`Title` over `=====`,
`Section` over `-------`, then `~`, `^`, `+`: AsciiDoc's older style, git's manual pages);
the header's author line and attributes (`:author:`, `:keywords:`, `:description:` ...)
become metadata and tags; listing and literal blocks become fences (with the language of a
`[source,LANG]` line); comments, attribute lines, block delimiters and `include::` directives
are dropped; inline macros keep their text (a project's own, `linkgit:git-log[1]`, as
`git-log(1)`). A `.txt` written in AsciiDoc is read so too (`looks_like_asciidoc`). Every
converted line stands for its own line of the file. No library: the only full AsciiDoc
implementation (Asciidoctor) is Ruby, and the Python ports are unmaintained.
"""

from __future__ import annotations

import re

from kb_search.formats.converted import MarkdownBuilder
from kb_search.formats.registry import Source
from kb_search.parsed import ParsedDocument

_SECTION = re.compile(r"^(={1,6})\s+(\S.*?)\s*=*\s*$")
_ATTRIBUTE = re.compile(r"^:(!?[\w-]+!?):\s*(.*)$")
_BLOCK_ATTRIBUTES = re.compile(r"^\[[^\]]*\]\s*$")
_SOURCE_STYLE = re.compile(r"^\[(?:source|listing)?\s*,\s*([\w+#.-]+)", re.I)
_BLOCK_TITLE = re.compile(r"^\.([^\s.].*)$")
_DIRECTIVE = re.compile(r"^(include|ifdef|ifndef|ifeval|endif|toc)::")
_PLAIN_DELIMITERS = ("====", "****", "____", "++++", "--", "|===", ",===", ":===", "!===")
_RULES = ({"="}, {"*"}, {"_"}, {"+"})
# Linear on any line: no class runs past the next opening bracket, and a target or URL starts
# only after a space or "[" (else every start inside one long run would scan it again).
_MACRO = re.compile(
    r"(?<![^\s\[])(?:link|mailto|xref|image|footnote|kbd|btn|menu|pass):([^\[\s]*)\[([^\[\]]*)\]"
)
_URL = re.compile(r"(?<![^\s\[])(https?://[^\s\[]+)\[([^\[\]]*)\]")
# A project's own inline macro (git's `linkgit:git-log[1]`): its target, then its text in brackets
_CUSTOM_MACRO = re.compile(r"(?<![^\s\[(])[a-z]+:([\w.-]+)\[([^\[\]]*)\]")
_CROSS_REF = re.compile(r"<<([^,<>]+)(?:,\s*([^<>]+))?>>")
_ANCHOR = re.compile(r"\[\[[^\[\]]*\]\]|\[#[^\[\]]*\]")
# Two-line titles: the underline's character gives the level; its length is the title's +-1
# (Asciidoctor's rule: `Run it` over `----` is a line of text, then a listing).
_UNDERLINE_LEVELS = {"=": 1, "-": 2, "~": 3, "^": 4, "+": 5}
_TITLE_TEXT = re.compile(r"^[^\s\[.:/|*+-].*\w")  # not a block title, attribute, comment, list
METADATA_ATTRIBUTES = {"author", "email", "revdate", "revnumber", "description", "lang"}


def parse_asciidoc(source: Source) -> ParsedDocument:
    lines = source.text().split("\n")
    builder = MarkdownBuilder()
    attributes: dict[str, str] = {}
    title = ""
    fence: str | None = None  # the delimiter that closes the open listing/literal block
    comment = False
    language = ""
    in_header = False
    underlined = two_line_titles(lines)
    for number, line in enumerate(lines, start=1):
        stripped = line.rstrip()
        if not comment and not fence and number - 1 in underlined:
            level = underlined[number - 1]
            if level == 1 and not title:
                title, in_header = _inline(stripped), True
            else:
                in_header = False
            builder.line(f"{'#' * level} {_inline(stripped)}", number)
            continue
        if not comment and not fence and number - 2 in underlined:
            builder.line("", number)  # the underline
            continue
        if comment:
            comment = not (len(stripped) >= 4 and set(stripped) == {"/"})
            builder.line("", number)
        elif fence:
            closing = stripped == fence
            builder.line("```" if closing else line, number)
            fence = None if closing else fence
        elif len(stripped) >= 4 and set(stripped) == {"/"}:
            comment = True
            builder.line("", number)
        elif stripped.startswith("```"):
            fence = "```"
            builder.line(stripped, number)
        elif len(stripped) >= 4 and set(stripped) in ({"-"}, {"."}):
            fence = stripped
            builder.line(f"```{language}", number)
            language = ""
        else:
            section = _SECTION.match(stripped)
            if section and not title and len(section.group(1)) == 1:
                title, in_header = _inline(section.group(2)), True
            elif in_header and stripped and not stripped.startswith(":") and not section:
                attributes.setdefault("author", stripped)  # the author line under the title
                in_header = False
                builder.line("", number)
                continue
            # a section title ends the header: the line under it is body, not the author
            in_header = in_header and bool(stripped) and not (section and len(section.group(1)) > 1)
            source_style = _SOURCE_STYLE.match(stripped)
            if source_style:
                language = source_style.group(1)
            builder.line(_convert_line(stripped, attributes), number)
    if fence:
        builder.add("```")
    document = builder.parse(source.name, source.settings, source.count)
    document.title = title or document.title
    document.doc_type = "asciidoc"
    keywords = attributes.pop("keywords", "")
    document.tags = [k.strip() for k in keywords.split(",") if k.strip()]
    document.metadata = {k: v for k, v in attributes.items() if k in METADATA_ATTRIBUTES and v}
    return document


def two_line_titles(lines: list[str]) -> dict[int, int]:
    """Line index -> level of each two-line title: a line of text over a line of one of
    `=-~^+` as long as it (+-1 character), the underline at least two characters."""
    titles = {}
    for index in range(len(lines) - 1):
        text, under = lines[index].rstrip(), lines[index + 1].rstrip()
        if len(under) < 2 or len(set(under)) != 1 or under[0] not in _UNDERLINE_LEVELS:
            continue
        if abs(len(under) - len(text)) <= 1 and _TITLE_TEXT.match(text) and index - 1 not in titles:
            titles[index] = _UNDERLINE_LEVELS[under[0]]
    return titles


# Marks only AsciiDoc has (plain notes, wikis and reST share underlines, `----` rules and
# `:field:` lines, so those are no mark)
_ASCIIDOC_MARKS = re.compile(
    r"^(?:\[(?:verse|source|listing|literal|quote|NOTE|TIP|WARNING|IMPORTANT|CAUTION)\b[^\]]*\]"
    r"|\[\[[\w-]+\]\]|(?:include|ifdef|ifndef|image)::\S.*)$"
    r"|\blinkgit:|<<[\w-]{1,80}(?:,[^<>\n]{0,200})?>>"
)
_RST_DIRECTIVE = re.compile(r"^\.\. (?:[\w-]+::|_[^:]+:)", re.M)


def looks_like_asciidoc(text: str) -> bool:
    """A `.txt` written in AsciiDoc (git's manual pages, many older projects): it opens with a
    document title (`= Title`, or a title over `===`), has a section title and a mark only
    AsciiDoc has (`linkgit:`, a `[verse]`/`[source]` block, `include::`, `<<ref>>`,
    `[[anchor]]`), and no reST directive."""
    head = text[:40_000]
    lines = head.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None or _RST_DIRECTIVE.search(head):
        return False
    titles = two_line_titles(lines)
    opening = titles.get(first) == 1 or bool(re.match(r"^=\s+\S", lines[first]))
    sections = any(index != first and level > 1 for index, level in titles.items())
    sections = sections or bool(re.search(r"^={2,6}\s+\S", head, re.M))
    return opening and sections and any(_ASCIIDOC_MARKS.search(line) for line in lines)


def _convert_line(line: str, attributes: dict[str, str]) -> str:
    section = _SECTION.match(line)
    if section:
        return f"{'#' * len(section.group(1))} {_inline(section.group(2))}"
    attribute = _ATTRIBUTE.match(line)
    if attribute:
        attributes.setdefault(attribute.group(1).lower(), _inline(attribute.group(2)).strip())
        return ""
    if line.startswith("//") or _DIRECTIVE.match(line) or _BLOCK_ATTRIBUTES.match(line):
        return ""
    if line in _PLAIN_DELIMITERS or (len(line) >= 4 and set(line) in _RULES):
        return ""
    block_title = _BLOCK_TITLE.match(line)
    if block_title:
        return _inline(block_title.group(1))
    return _inline(line)


def _inline(text: str) -> str:
    text = _MACRO.sub(lambda m: m.group(2) or m.group(1), text)
    text = _URL.sub(lambda m: m.group(2) or m.group(1), text)
    text = _CUSTOM_MACRO.sub(lambda m: m.group(1) + (f"({m.group(2)})" if m.group(2) else ""), text)
    text = _CROSS_REF.sub(lambda m: m.group(2) or m.group(1), text)
    return _ANCHOR.sub("", text)


def parse_asciidoc_source(source: Source) -> ParsedDocument:
    return parse_asciidoc(source)
