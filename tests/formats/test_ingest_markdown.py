from pathlib import Path

from kb_search.formats.markdown import parse_markdown
from kb_search.parsed import ChunkSettings


def words(text: str) -> int:
    return len(text.split())


def filler(n: int, word: str = "lorem") -> str:
    return " ".join([word] * n)


DOC = f"""---
title: Guide Title
tags: alpha, beta
date: 2024-01-02
owner: ops
---
# Top

{filler(30, "intro")}

## Install

{filler(30, "install")}

```bash
# not a heading
pip install thing
```

### Linux

{filler(30, "linux")}

Setext Section
--------------

{filler(30, "setext")}
"""


def parse(text: str, max_tokens: int = 200, min_tokens: int = 10, name: str = "guide.md"):
    return parse_markdown(text, Path(name), ChunkSettings(max_tokens, min_tokens), count=words)


def test_front_matter_gives_title_tags_and_metadata():
    doc = parse(DOC, max_tokens=60)
    assert doc.title == "Guide Title"
    assert doc.tags == ["alpha", "beta"]
    assert doc.metadata == {"date": "2024-01-02", "owner": "ops"}
    assert doc.doc_type == "markdown"


def test_sections_carry_heading_chains_and_original_line_numbers():
    doc = parse(DOC, max_tokens=60)
    summary = [(c.heading, c.line_start, c.line_end) for c in doc.chunks]
    assert summary == [
        ("Top", 7, 9),
        ("Top > Install", 11, 18),
        ("Top > Install > Linux", 20, 22),
        ("Top > Setext Section", 24, 27),
    ]
    assert doc.chunks[1].text.startswith("## Install")
    assert "# not a heading\npip install thing\n```" in doc.chunks[1].text
    assert all(c.token_count == words(c.text) for c in doc.chunks)


def test_whole_document_is_one_chunk_when_it_fits():
    doc = parse(DOC, max_tokens=500)
    assert len(doc.chunks) == 1
    assert (doc.chunks[0].line_start, doc.chunks[0].line_end) == (7, 27)
    assert doc.chunks[0].heading == "Top"
    assert "title: Guide Title" not in doc.chunks[0].text


def test_small_sections_merge_forward_under_their_parent_heading():
    text = "# A\n\n## B\n\nshort b\n\n## C\n\nshort c\n\n## D\n\n" + filler(40) + "\n"
    doc = parse(text, max_tokens=50, min_tokens=10)
    # B and C hold half the text each: the chain they share names the chunk.
    assert [c.heading for c in doc.chunks] == ["A", "A > D"]
    assert doc.chunks[0].text.startswith("# A\n\n## B")
    assert "## C" in doc.chunks[0].text


def test_small_last_section_merges_into_previous():
    text = "# A\n\n" + filler(30) + "\n\n# B\n\ntiny\n"
    doc = parse(text, max_tokens=50, min_tokens=10)
    assert len(doc.chunks) == 1
    assert doc.chunks[0].heading == "A"
    assert doc.chunks[0].line_end == 7


def test_big_section_splits_at_paragraphs_and_repeats_heading():
    paragraphs = "\n\n".join(filler(20, f"p{i}") for i in range(4))
    text = f"## Big\n\n{paragraphs}\n"
    doc = parse(text, max_tokens=45, min_tokens=5)
    assert len(doc.chunks) == 2
    assert all(c.token_count <= 45 for c in doc.chunks)
    assert all(c.heading == "Big" for c in doc.chunks)
    assert doc.chunks[1].text.startswith("## Big\n\np2")
    assert (doc.chunks[0].line_start, doc.chunks[1].line_end) == (1, 9)


def test_fence_is_not_cut_when_it_fits():
    code = "\n".join(f"line {i}" for i in range(15))
    text = f"## S\n\n{filler(20)}\n\n~~~python\n{code}\n~~~\n\n{filler(20)}\n"
    doc = parse(text, max_tokens=40, min_tokens=5)
    fenced = [c for c in doc.chunks if "~~~python" in c.text]
    assert len(fenced) == 1
    assert fenced[0].text.count("~~~") == 2
    assert "line 0" in fenced[0].text and "line 14" in fenced[0].text


def test_oversized_fence_is_split_with_reopened_fences():
    code = "\n".join(f"x{i} = {i}" for i in range(40))
    text = f"## S\n\n```python\n{code}\n```\n"
    doc = parse(text, max_tokens=30, min_tokens=5)
    fence_chunks = [c for c in doc.chunks if "x0 =" in c.text or "x39" in c.text]
    assert len(doc.chunks) > 2
    for chunk in doc.chunks:
        assert chunk.token_count <= 30
        body = chunk.text.split("```python", 1)[1]
        assert body.rstrip().endswith("```")
    assert fence_chunks[0].text.startswith("## S\n\n```python\nx0 = 0")
    assert fence_chunks[0].line_start == 1
    assert doc.chunks[-1].line_end == 44
    assert all(c.text.startswith("## S\n\n```python\n") for c in doc.chunks)


def test_oversized_table_is_split_repeating_its_header():
    rows = "\n".join(f"| r{i} | v{i} |" for i in range(30))
    text = f"## T\n\n| name | value |\n|---|---|\n{rows}\n"
    doc = parse(text, max_tokens=40, min_tokens=5)
    assert len(doc.chunks) > 1
    for chunk in doc.chunks:
        assert "| name | value |\n|---|---|\n| r" in chunk.text
        assert chunk.token_count <= 40


def test_headings_inside_fences_are_ignored_and_deep_headings_do_not_split():
    text = "# A\n\n```\n# fake\n## fake\n```\n\n#### Deep\n\ntext\n"
    doc = parse(text, max_tokens=200)
    assert [c.heading for c in doc.chunks] == ["A"]


def test_bad_front_matter_is_kept_as_text():
    text = "---\ntitle: [unclosed\n---\n# Real\n\nbody\n"
    doc = parse(text)
    assert doc.title == "Real"
    assert doc.chunks[0].line_start == 1
    assert "title: [unclosed" in doc.chunks[0].text


def test_title_falls_back_to_stem_and_list_tags():
    doc = parse("---\ntags: [x, y]\n---\nno headings here\n", name="notes.md")
    assert doc.title == "notes"
    assert doc.tags == ["x", "y"]
    assert doc.chunks[0].heading is None
    assert doc.chunks[0].line_start == 4


def test_giant_paragraph_is_split_by_words():
    doc = parse("# A\n\n" + filler(100) + "\n", max_tokens=30, min_tokens=5)
    assert len(doc.chunks) >= 4
    assert all(c.token_count <= 30 for c in doc.chunks)
    assert all(c.line_start >= 1 for c in doc.chunks)


PDOC_BANNER = (
    '<p align="center">\n<a href="https://pdoc.dev/"><img alt="pdoc" src="logo.svg" /></a>\n'
    '<br><br>\n<a href="ci"><img height="20" alt="CI Status" src="ci.svg"></a>\n</p>\n\n'
    "API Documentation for Python Projects.\n\n"
)


def test_a_readme_is_titled_by_its_html_banner():
    """pdoc's README opens with a logo and badges in HTML; its H1s are sections (Example,
    Installation, Usage). The old code titled it "Example" (furo's: "Elevator pitch")."""
    sections = "# Example\n\n`pdoc -o ./html pdoc`\n\n# Installation\n\npip install pdoc\n"
    readme = parse_markdown(PDOC_BANNER + sections, Path("README.md"), ChunkSettings())
    assert readme.title == "pdoc"
    # one H1 after the banner is the title; a badge's alt text never is
    one = parse_markdown(PDOC_BANNER + "# pdoc docs\n\ntext\n", Path("a.md"), ChunkSettings())
    assert one.title == "pdoc docs"
    badges = '<p><img alt="Build Status" src="b.svg"> <img alt="PyPI" src="p.svg"></p>\n\n'
    only = parse_markdown(badges + sections, Path("b.md"), ChunkSettings())
    assert only.title == "Example"
    # an HTML <h1> before the first Markdown heading names the document, text or logo
    heading = '<h1 align="center">\n  <b>Furo</b>\n</h1>\n\n# Elevator pitch\n\ntext\n'
    assert parse_markdown(heading, Path("c.md"), ChunkSettings()).title == "Furo"
    logo = '<h1 align="center"><img alt="Ruff" src="r.svg"></h1>\n\n## Why\n'
    assert parse_markdown(logo, Path("d.md"), ChunkSettings()).title == "Ruff"
    front = "---\ntitle: Set by hand\n---\n" + heading
    assert parse_markdown(front, Path("e.md"), ChunkSettings()).title == "Set by hand"


def test_a_file_without_h1_is_titled_by_front_matter_then_first_heading():
    """Old code: the file stem ("middleware") when there is no H1."""
    body = f"{filler(20, 'intro')}\n\n## Using middleware\n\n{filler(20, 'use')}\n"
    assert parse_markdown(body, Path("middleware.md"), ChunkSettings()).title == (
        "Using middleware"
    )
    front = "---\ntitle: Middleware guide\n---\n" + body
    assert parse_markdown(front, Path("middleware.md"), ChunkSettings()).title == (
        "Middleware guide"
    )
    h1 = "## First\n\ntext\n\n# The Title\n\nmore\n"
    assert parse_markdown(h1, Path("x.md"), ChunkSettings()).title == "The Title"
    assert parse_markdown(filler(20), Path("notes.md"), ChunkSettings()).title == "notes"


def test_an_appended_section_merged_into_headless_text_names_the_chunk():
    """Old code: the section merged into the text before it, and the chunk had heading None."""
    body = f"{filler(40, 'intro')}\n\n## Appended Section\n\nA short note about zebras.\n"
    chunks = parse_markdown(body, Path("x.md"), ChunkSettings()).chunks
    assert [c.heading for c in chunks] == ["Appended Section"]
    assert "zebras" in chunks[-1].text
