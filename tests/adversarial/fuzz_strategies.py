"""Hostile inputs for the adversarial suite: queries, filter values, document contents."""

from __future__ import annotations

from hypothesis import strategies as st

# Lone surrogates (what a JSON "\ud800" escape or os.fsdecode of a bad byte yields): the
# default text strategy never makes them.
surrogates = st.integers(0xD800, 0xDFFF).map(chr)
controls = st.sampled_from([chr(c) for c in [*range(0x00, 0x20), 0x7F, 0x85, 0x2028, 0x2029]])
any_char = st.one_of(st.characters(), surrogates, controls)

FTS5_SYNTAX = [
    '"', '""', "*", "^", "-", "+", ":", "(", ")", "{", "}", "'", ",", ".", "NEAR(", "NEAR/3(",
    "AND", "OR", "NOT", "title:", "text:", "heading:", "path:", "tag:", "type:", "lang:",
    "language:", "after:", "before:", "-\"", "*\"", "\\", "%", "_", "[", "]", "**", "?",
    "\x00", "\ufffd", "\ufeff", "\u200b", "\u202e",
]
WORDS = [
    "git", "install", "source", "hooks", "pasta", "spaghetti", "backups", "rsync", "the", "a",
    "of", "and", "東京", "天気", "漢字", "晴れ", "שלום", "مرحبا", "😀", "🎉", "main", "fmt",
    "Install", "INSTALL", "naïve", "café", "ß", "İ", "x" * 300,
]
ID_TEXT = ["0", "1", "-1", "9" * 19, "9" * 25, "9" * 5000, "²", "١", "1e3", " 7 ", "0x10"]

fts_token = st.sampled_from(FTS5_SYNTAX)
word = st.sampled_from(WORDS)
filter_token = st.builds(
    lambda key, value: f"{key}:{value}",
    st.sampled_from(["type", "tag", "path", "lang", "language", "after", "before", "TYPE"]),
    st.one_of(
        st.sampled_from(["markdown", "code", "git", "notes", "*.md", "notes/**", "**", "[z-a]",
                         "[", "{a,b}", "2025-01-01", "0001-01-01", "9999-12-31", "2025-13-45",
                         "*" * 30 + "#", "python", "\udcff", "'", '"']),
        st.text(any_char, max_size=12),
    ),
)


def _join(parts: list[str], separators: list[str]) -> str:
    out = []
    for i, part in enumerate(parts):
        out.append(part)
        out.append(separators[i % len(separators)] if separators else " ")
    return "".join(out)


structured_query = st.builds(
    _join,
    st.lists(st.one_of(word, fts_token, filter_token, st.text(any_char, max_size=8)), max_size=14),
    st.lists(st.sampled_from([" ", "", "\t", "\n", "  ", "\u3000"]), min_size=1, max_size=3),
)
huge_query = st.builds(
    lambda piece, times: piece * times,
    st.one_of(word, fts_token, st.text(any_char, min_size=1, max_size=5)).map(lambda w: w + " "),
    st.integers(500, 20_000),
)
raw_fts_query = st.builds(lambda inner: f"'{inner}'", structured_query)
only_stopwords = st.lists(st.sampled_from(["the", "a", "of", "and", "is", "to"]), min_size=1).map(
    " ".join
)

queries = st.one_of(
    st.text(any_char, max_size=60),
    structured_query,
    structured_query,
    raw_fts_query,
    only_stopwords,
    huge_query,
)

filter_value = st.one_of(
    st.sampled_from(["markdown", "text", "code", "rst", "python", "go", "git", "notes", "tools",
                     "*.md", "**/*.py", "notes/**", "deep/**/readme.rst", "[!a]*", "[z-a]", "[",
                     "]", "{", "\\", "*" * 40 + "a", "**/" * 30, "/", "//", "./notes/*", "../*",
                     "2025-01-01", "1970-01-01T00:00:00+14:00", "0001-01-01", "9999-12-31",
                     "2025-02-30", "yesterday", "", " "]),
    st.text(any_char, max_size=20),
)
filter_lists = st.lists(filter_value, max_size=3)

# ---- documents ------------------------------------------------------------------------------

SUFFIXES = [".md", ".txt", ".rst", ".html", ".py", ".go", ".json", ".csv", ".yaml", ".xml",
            ".js", ".sh", ".toml", ".tex", ".rtf", ".eml", ".ini", ""]

line_text = st.one_of(
    st.text(st.characters(blacklist_characters="\n\r"), max_size=80),
    st.lists(word, min_size=1, max_size=20).map(" ".join),
)
# Words that fit in a chunk, and lines that cannot open a block of their own.
short_word = st.sampled_from([w for w in WORDS if len(w) < 40])
plain_line = st.lists(short_word, min_size=1, max_size=20).map(" ".join)


@st.composite
def markdown_document(draw, hostile: bool = True) -> str:
    """Random Markdown structure: headings, paragraphs, nested lists, tables (ragged too),
    fences (open, nested, unclosed), quotes, HTML blocks, front matter, giant lines.
    `hostile=False` keeps to what the chunk invariants specify: closed fences, words that fit
    a chunk, no giant lines."""
    line_text = globals()["line_text"] if hostile else plain_line
    word = globals()["word"] if hostile else short_word
    blocks: list[str] = []
    if draw(st.booleans()):
        blocks.append(draw(st.sampled_from([
            "---\ntitle: T\ntags: [a, b]\n---",
            "---\ntags: \"x\"\n---",
            "---\n: : :\n---",
            "---\na: &a [*a]\n---",
            "---\ntitle: [unclosed\n---",
            "---",
        ])))
    for _ in range(draw(st.integers(0, 12))):
        kinds = ["heading", "para", "list", "table", "fence", "quote", "html", "blank"]
        kind = draw(st.sampled_from([*kinds, "giant"] if hostile else kinds))
        if kind == "heading":
            level = draw(st.integers(1, 7))
            blocks.append("#" * level + " " + draw(line_text) + draw(st.sampled_from(["", " ##"])))
        elif kind == "para":
            blocks.append("\n".join(draw(st.lists(line_text, min_size=1, max_size=6))))
        elif kind == "list":
            depth = draw(st.integers(1, 60))
            marker = draw(st.sampled_from(["-", "*", "1.", "+"]))
            blocks.append("\n".join("  " * (i % depth) + f"{marker} {draw(word)}"
                                    for i in range(draw(st.integers(1, 80)))))
        elif kind == "table":
            cols = draw(st.integers(1, 12))
            rows = draw(st.integers(0, 60))
            sep = draw(st.sampled_from(["|---" * cols + "|", "|" + "-" * 100 + "|", ""]))
            lines = ["|" + "|".join(draw(word) for _ in range(cols)) + "|"]
            lines += [sep] if sep else []
            lines += ["|" + "|".join(draw(st.sampled_from(["", "x", "a b", "|", "`|`"]))
                                     for _ in range(draw(st.integers(0, cols + 2)))) + "|"
                      for _ in range(rows)]
            blocks.append("\n".join(lines))
        elif kind == "fence":
            fence = draw(st.sampled_from(["```", "~~~", "````", "```python", "~~~~~"]))
            body = "\n".join(draw(st.lists(line_text, max_size=10)))
            closed = fence.removesuffix("python")
            closes = [fence[:3], fence, "", "```", "~~~"] if hostile else [closed]
            close = draw(st.sampled_from(closes))
            blocks.append(f"{fence}\n{body}\n{close}".rstrip("\n"))
        elif kind == "quote":
            depth = draw(st.integers(1, 40))
            blocks.append("\n".join(">" * depth + " " + draw(line_text) for _ in range(3)))
        elif kind == "html":
            depth = draw(st.integers(1, 300))
            blocks.append("<div>" * depth + draw(word) + "</div>" * draw(st.integers(0, depth)))
        elif kind == "giant":
            # Not "`": a giant fence line cut by the character cap has no balanced fences
            # to keep.
            piece = draw(st.sampled_from(["x", "word ", "漢", "😀", "a|", "#", "~ "]))
            blocks.append(piece * draw(st.integers(1_000, 60_000)))
        else:
            blocks.append("")
    return "\n\n".join(blocks) + draw(st.sampled_from(["", "\n", "\r\n", "\n\n\n"]))


@st.composite
def html_document(draw) -> str:
    depth = draw(st.integers(0, 400))
    tag = draw(st.sampled_from(["div", "ul><li", "table><tr><td", "section", "span", "p"]))
    inner = draw(st.lists(line_text, max_size=5))
    head = draw(
        st.sampled_from(["", "<title>T</title>", "<title></title>", "<title>" + "t" * 5000])
    )
    script = draw(st.sampled_from(["", "<script>var x = '</div>';</script>", "<style>p{}</style>"]))
    return (f"<html><head>{head}</head><body>{script}" + f"<{tag}>" * depth + " ".join(inner)
            + "</div>" * (depth // 2) + "<!-- unclosed comment" * draw(st.integers(0, 1)))


def _encode(text: str, encoding: str) -> bytes:
    # surrogatepass: lone surrogates become the invalid byte sequences a broken file holds.
    return text.encode(encoding, errors="replace" if encoding == "latin-1" else "surrogatepass")


document_bytes = st.one_of(
    st.binary(max_size=4096),
    st.builds(_encode, markdown_document(), st.sampled_from(["utf-8", "utf-8", "utf-16", "latin-1",
                                                             "utf-16-le"])),
    st.builds(_encode, html_document(), st.just("utf-8")),
    st.builds(lambda t: _encode(t, "utf-8"), st.text(any_char, max_size=2000)),
)
