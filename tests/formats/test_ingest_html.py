"""The HTML reader (lxml, `formats/cleaning.py`) and the routing of .html and office files."""

import re
from pathlib import Path

import pytest

from kb_search.formats import docling as docling_convert
from kb_search.formats.html import html_to_markdown, parse_html
from kb_search.ingest import SUPPORTED_EXTENSIONS, detect_type
from kb_search.ingest.parse import parse_file
from kb_search.parsed import ChunkSettings, EmptyFile, IngestError


def words(text: str) -> int:
    return len(text.split())


def filler(n: int, word: str) -> str:
    return " ".join([word] * n)


PAGE = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Config &amp; Guide</title>
<meta name="keywords" content="config, search">
<meta name="description" content="How to configure kb">
<script>var tracking = "SCRIPTTEXT";</script><style>.x {{ color: red }}</style>
</head><body>
<nav><a href="/">NAVTEXT</a></nav>
<h1>Configuration</h1>
<p>{filler(30, "intro")}</p>
<h2>Install</h2>
<p>{filler(30, "install")}</p>
<h3>Linux</h3>
<p>{filler(30, "linux")}</p>
<h2>Reference</h2>
<table><tr><th>Key</th><th>Default</th></tr><tr><td>max_tokens</td><td>200</td></tr></table>
<footer>FOOTERTEXT</footer>
</body></html>
"""


def parse(html: str, max_tokens: int = 200, min_tokens: int = 10, name: str = "page.html"):
    return parse_html(html, Path(name), ChunkSettings(max_tokens, min_tokens), count=words)


def markdown(html: str) -> str:
    return html_to_markdown(html).markdown


def test_head_gives_title_language_tags_and_description():
    doc = parse(PAGE, max_tokens=60)
    assert doc.title == "Config & Guide"
    assert doc.doc_type == "html"
    assert doc.language == "en"
    assert doc.tags == ["config", "search"]
    assert doc.metadata["description"] == "How to configure kb"


def test_chunks_carry_heading_chains_and_the_page_source_lines():
    doc = parse(PAGE, max_tokens=60)
    assert [c.heading for c in doc.chunks] == [
        "Configuration",
        "Configuration > Install",
        "Configuration > Install > Linux",
        "Configuration > Reference",
    ]
    page_lines = PAGE.split("\n")
    for chunk in doc.chunks:
        # The chunk's lines are the page's lines that hold its heading and its text.
        source = "\n".join(page_lines[chunk.line_start - 1 : chunk.line_end])
        heading = chunk.heading.split(" > ")[-1]
        assert f">{heading}</h" in source
        assert re.findall(r"\w+", chunk.text)[-1] in source
    assert all(c.page_start is None for c in doc.chunks)


def test_scripts_styles_nav_footer_and_head_are_dropped():
    text = markdown(PAGE)
    for hidden in ("SCRIPTTEXT", "color: red", "NAVTEXT", "FOOTERTEXT", "Config & Guide"):
        assert hidden not in text


def test_title_falls_back_to_first_h1_then_file_name():
    assert parse("<h2>Sub</h2><h1>Main</h1><p>x</p>").title == "Main"
    assert parse("<p>just text</p>", name="notes.htm").title == "notes"


def test_a_templates_title_is_no_title():
    """Old code: MkDocs' `base.html` was titled `{% if page and page.title %}...`."""
    page = "<html><head><title>{{ page.title }} - {{ config.site_name }}</title></head>"
    assert parse(page + "<body><h1>Main</h1><p>x</p></body></html>").title == "Main"
    assert parse("<title>{% block t %}{% endblock %}</title><p>x</p>", name="base.html").title == (
        "base"
    )
    assert parse("<title>Braces {like this}</title><p>x</p>").title == "Braces {like this}"


def test_an_html5_page_opening_with_article_is_not_read_as_docbook():
    """Fails on the unreviewed code (the page read as nothing): a blog post's `<body><article>`
    was taken for DocBook's root, renamed a `<section>`, and its WordPress class
    `category-search` then made it page chrome. Only a page whose prolog names DocBook is."""
    page = (
        "<!DOCTYPE html><html><head><title>Tuning search</title></head><body>"
        '<article id="post-42" class="post type-post hentry category-search">'
        "<h1>Tuning search</h1><p>BM25 weights the rare words of a query.</p>"
        "<note>an element of the page's own</note> <term>kept inline</term></article></body></html>"
    )
    text = html_to_markdown(page).markdown
    assert "BM25 weights the rare words of a query." in text
    assert "an element of the page's own kept inline" in text
    docbook = (
        '<?xml version="1.0"?><!DOCTYPE article PUBLIC "-//OASIS//DTD DocBook XML V4.5//EN"'
        ' "docbookx.dtd"><article><title>Guide</title><sect1><title>Install</title>'
        "<para>Run make install.</para></sect1></article>"
    )
    assert html_to_markdown(docbook).markdown == "# Guide\n\n## Install\n\nRun make install.\n"


def test_headings_become_atx_levels():
    text = markdown("<h1>One</h1><h2>Two</h2><h3>Three</h3><h6>Six</h6>")
    assert text == "# One\n\n## Two\n\n### Three\n\n###### Six\n"


def test_entities_are_decoded_and_whitespace_collapsed():
    text = markdown("<p>a &lt;b&gt; &amp;&nbsp;c&#233;   \n  d</p>")
    assert text == "a <b> & c\u00e9 d\n"


def test_br_keeps_a_line_break_and_inline_code_gets_backticks():
    assert markdown("<p>one<br>two <code>x = 1</code></p>") == "one\ntwo `x = 1`\n"


def test_lists_nested_and_ordered():
    html = (
        "<ul><li>one</li><li>two<ul><li>nested</li></ul></li></ul>"
        '<ol start="3"><li><p>three</p></li><li>four</ol>'
    )
    assert markdown(html) == "- one\n- two\n  - nested\n\n3. three\n4. four\n"


def test_pre_becomes_fenced_code_with_language_and_exact_whitespace():
    html = '<pre><code class="language-python">def f():\n    return 1 &lt; 2\n</code></pre>'
    assert markdown(html) == "```python\ndef f():\n    return 1 < 2\n```\n"


def test_pre_containing_backticks_uses_tilde_fence():
    assert markdown("<pre>```\ncode\n```</pre>") == "~~~\n```\ncode\n```\n~~~\n"


def test_table_becomes_markdown_table():
    html = (
        "<table><thead><tr><th>Name</th><th>Value</th></tr></thead><tbody>"
        "<tr><td>a|b</td><td>1</td></tr><tr><td colspan=2>wide</td></tr></tbody></table>"
    )
    assert markdown(html) == ("| Name | Value |\n| --- | --- |\n| a\\|b | 1 |\n| wide |  |\n")


def test_table_without_header_cells_promotes_first_row():
    html = "<table><tr><td>x</td><td>y</td></tr><tr><td>1</td></tr></table>"
    assert markdown(html) == "| x | y |\n| --- | --- |\n| 1 |  |\n"


def test_table_is_one_chunk_block_with_its_header():
    rows = "".join(f"<tr><td>row{i}</td><td>{filler(5, 'v')}</td></tr>" for i in range(20))
    html = f"<h1>T</h1><table><tr><th>K</th><th>V</th></tr>{rows}</table>"
    doc = parse(html, max_tokens=60, min_tokens=5)
    assert len(doc.chunks) > 1
    for chunk in doc.chunks:
        assert "| K | V |\n|---|---|" in chunk.text


def test_text_that_looks_like_markdown_is_escaped():
    doc = parse("<h1>Real</h1><p># not a heading</p><p>| not a table</p>")
    assert [c.heading for c in doc.chunks] == ["Real"]
    assert "\\# not a heading" in doc.chunks[0].text


def test_head_without_end_tag_ends_at_body():
    html = "<html><head><title>T</title><body><h1>Visible</h1><p>text</p>"
    doc = parse(html)
    assert doc.title == "T"
    assert "Visible" in doc.chunks[0].text


def test_unclosed_tags_and_self_closing_br():
    text = markdown("<p>one<br/>two<p>three<div>four")
    assert text == "one\ntwo\n\nthree\n\nfour\n"


def test_detect_type_knows_html_and_office_extensions():
    for name, expected in [
        ("a.html", "html"),
        ("a.HTM", "html"),
        ("a.xhtml", "html"),
        ("a.docx", "docx"),
        ("a.pptx", "pptx"),
        ("a.xlsx", "xlsx"),
    ]:
        assert detect_type(Path(name), sniff=False) == expected
    assert {".html", ".htm", ".docx", ".pptx", ".xlsx"} <= SUPPORTED_EXTENSIONS


@pytest.fixture
def no_docling(monkeypatch):
    monkeypatch.setattr(
        docling_convert, "docling_available", lambda doc_type="docx": "docling is not installed"
    )


def test_parse_file_routes_html_to_the_lxml_reader(tmp_path, no_docling):
    path = tmp_path / "page.html"
    path.write_text(PAGE, encoding="utf-8")
    doc = parse_file(path, ChunkSettings(60, 10), count=words)
    assert doc.doc_type == "html"
    assert doc.metadata["converter"] == "lxml"
    assert doc.chunks[0].heading == "Configuration"


def test_html_with_nothing_visible_is_empty(tmp_path, no_docling):
    path = tmp_path / "blank.html"
    path.write_text("<html><head><script>x()</script></head><body></body></html>")
    with pytest.raises(EmptyFile):
        parse_file(path, ChunkSettings(), count=words)


@pytest.mark.parametrize("suffix", [".docx", ".pptx", ".xlsx"])
def test_office_file_without_docling_fails_with_install_hint(tmp_path, no_docling, suffix):
    path = tmp_path / f"report{suffix}"
    path.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(IngestError) as info:
        parse_file(path, ChunkSettings(), count=words)
    message = str(info.value)
    assert message.startswith(f"{suffix[1:].upper()} needs the docling extra")
    assert "pip install 'kb-search[docling]'" in message
    assert "\n" not in message


def test_pdf_path_report_names_the_active_path(monkeypatch, tmp_path):
    from kb_search.formats.docling import pdf_path_report

    for name in ("KB_DOCLING_MODELS", "DOCLING_ARTIFACTS_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DOCLING_CACHE_DIR", str(tmp_path / "no-cache"))
    report = pdf_path_report()
    assert report.startswith("pypdfium2 text layer")
    assert "Docling not used" in report


def test_carriage_return_entities_of_a_docbook_page_keep_its_sections():
    """DocBook's HTML writes `&#13;` before paragraphs and listings (the shared-mime-info
    spec): a lone CR must not shift Markdown's line map (it was an IndexError, a failed file)."""
    sections = "".join(
        f"<h2>2.{i}. Part {i}</h2><p>&#13;Here is part {i} about globs.</p>"
        f"<pre>&#13;&lt;?xml version=\"1.0\"?&gt;\n&lt;mime-info/&gt;</pre>"
        for i in range(1, 8)
    )
    doc = parse(f"<html><body><h1>2. Unified system</h1>{sections}</body></html>", 40, 5)
    headings = {c.heading for c in doc.chunks}
    assert "2. Unified system > 2.7. Part 7" in headings
    assert all("\r" not in c.text for c in doc.chunks)


def test_keywords_that_repeat_the_page_title_are_no_tags():
    """Texinfo's HTML (the diffutils manual) writes each page's title as its keywords: 60 pages
    made 60 one-page tags, and `--tag` errors listed them."""
    head = (
        "<head><title>Brief (Comparing and Merging Files)</title>"
        '<meta name="keywords" content="Brief (Comparing and Merging Files)"></head>'
    )
    doc = parse(f"<html>{head}<body><h1>Brief</h1><p>Summarizing which files differ.</p></body>")
    assert doc.tags == []
    other = parse(
        '<html><head><title>Backups</title><meta name="keywords" content="backups, diff">'
        "</head><body><p>Keeping copies.</p></body></html>"
    )
    assert other.tags == ["diff"]


def test_a_paragraph_of_br_lines_is_cited_by_the_lines_of_each_chunk():
    # DocBook's `literallayout` (valgrind's NEWS page): one <p> of many <br> lines; every
    # chunk of it had cited the whole paragraph, L24-L4561
    rows = "".join(f"<br>\nrelease {n} fixed bug number {n} in the scheduler" for n in range(300))
    page = f"<html><body><h1>NEWS</h1>\n<p>{rows}</p>\n</body></html>\n"
    doc = parse(page, max_tokens=60)
    body = [c for c in doc.chunks if "release" in c.text]
    assert len(body) > 20
    page_lines = page.split("\n")
    for chunk in body:
        assert chunk.line_end - chunk.line_start < 30  # ~9 words a line, 60 a chunk
        numbers = re.findall(r"release (\d+)", chunk.text)
        source = "\n".join(page_lines[chunk.line_start - 1 : chunk.line_end])
        assert f"release {numbers[0]} " in source and f"release {numbers[-1]} " in source
    # an inline element holding a <br> still counts its own lines
    doc = parse("<html><body>\n<p>one<br>\n<b>two<br>\nthree</b><br>\nfour</p>\n</body></html>")
    assert (doc.chunks[0].line_start, doc.chunks[0].line_end) == (2, 5)
