"""Issue 34, items 2 and 6: `kb get` reads as clean as search (the text that was indexed,
with its source lines; `--raw` the source), each heading line once, within a byte budget of
clean text; code read by symbol (`path.py#Class.method`, `path.py:120 --symbol`), and compact
results of code headed by their symbol."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from formats.test_format_archives import ODT_BODY, make_epub, odf
from formats.test_format_documents import notebook
from kb_search.config import load_config
from kb_search.errors import NotFound, UserInputError
from kb_search.knowledge_base import KnowledgeBase
from kb_search.search.fields import COMPACT, project
from kb_testing import HashEmbedder

SPHINX_HTML = """<!DOCTYPE html>
<html lang="en"><head><title>Throttling</title></head>
<body>
<div class="sphinxsidebar"><ul><li><a href="a.html">Home</a></li>
<li><a href="b.html">API</a></li><li><a href="c.html">Guide</a></li></ul></div>
<div class="body">
<h1>Throttling<a class="headerlink" href="#throttling">¶</a></h1>
<p>Throttling is similar to permissions, in that it determines if a request should be
authorized. Set the <code class="docutils literal">
<span class="pre">DEFAULT_THROTTLE_RATES</span></code>
setting to limit the rate of requests a client may make.</p>
<h2>Setting the policy<a class="headerlink" href="#setting-the-policy">¶</a></h2>
<p>The default throttling policy may be set globally, using the
<code class="docutils literal"><span class="pre">DEFAULT_THROTTLE_CLASSES</span></code> setting.</p>
<pre>REST_FRAMEWORK = {
    'DEFAULT_THROTTLE_RATES': {'anon': '100/day'}
}</pre>
<p>Rates are given per second, minute, hour or day.</p>
</div>
</body></html>
"""

RTF = r"""{\rtf1\ansi\deff0{\fonttbl{\f0 Times;}}
{\pard\b Garden notes\b0\par}
{\pard Compost feeds the soil and worms aerate the beds.\par}
}"""

EML = """From: Ann <ann@example.org>
To: Bob <bob@example.org>
Subject: Compost schedule
Content-Type: text/html; charset=utf-8

<html><body><p>Turn the <b>compost</b> every <i>two weeks</i>.</p></body></html>
"""

CODE = '''"""Retries."""


class Retry:
    """How often to try again."""

    def __init__(self, times: int) -> None:
        self.times = times

    def backoff(self, attempt: int) -> float:
        """Seconds to wait before the next attempt."""
        base = 0.5 * 2**attempt
        return min(base, 30.0)


def jitter(value: float) -> float:
    return value * 0.9
'''


def _kb(tmp_path: Path) -> KnowledgeBase:
    env = {"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0", "KB_CHUNK_MIN_TOKENS": "1",
           "KB_CHUNK_MAX_TOKENS": "40"}  # fmt: skip
    return KnowledgeBase(load_config(env=env), embedder=HashEmbedder(), cwd=tmp_path)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "throttling.html").write_text(SPHINX_HTML)
    (root / "notes.rtf").write_text(RTF)
    (root / "compost.eml").write_text(EML)
    (root / "sales.ipynb").write_text(json.dumps(notebook()))
    make_epub(root / "garden.epub")
    odf(root / "plan.odt", "text", ODT_BODY, "Garden plan 2024")
    (root / "retry.py").write_text(CODE)
    return root


def _chunks(kb: KnowledgeBase, path: Path) -> list:
    return kb.reads.document(str(path)).chunks or []


def test_an_html_citation_reads_the_clean_text_with_its_source_lines(tmp_path, folder):
    with _kb(tmp_path) as kb:
        kb.add([folder])
        hit = kb.search("DEFAULT_THROTTLE_CLASSES", kb.search_options(mode="lexical")).results[0]
        passage = kb.get([hit.citation]).passages[0]
        assert passage.text == hit.text and passage.from_ == "index"
        assert passage.lines == hit.source.lines and passage.chunk_ids == [hit.chunk_id]
        assert "<" not in passage.text and "span" not in passage.text
        raw = kb.get([hit.citation], raw=True).passages[0]
        assert raw.from_ == "disk" and '<span class="pre">' in raw.text
        assert raw.lines == passage.lines


def test_a_whole_html_page_shows_each_heading_line_once_and_the_budget_counts_clean_text(
    tmp_path, folder
):
    page = folder / "throttling.html"
    with _kb(tmp_path) as kb:
        kb.add([folder])
        chunks = _chunks(kb, page)
        assert len(chunks) > 2  # several chunks of one section repeat its heading line on top
        reading = kb.get([str(page)])
        text = reading.passages[0].text
        assert text.count("# Setting the policy") == 1 and text.count("# Throttling") == 1
        assert "Home" not in text and "<" not in text
        assert reading.bytes == len(text.encode())
        cut = kb.get([str(page)], max_bytes=200)
        assert cut.bytes <= 200 and "<" not in cut.passages[0].text


@pytest.mark.parametrize(
    ("name", "markup"),
    [
        ("notes.rtf", "\\par"),
        ("compost.eml", "<b>"),
        ("sales.ipynb", '"cell_type"'),
        ("garden.epub", "<p>"),
        ("plan.odt", "text:p"),
    ],
)
def test_every_converted_format_reads_as_its_indexed_text(tmp_path, folder, name, markup):
    path = folder / name
    with _kb(tmp_path) as kb:
        kb.add([folder])
        passage = kb.get([str(path)]).passages[0]
        indexed = [c.text for c in _chunks(kb, path)]
        assert passage.from_ == "index" and markup not in passage.text
        assert all(text.split("\n")[-1] in passage.text for text in indexed)
        for chunk in _chunks(kb, path):  # each chunk's own citation reads that chunk
            read = kb.get([chunk.citation]).passages[0].text
            if "#L" in chunk.citation:
                assert read.strip() == chunk.text.strip()
            else:  # a page (a cell, a slide) or the whole file: what it holds
                assert chunk.text.strip().split("\n")[-1] in read


def test_raw_reads_a_text_source_and_refuses_a_binary_one(tmp_path, folder):
    with _kb(tmp_path) as kb:
        kb.add([folder])
        assert "\\rtf1" in kb.get([str(folder / "notes.rtf")], raw=True).passages[0].text
        with pytest.raises(UserInputError, match="read it without --raw"):
            kb.get([str(folder / "garden.epub")], raw=True)


def test_code_is_read_by_symbol(tmp_path, folder):
    source = CODE.split("\n")
    with _kb(tmp_path) as kb:
        kb.add([folder])
        method = kb.get([f"{folder}/retry.py#Retry.backoff"]).passages[0]
        first, last = method.lines
        assert source[first - 1].strip().startswith("def backoff")
        assert source[last - 1].strip() == "return min(base, 30.0)"
        assert method.from_ == "disk" and method.citation.endswith(f"#L{first}-L{last}")
        assert kb.get([f"{folder}/retry.py#backoff"]).passages[0].lines == method.lines
        whole = kb.get([f"{folder}/retry.py#Retry"]).passages[0]
        assert "class Retry" in whole.text and "return min(base, 30.0)" in whole.text
        around = kb.get([f"{folder}/retry.py:{first + 2}"], symbol=True).passages[0]
        assert around.lines == method.lines
        with pytest.raises(NotFound, match="it defines .*Retry.backoff"):
            kb.get([f"{folder}/retry.py#Retry.nope"])
        with pytest.raises(NotFound, match="outside every function and class"):
            kb.get([f"{folder}/retry.py:1"], symbol=True)


def test_compact_results_of_code_are_headed_by_their_symbol(tmp_path, folder):
    with _kb(tmp_path) as kb:
        kb.add([folder])
        response = kb.search("backoff attempt", kb.search_options(mode="lexical", top=3))
        compact = project(response, COMPACT)["results"]
        by_citation = {r["citation"]: r["heading"] for r in compact}
        hit = next(r for r in response.results if r.source.symbol == "Retry.backoff")
        assert by_citation[hit.citation] == "Retry.backoff"


GO = """package badge

// Handler serves badges.
type Handler struct {
	namespace string
}

// ServeHTTP writes the badge.
func (h *Handler) ServeHTTP(w int, r int) {
	_ = w
	_ = r
}
"""


def test_go_code_is_read_by_symbol_with_its_doc_comment(tmp_path):
    code = tmp_path / "code"
    code.mkdir()
    (code / "badge.go").write_text(GO)
    with _kb(tmp_path) as kb:
        kb.add([code])
        method = kb.get([f"{code}/badge.go#ServeHTTP"]).passages[0]
        assert method.text.startswith("// ServeHTTP writes the badge.\nfunc (h *Handler)")
        assert method.text.rstrip().endswith("}")
        around = kb.get([f"{code}/badge.go:10"], symbol=True).passages[0]
        assert around.lines == method.lines
