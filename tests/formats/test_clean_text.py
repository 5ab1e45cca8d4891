"""Clean text from HTML and from every converted format (`formats/cleaning.py`): what a reader
sees, without navigation or link markup, with source lines on every HTML chunk."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

from kb_search.formats.cleaning import clean_markdown_lines
from kb_search.formats.converted import MarkdownBuilder
from kb_search.formats.html import parse_html
from kb_search.ingest.parse import parse_file
from kb_search.parsed import ChunkSettings

# The shape of a page of the PostgreSQL manual (DocBook XSL output), shortened.
MANUAL_PAGE = """<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<!DOCTYPE html><html xmlns="http://www.w3.org/1999/xhtml"><head><title>VACUUM</title></head><body>
<div class="navheader"><table width="100%" summary="Navigation header">
<tr><th colspan="3" align="center">VACUUM</th></tr>
<tr><td align="left"><a accesskey="p" href="sql-update.html">Prev</a> </td>
<th width="60%" align="center">SQL Commands</th>
<td align="right"> <a accesskey="n" href="sql-values.html">Next</a></td></tr></table><hr /></div>
<div class="refentry" id="SQL-VACUUM">
<div class="refnamediv"><h2>VACUUM</h2><p>VACUUM &#8212; garbage-collect a database</p></div>
<div class="refsynopsisdiv"><h2>Synopsis</h2>
<pre class="synopsis">
VACUUM [ ( <em class="replaceable"><code>option</code></em> [, ...] ) ] [ <em class="replaceable"><code>table_and_columns</code></em> [, ...] ]
</pre></div>
<div class="refsect1" id="id-1.9.3.184.5"><h2>Description</h2>
<p>
   <code class="command">VACUUM</code> reclaims storage occupied by dead tuples; its memory
   is set by <a class="xref" href="runtime-config-resource.html#GUC-MAINTENANCE-WORK-MEM">maintenance_work_mem</a>
   and the work is logged by the server when asked to.
</p>
<div class="table" id="OPS"><p class="title"><strong>Table 1. Operators</strong></p>
<table class="table" summary="Operators" border="1">
<thead><tr><th>Operator</th><th>Description</th></tr></thead>
<tbody><tr><td><code class="literal">&#124;&#124;</code></td><td>Concatenates two strings &amp; more</td></tr>
<tr><td><code class="literal">a &lt; b</code></td><td>Less than</td></tr></tbody>
</table></div>
</div></div>
<div class="navfooter"><hr /><table width="100%" summary="Navigation footer">
<tr><td width="40%" align="left"><a accesskey="p" href="sql-update.html">Prev</a> </td>
<td width="20%" align="center"><a accesskey="u" href="sql-commands.html">Up</a></td>
<td width="40%" align="right"> <a accesskey="n" href="sql-values.html">Next</a></td></tr>
<tr><td>UPDATE </td><td><a accesskey="h" href="index.html">Home</a></td><td> VALUES</td></tr>
</table></div></body></html>
"""  # noqa: E501 - the page's own long lines


def words(text: str) -> int:
    return len(text.split())


def manual_chunks(tmp_path: Path, max_tokens: int = 40):
    """The page as `kb add` reads it (the registry's route for .html, whatever is installed)."""
    path = tmp_path / "sql-vacuum.html"
    path.write_text(MANUAL_PAGE, encoding="utf-8")
    return parse_file(path, ChunkSettings(max_tokens, 5), words)


def all_text(chunks) -> str:
    return "\n".join(chunk.text for chunk in chunks)


def test_the_nav_header_and_footer_are_gone(tmp_path):
    text = all_text(manual_chunks(tmp_path).chunks)
    assert not re.search(r"\b(Prev|Next|Up|Home)\b", text)
    assert "sql-values" not in text and "UPDATE" not in text


def test_link_text_stays_and_link_targets_go(tmp_path):
    text = all_text(manual_chunks(tmp_path).chunks)
    assert "set by maintenance_work_mem and the work" in text
    assert ".html" not in text and "](" not in text and "GUC-" not in text


def test_a_synopsis_reads_as_the_command_in_a_fence(tmp_path):
    text = all_text(manual_chunks(tmp_path, 200).chunks)
    synopsis = "VACUUM [ ( option [, ...] ) ] [ table_and_columns [, ...] ]"
    assert f"```\n{synopsis}\n```" in text


def test_entities_are_decoded_and_pipes_escaped_in_tables(tmp_path):
    text = all_text(manual_chunks(tmp_path, 200).chunks)
    assert "| `\\|\\|` | Concatenates two strings & more |" in text
    assert "| `a < b` | Less than |" in text
    assert "&#124;" not in text and "&amp;" not in text and "&lt;" not in text
    assert "VACUUM — garbage-collect a database" in text


def test_every_html_chunk_cites_the_page_lines_that_hold_it(tmp_path):
    lines = MANUAL_PAGE.split("\n")
    document = manual_chunks(tmp_path)
    assert len(document.chunks) > 2
    for chunk in document.chunks:
        assert chunk.line_start is not None and chunk.line_end >= chunk.line_start
        source = "\n".join(lines[chunk.line_start - 1 : chunk.line_end])
        last_word = re.findall(r"[A-Za-z_]{3,}", chunk.text)[-1]
        assert last_word in source, (chunk.text, source)
    synopsis = next(c for c in document.chunks if "table_and_columns" in c.text)
    # its heading (line 10) to the synopsis line (12), not the page's first line
    assert (synopsis.line_start, synopsis.line_end) == (10, 12)


def test_the_html_reader_itself_gives_title_and_lines():
    document = parse_html(MANUAL_PAGE, Path("sql-vacuum.html"), ChunkSettings(40, 5), words)
    assert document.title == "VACUUM" and document.metadata["converter"] == "lxml"
    assert all(c.line_start is not None for c in document.chunks)
    assert all("Prev" not in c.text for c in document.chunks)


# -- one rule set for every converted format

MARKDOWN_WITH_LINKS = [
    'See [the guide](https://example.org/guide "Guide") and ![logo](logo.png) now.',
    "| Operator | Meaning |",
    "|---|---|",
    "| `a || b` | concat &#124; join &amp; more |",
    "| [Prev](a.html) | [Up](b.html) | [Next](c.html) |",
    "```",
    "[kept](inside.fence) &amp;",
    "```",
]


def test_converted_markdown_is_cleaned_line_for_line():
    cleaned = clean_markdown_lines(MARKDOWN_WITH_LINKS)
    assert len(cleaned) == len(MARKDOWN_WITH_LINKS)  # line maps stay true
    assert cleaned[0] == "See the guide and  now."
    assert cleaned[3] == "| `a || b` | concat \\| join & more |"
    assert cleaned[4] == ""  # a row of nothing but links is navigation
    assert cleaned[6] == "[kept](inside.fence) &amp;"  # code is code


def test_every_builder_based_converter_gets_the_same_cleaning(tmp_path):
    builder = MarkdownBuilder()
    builder.block("\n".join(MARKDOWN_WITH_LINKS))
    text = all_text(builder.parse(tmp_path / "x.md", ChunkSettings(200, 5), words).chunks)
    assert "https://example.org" not in text and "logo.png" not in text and "[Prev]" not in text


def test_a_notebook_markdown_cell_loses_its_link_targets(tmp_path):
    cell = {
        "cell_type": "markdown",
        "metadata": {},
        "source": ["# Setup\n", "Read [the docs](https://example.org/docs) first &amp; install."],
    }
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "setup.ipynb"
    path.write_text(json.dumps(notebook), encoding="utf-8")
    text = all_text(parse_file(path, ChunkSettings(200, 5), words).chunks)
    assert "Read the docs first & install." in text
    assert "example.org" not in text


def test_an_epub_chapter_is_read_by_the_html_rules(tmp_path):
    path = tmp_path / "book.epub"
    chapter = MANUAL_PAGE.replace('<?xml version="1.0" encoding="UTF-8" standalone="no"?>', "")
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
        archive.writestr(
            "META-INF/container.xml",
            '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
            '<rootfile full-path="content.opf"/></rootfiles></container>',
        )
        archive.writestr(
            "content.opf",
            '<package xmlns="http://www.idpf.org/2007/opf"><metadata/><manifest>'
            '<item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/></manifest>'
            '<spine><itemref idref="c1"/></spine></package>',
        )
        archive.writestr("c1.xhtml", chapter)
    text = all_text(parse_file(path, ChunkSettings(200, 5), words).chunks)
    assert "set by maintenance_work_mem and the work" in text
    assert "Prev" not in text and ".html" not in text
    assert "VACUUM [ ( option [, ...] ) ]" in text
