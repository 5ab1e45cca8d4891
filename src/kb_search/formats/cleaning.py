"""The one rule set that makes converted text read as a reader sees it.

Every converter that builds Markdown from another format goes through here:

- HTML (pages, EPUB chapters, e-mail HTML parts) is parsed by lxml's HTML parser and walked
  into Markdown blocks that remember their source lines (`Element.sourceline`): navigation,
  page headers and footers, breadcrumbs, tables of contents and pure link lists are dropped;
  link text is kept and link targets are not; `<pre>` is a fenced block of its text (markup
  inside a synopsis is read as text); tables are pipe tables by rows with `|` escaped;
  entities are decoded by the parser.
- Markdown written by other converters (Docling's office output, notebook cells, ODF, ...)
  is cleaned line by line outside fences and code spans (`clean_markdown_lines`): link and
  image syntax gives way to its text, HTML entities are decoded, and a line that is nothing
  but links (a navigation row) is blanked. Lines are never added or removed, so the line
  maps of the converters stay true.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import lxml.html
from lxml import etree

from kb_search.errors import IngestError
from kb_search.formats import sniff
from kb_search.sanitize import printable

# Never visible text, or site chrome.
DROP_TAGS = frozenset(
    {
        "script", "style", "noscript", "template", "svg", "iframe", "nav", "footer", "head",
        "title", "button", "select", "option", "textarea", "input", "form", "object", "embed",
        "canvas", "map", "dialog",
    }
)  # fmt: skip
BLOCK_TAGS = frozenset(
    {
        "p", "div", "section", "article", "main", "header", "aside", "blockquote", "figure",
        "figcaption", "address", "details", "summary", "fieldset", "body", "html", "center",
        "caption", "hr", "dd", "dt", "li", "tbody", "thead", "tfoot", "tr", "td", "th",
    }
)  # fmt: skip
HEADING_TAGS = {f"h{n}": n for n in range(1, 7)}
LIST_TAGS = frozenset({"ul", "ol", "menu"})
CODE_TAGS = frozenset({"code", "kbd", "samp", "tt"})
# class/id/role words of site chrome (a word is delimited by spaces, '-' or '_').
_CHROME_WORDS = re.compile(
    r"(?:^|[\s_-])(nav|navbar|navheader|navfooter|navigation|breadcrumbs?|menu|sidebar|"
    r"sphinxsidebar|toc|footer|masthead|skip|pagination|pager|cookie|banner|related|"
    r"contentinfo|search)(?:$|[\s_-])",
    re.IGNORECASE,
)
_HEADER_WORDS = re.compile(r"(?:^|[\s_-])header(?:$|[\s_-])", re.IGNORECASE)
CHROME_CONTAINERS = frozenset({"div", "section", "ul", "ol", "table", "aside", "header", "dl"})
# A list or table whose text is this share link text (and has this many links) is a link list.
LINK_LIST_SHARE = 0.85
LINK_LIST_MIN_LINKS = 3
_SPACE = re.compile(r"\s+")
# Levels of nesting walked as structure (the walk recurses per level); a page nested deeper
# is read as plain paragraphs.
MAX_WALKED_DEPTH = 200
BREAK = "\x00"  # a <br>: the only line break inside a paragraph (source newlines are spaces)
_CODE_LANGUAGE = re.compile(r"(?:^|\s)(?:language|lang|highlight)-([\w+#.-]+)")
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
# Converted text that Markdown would read as structure (a heading, table, fence, rule).
_MARKDOWN_LOOKALIKE = re.compile(r"^(#|\||```|~~~|[-=*_]{3,}\s*$)")


@dataclass(frozen=True)
class Line:
    """One Markdown line and the source lines (1-based, inclusive) it stands for."""

    text: str
    first: int | None = None
    last: int | None = None


@dataclass
class HtmlPage:
    """An HTML page as Markdown blocks (each a list of located lines) and its head."""

    blocks: list[list[Line]] = field(default_factory=list)
    title: str | None = None
    language: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)

    @property
    def markdown(self) -> str:
        return "\n\n".join("\n".join(line.text for line in block) for block in self.blocks) + "\n"


def read_html(text: str) -> HtmlPage:
    """The page's text as located Markdown blocks, chrome and link markup left out."""
    page = HtmlPage()
    root = _parse(text)
    if root is None:
        return page
    _read_head(root, page)
    if sniff.declares_docbook(text):  # not an HTML5 page whose body opens with <article>
        _docbook_as_html(root)
    body = root.find("body")
    top = body if body is not None else root
    if _too_deep(root):
        page.blocks = _plain_blocks(top)
        return page
    # A page that is nothing but a table of contents keeps it (as link text): it is the page.
    for link_lists in (False, True):
        walker = _Walker(page.blocks, link_lists)
        walker.container(top)
        walker.flush()
        if page.blocks:
            break
    return page


# DocBook XML (`sniff.declares_docbook`) read through the HTML reader: its elements renamed to the
# HTML ones that mean the same, so that sections have headings and each block its own lines.
_DOCBOOK_ROOTS = ("article", "book", "chapter", "refentry", "part", "reference")
_DOCBOOK_SECTIONS = frozenset({
    "article", "book", "part", "chapter", "appendix", "preface", "reference", "refentry",
    "section", "sect1", "sect2", "sect3", "sect4", "sect5", "refsect1", "refsect2",
    "refsect3", "refsection", "simplesect", "glossary", "bibliography",
})  # fmt: skip
_DOCBOOK_TAGS = {
    "para": "p", "simpara": "p", "formalpara": "div", "itemizedlist": "ul",
    "orderedlist": "ol", "listitem": "li", "variablelist": "ul", "varlistentry": "li",
    "term": "p", "programlisting": "pre", "screen": "pre", "literallayout": "pre",
    "synopsis": "pre", "informaltable": "table", "row": "tr", "entry": "td", "ulink": "a",
    "note": "blockquote", "warning": "blockquote", "tip": "blockquote", "important": "blockquote",
    "caution": "blockquote", "tgroup": "tbody",
}  # fmt: skip
# DocBook's other block elements: read as blocks (an unknown element is read inline).
_DOCBOOK_BLOCKS = frozenset({
    "articleinfo", "bookinfo", "info", "authorgroup", "author", "corpauthor", "abstract",
    "legalnotice", "revhistory", "revision", "example", "informalexample", "figure",
    "mediaobject", "imageobject", "textobject", "sidebar", "qandaset", "qandaentry",
    "question", "answer", "procedure", "step", "substeps", "glosslist", "glossentry",
    "glossdef", "bibliodiv", "biblioentry", "bibliomixed", "refnamediv", "refsynopsisdiv",
    "cmdsynopsis", "funcsynopsis", "calloutlist", "callout", "simplelist", "member",
})  # fmt: skip


def _docbook_as_html(root: etree._Element) -> None:
    top = root.find("body")
    first = top[0] if top is not None and len(top) else None
    if first is None or first.tag not in _DOCBOOK_ROOTS:
        return
    if top is not None and (top.text or "").strip() == "]>":
        top.text = None  # the end of the doctype's internal subset (its entities)
    elements = [e for e in first.iter() if isinstance(e.tag, str)]
    for element in elements:  # titles first: their depth is read from the DocBook tags
        if element.tag == "title":
            depth = sum(1 for a in element.iterancestors() if a.tag in _DOCBOOK_SECTIONS)
            parent = element.getparent()
            section_title = parent is not None and parent.tag in _DOCBOOK_SECTIONS
            element.tag = f"h{min(6, max(1, depth))}" if section_title else "p"
    for element in elements:
        if element.tag in _DOCBOOK_TAGS:
            element.tag = _DOCBOOK_TAGS[element.tag]
        elif element.tag in _DOCBOOK_SECTIONS:
            element.tag = "section"
        elif element.tag in _DOCBOOK_BLOCKS:
            element.tag = "div"


def _parse(text: str) -> etree._Element | None:
    """The page's tree; None for a page of nothing.
    Raises IngestError for a page libxml2 gives up on (nested deeper than its 2,048 levels):
    its text would be lost, and a lost page is a failure, never an empty file."""
    # lxml refuses str input that declares an encoding; keep its newlines for the line map.
    text = _XML_DECLARATION.sub(lambda m: "\n" * m.group(0).count("\n"), text, count=1)
    if not text.strip():
        return None
    # huge_tree: libxml2's default limits (256 levels, 10 MB text nodes) drop the whole page
    # silently; the file size cap and the worker's memory limit bound what it may hold.
    parser = lxml.html.HTMLParser(
        remove_comments=True, remove_pis=True, recover=True, huge_tree=True
    )
    try:
        root = lxml.html.document_fromstring(text, parser=parser)
    except (etree.ParserError, ValueError):
        return None
    fatal = [e for e in parser.error_log if e.level == etree.ErrorLevels.FATAL]
    if fatal:
        reason = fatal[0].message.split(",")[0].strip()
        raise IngestError(f"cannot read this HTML: {printable(reason)} (libxml2's limit)")
    return root


def _too_deep(root: etree._Element) -> bool:
    return bool(root.xpath("/".join(["*"] * MAX_WALKED_DEPTH)))


def _plain_blocks(top: etree._Element) -> list[list[Line]]:
    """A page nested too deep for the walk (which recurses per level) read without
    recursion: its text in order, a paragraph per block element, chrome left out."""
    blocks: list[list[Line]] = []
    run: list[str] = []
    first: list[int | None] = [None]

    def flush() -> None:
        text = _flat("".join(run))
        if text:
            blocks.append([Line(_escape(text), first[0], first[0])])
        run.clear()
        first[0] = None

    walk = etree.iterwalk(top, events=("start", "end"))
    for event, element in walk:
        tag = _tag(element)
        if event == "start":
            if not tag or tag in DROP_TAGS:
                walk.skip_subtree()
                continue
            if tag not in BLOCK_TAGS and tag not in HEADING_TAGS and tag not in LIST_TAGS:
                run.append(element.text or "")
                continue
            flush()
            first[0] = element.sourceline
            run.append(element.text or "")
        else:
            if tag in BLOCK_TAGS or tag in HEADING_TAGS or tag in LIST_TAGS or tag == "pre":
                flush()
            run.append(" " + (element.tail or "") if element is not top else "")
    flush()
    return blocks


_TEMPLATE_CODE = re.compile(r"\{\{|\{%")  # Jinja, Django, Liquid, Handlebars


def _read_head(root: etree._Element, page: HtmlPage) -> None:
    page.language = (
        root.get("lang") or root.get("{http://www.w3.org/XML/1998/namespace}lang") or ""
    ).strip() or None
    title = root.find(".//title")
    if title is not None:
        page.title = _SPACE.sub(" ", title.text_content()).strip() or None
        if page.title and _TEMPLATE_CODE.search(page.title):
            page.title = None  # a template's (`{{ page.title }}`): the page has none yet
    for meta in root.iter("meta"):
        name = (meta.get("name") or meta.get("property") or "").lower()
        content = _SPACE.sub(" ", meta.get("content") or "").strip()
        if name in ("description", "keywords", "author", "og:title") and content:
            page.metadata[name] = content
    keywords = page.metadata.pop("keywords", "")
    og_title = page.metadata.pop("og:title", None)
    page.title = page.title or og_title
    # Texinfo writes each page's title as its keywords: a tag that names one page groups nothing
    title = (page.title or "").casefold()
    tags = [t.strip() for t in keywords.split(",") if t.strip()]
    page.tags = [t for t in tags if t.casefold() != title]


def _tag(element: etree._Element) -> str:
    return element.tag.lower() if isinstance(element.tag, str) else ""


def is_chrome(element: etree._Element, keep_link_lists: bool = False) -> bool:
    """Navigation, page header/footer, breadcrumbs, a table of contents or a link list."""
    tag = _tag(element)
    if tag in DROP_TAGS or element.get("hidden") is not None:
        return True
    if element.get("aria-hidden") == "true":
        return True
    if tag not in CHROME_CONTAINERS:
        return tag == "a" and _is_symbol_link(element)
    words = " ".join(filter(None, (element.get("class"), element.get("id"), element.get("role"))))
    if _CHROME_WORDS.search(words):
        return True
    if (tag == "header" or _HEADER_WORDS.search(words)) and not _has_heading(element, 1):
        return True
    listing = tag in ("ul", "ol", "dl", "table", "div")
    return listing and not keep_link_lists and is_link_list(element)


def _is_symbol_link(element: etree._Element) -> bool:
    """A permalink marker (`¶`, `#`, `🔗`): no words of its own."""
    text = element.text_content().strip()
    return 0 < len(text) <= 2 and not any(ch.isalnum() for ch in text)


def _has_heading(element: etree._Element, up_to: int = 6) -> bool:
    return any(_tag(e) in HEADING_TAGS and HEADING_TAGS[_tag(e)] <= up_to for e in element.iter())


def is_link_list(element: etree._Element) -> bool:
    """Mostly link text, with several links: a table of contents, a menu, a Prev/Next row."""
    links = [a for a in element.iter("a") if a.get("href") is not None]
    if len(links) < LINK_LIST_MIN_LINKS:
        return False
    total = len(_SPACE.sub("", element.text_content()))
    linked = sum(len(_SPACE.sub("", a.text_content())) for a in links)
    return total > 0 and linked >= LINK_LIST_SHARE * total


def _last_line(element: etree._Element) -> int | None:
    """The last source line an element's text reaches (lxml knows where elements start)."""
    last = None
    for node in element.iter():
        line = node.sourceline
        if line is None:
            continue
        line += (node.text or "").rstrip().count("\n")
        last = line if last is None else max(last, line)
    return last


class _Walker:
    """Walks block elements, collecting inline text into paragraphs between them."""

    def __init__(self, blocks: list[list[Line]], keep_link_lists: bool = False):
        self.blocks = blocks
        self.keep_link_lists = keep_link_lists
        self.inline: list[str] = []
        # where each located run starts in the paragraph's text, and its source lines: a
        # line broken off by <br> is cited by its own lines (a DocBook `literallayout` is
        # one <p> of 4,500 <br> lines, each chunk of it had cited all of them)
        self.located: list[tuple[int, int, int, int]] = []
        self.size = 0

    # -- inline runs
    def add_text(self, text: str, line: int | None, last: int | None = None) -> None:
        if not text:
            return
        self.inline.append(text.replace("\n", " "))
        offset, self.size = self.size, self.size + len(text)
        if not text.strip() or line is None:
            return
        start = line + text[: len(text) - len(text.lstrip())].count("\n")
        end = (last if last is not None else line) + text.rstrip().count("\n") * (last is None)
        self.located.append((offset, self.size, start, max(end, start)))

    def flush(self) -> None:
        raw, located = "".join(self.inline), self.located
        self.inline, self.located, self.size = [], [], 0
        lines: list[Line] = []
        offset = run = 0  # runs are in text order: one sweep pairs them with the lines
        for part in raw.split(BREAK):
            begin, end = offset, offset + len(part)
            offset = end + 1
            while run < len(located) and located[run][1] <= begin:
                run += 1
            text = _SPACE.sub(" ", part).strip()
            if not text or text == "``":
                continue
            first = last = None
            ahead = run
            while ahead < len(located) and located[ahead][0] < end:
                start, stop = located[ahead][2], located[ahead][3]
                first = start if first is None else min(first, start)
                last = stop if last is None else max(last, stop)
                ahead += 1
            lines.append(Line(_escape(text), first, last))
        if lines:
            self.blocks.append(lines)

    # -- blocks
    def container(self, element: etree._Element) -> None:
        self.add_text(element.text or "", element.sourceline)
        for child in element:
            self.child(child)
            if child.tail:
                self.add_text(child.tail, _last_line(child) or element.sourceline)

    def child(self, child: etree._Element) -> None:
        tag = _tag(child)
        if not tag or is_chrome(child, self.keep_link_lists):
            return
        if tag in HEADING_TAGS:
            self.heading(child, HEADING_TAGS[tag])
        elif tag == "pre":
            self.flush()
            self.blocks.append(pre_block(child))
        elif tag == "table":
            self.flush()
            self.table(child)
        elif tag in LIST_TAGS:
            self.flush()
            self.blocks.append(list(list_lines(child, 0)))
        elif tag == "dl":
            self.flush()
            self.container(child)
            self.flush()
        elif tag == "br":
            self.add_text(BREAK, None)
        elif tag in BLOCK_TAGS:
            self.flush()
            self.container(child)
            self.flush()
        else:
            self.add_text(_inline_child(child, tag, False), child.sourceline, _last_line(child))

    def heading(self, element: etree._Element, level: int) -> None:
        self.flush()
        title = _flat(inline_text(element))
        if title:
            line = Line(f"{'#' * level} {title}", element.sourceline, _last_line(element))
            self.blocks.append([line])

    def table(self, element: etree._Element) -> None:
        caption = element.find("caption")
        if caption is not None:
            text = _flat(inline_text(caption))
            if text:
                self.blocks.append([Line(_escape(text), caption.sourceline, _last_line(caption))])
        rows = table_lines(element)
        if rows:
            self.blocks.append(rows)


def inline_text(element: etree._Element, in_code: bool = False) -> str:
    """An element's text as a reader sees it: link text without targets, `code` marked,
    line breaks kept, chrome and images left out."""
    parts = [element.text or ""]
    for child in element:
        tag = _tag(child)
        if tag == "br":
            parts.append(BREAK)
        elif tag and not is_chrome(child) and tag != "img":
            parts.append(_inline_child(child, tag, in_code))
        parts.append(child.tail or "")
    return "".join(parts)


def _inline_child(child: etree._Element, tag: str, in_code: bool) -> str:
    if tag in CODE_TAGS and not in_code:
        code = _SPACE.sub(" ", child.text_content()).strip()
        return f"`{code}`" if code and "`" not in code else code
    text = inline_text(child, in_code)
    if tag in BLOCK_TAGS or tag in HEADING_TAGS or tag in LIST_TAGS or tag == "pre":
        return f" {text} "
    return text


def pre_block(element: etree._Element) -> list[Line]:
    """A `<pre>` as a fenced block of its text; markup inside it (a synopsis's
    `<em class="replaceable">`) is read as text, never as Markdown."""
    code = element.text_content().replace("\xa0", " ").replace("\r\n", "\n")
    first = element.sourceline
    leading = len(code) - len(code.lstrip("\n"))
    code = code.strip("\n").rstrip()
    if not code.strip():
        return []
    start = first + leading if first is not None else None
    fence = "```" if "```" not in code else "~~~"
    while fence in code:
        fence += "`"
    language = _code_language(element)
    lines = [Line(f"{fence}{language}", start, start)]
    for offset, text in enumerate(code.split("\n")):
        number = start + offset if start is not None else None
        lines.append(Line(text, number, number))
    end = lines[-1].first
    return lines + [Line(fence, end, end)]


def _code_language(element: etree._Element) -> str:
    for node in (element, *element.iter("code")):
        match = _CODE_LANGUAGE.search(node.get("class") or "")
        if match:
            return match.group(1)
    return ""


def list_lines(element: etree._Element, depth: int) -> Iterator[Line]:
    ordered = _tag(element) == "ol"
    number = _int(element.get("start"), 1)
    for item in element:
        if _tag(item) != "li" or is_chrome(item):
            continue
        marker = f"{number}." if ordered else "-"
        number += 1
        nested = [c for c in item if _tag(c) in LIST_TAGS and not is_chrome(c)]
        text = _flat(_text_without(item, nested))
        if text:
            yield Line(f"{'  ' * depth}{marker} {text}", item.sourceline, _item_last(item, nested))
        for child in nested:
            yield from list_lines(child, depth + 1)


def _text_without(item: etree._Element, nested: list[etree._Element]) -> str:
    if not nested:
        return inline_text(item)
    parts = [item.text or ""]
    for child in item:
        if child not in nested and _tag(child) and not is_chrome(child) and _tag(child) != "img":
            parts.append(_inline_child(child, _tag(child), False))
        parts.append(child.tail or "" if child not in nested else "")
    return "".join(parts)


def _item_last(item: etree._Element, nested: list[etree._Element]) -> int | None:
    if not nested:
        return _last_line(item)
    before = nested[0].sourceline
    last = item.sourceline
    return max(last, before - 1) if before is not None and last is not None else last


def table_lines(element: etree._Element) -> list[Line]:
    """A table by rows as a pipe table; the first row is the header (Markdown needs one)."""
    rows: list[tuple[list[str], etree._Element]] = []
    for row in _rows(element):
        cells: list[str] = []
        for cell in row:
            if _tag(cell) not in ("td", "th"):
                continue
            text = _flat(inline_text(cell)).replace("|", "\\|")
            cells.extend([text] + [""] * (_int(cell.get("colspan"), 1, 50) - 1))
        if any(cells):
            rows.append((cells, row))
    if not rows:
        return []
    width = max(len(cells) for cells, _ in rows)
    lines = []
    for index, (cells, row) in enumerate(rows):
        cells = cells + [""] * (width - len(cells))
        lines.append(Line("| " + " | ".join(cells) + " |", row.sourceline, _last_line(row)))
        if index == 0:
            separator = "| " + " | ".join(["---"] * width) + " |"
            lines.append(Line(separator, row.sourceline, row.sourceline))
    return lines


def _rows(table: etree._Element) -> Iterator[etree._Element]:
    """The table's own rows (not those of a table nested in a cell)."""
    for row in table.iter("tr"):
        owner = next(row.iterancestors("table"), None)
        if owner is table and not is_chrome(row):
            yield row


def _int(value: str | None, default: int, top: int = 1_000_000) -> int:
    try:
        return max(1, min(int(value or default), top))
    except ValueError:
        return default


def _flat(text: str) -> str:
    """Text of one line: breaks and runs of whitespace as single spaces."""
    return _SPACE.sub(" ", text.replace(BREAK, " ")).strip()


def _escape(line: str) -> str:
    return "\\" + line if _MARKDOWN_LOOKALIKE.match(line) else line


# -- Markdown written by other converters
_LINK = re.compile(
    r"(!?)\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]"  # [text] or ![alt], one level of brackets
    r"\((?:[^()\s]|\([^()\s]*\))*(?:\s+\"[^\"\n]*\")?\)"  # (target "title")
)
_REF_LINK = re.compile(r"(?<!\])\[([^\[\]\n]+)\]\[[^\[\]\n]*\]")
_AUTOLINK = re.compile(r"<((?:https?|mailto|ftp):[^>\s]+)>")
_HTML_TAG = re.compile(r"</?(?:a|span|em|strong|b|i|u|sup|sub|br|img|font)(?:\s[^<>\n]*)?/?>", re.I)
_TICKS = re.compile(r"`+")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z][a-zA-Z0-9]{1,31});")
_NAV_ROW = re.compile(r"^[\s|:\-]*$")


def clean_markdown_lines(lines: list[str]) -> list[str]:
    """Link syntax to its text, entities decoded, link-only lines blanked; fences untouched.

    Same number of lines in and out: converters map lines to source locations."""
    out: list[str] = []
    fence: str | None = None
    for line in lines:
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            out.append(line)
        elif opened:
            fence = opened.group(1)
            out.append(line)
        else:
            out.append(clean_markdown_line(line))
    return out


def clean_markdown_line(line: str) -> str:
    """One line of converted Markdown (outside fences), with code spans left as they are."""
    if "[" not in line and "&" not in line and "<" not in line:
        return line
    pieces, last = [], 0
    table = line.lstrip().startswith("|")
    for start, end in code_spans(line):
        pieces.append(_clean_prose(line[last:start], table))
        pieces.append(line[start:end])
        last = end
    pieces.append(_clean_prose(line[last:], table))
    cleaned = "".join(pieces)
    if cleaned != line and _only_links(line):
        return ""
    return cleaned


def code_spans(line: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each code span: a run of backticks, text, and the next run of as many
    backticks. One pass over the runs (a regex with a back-reference backtracked cubically
    on a line of unclosed runs)."""
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(line)]
    following: dict[int, int] = {}  # run index -> the next run of the same length
    last_of: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        size = runs[index][1] - runs[index][0]
        if size in last_of:
            following[index] = last_of[size]
        last_of[size] = index
    index = 0
    while index < len(runs):
        close = following.get(index)
        if close is None:
            index += 1
            continue
        yield runs[index][0], runs[close][1]
        index = close + 1


def _clean_prose(text: str, table: bool) -> str:
    text = _LINK.sub(lambda m: "" if m.group(1) else m.group(2), text)
    text = _REF_LINK.sub(r"\1", text)
    text = _AUTOLINK.sub(r"\1", text)
    text = _HTML_TAG.sub("", text)
    return _ENTITY.sub(lambda m: _decoded(m.group(0), table), text) if "&" in text else text


def _decoded(entity: str, table: bool) -> str:
    """An entity as its character; a pipe inside a table row stays a cell's text (`\\|`)."""
    char = html.unescape(entity)
    return "\\|" if table and char == "|" else char


def _only_links(line: str) -> bool:
    """A row of links and separators only, several of them (`| [Prev](a) | [Next](b) |`)."""
    links = _LINK.findall(line)
    return len(links) >= 2 and bool(_NAV_ROW.match(_LINK.sub("", line)))
