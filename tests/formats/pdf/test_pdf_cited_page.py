"""A chunk over a page break opens the page holding most of its text, wherever it is cited:
search, `kb chunk`, `kb get chunk:ID`, and the page diversity counts it on."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("reportlab")

from kb_search.config import load_config  # noqa: E402
from kb_search.knowledge_base import KnowledgeBase  # noqa: E402
from kb_search.search.results import Candidate  # noqa: E402
from kb_search.search.shaping import diversify  # noqa: E402
from kb_testing import HashEmbedder  # noqa: E402
from pdf_samples import body, lines_of, words, write_pdf  # noqa: E402


@pytest.fixture
def kb(tmp_path: Path):
    """orchard.pdf: a heading at the foot of page 1, its section's text on page 2."""
    folder = tmp_path / "manuals"
    folder.mkdir()
    first = body(lines_of(words(150, "apple"))) + [
        (72, 700, "2 Grafting rootstock", "Helvetica-Bold", 16)
    ]
    write_pdf(folder / "orchard.pdf", [first, body(lines_of(words(90, "graft")))], title="O")
    config = load_config(env={"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"})
    with KnowledgeBase(config, embedder=HashEmbedder(), cwd=tmp_path) as knowledge_base:
        knowledge_base.add([folder])
        yield knowledge_base


def _hit(kb):
    hit = kb.search("graft0 graft7", kb.search_options(mode="lexical")).results[0]
    assert (hit.source.page, hit.source.page_end) == (1, 2)
    assert hit.citation.endswith("orchard.pdf#page=2")
    return hit


def test_get_chunk_id_cites_the_page_search_cited(kb) -> None:
    """`kb get chunk:ID` of one chunk cites it as search and `kb chunk` do, not by its first
    page (the reviewed code answered #page=1 for a hit cited #page=2)."""
    hit = _hit(kb)
    (passage,) = kb.get([f"chunk:{hit.chunk_id}"]).passages
    assert passage.citation == hit.citation
    (shown,) = kb.reads.chunk(hit.chunk_id, 0)
    assert shown.citation == hit.citation


@pytest.mark.parametrize("crafted", [-7, 3, 2**62, "x", 1.5])
def test_a_crafted_cited_page_is_not_believed(kb, tmp_path: Path, crafted) -> None:
    """A crafted index whose cited_page is no whole number in page..page_end: search does
    not fail (the reviewed code raised TypeError on text) and the citation opens the first
    page; diversity counts the chunk on that page too, not on the crafted one."""
    hit = _hit(kb)
    db = sqlite3.connect(tmp_path / "data" / "kb.db")
    with db:
        db.execute("UPDATE chunks SET cited_page = ? WHERE id = ?", (crafted, hit.chunk_id))
    db.close()
    assert _first(kb, hit.chunk_id).citation.endswith("orchard.pdf#page=1")
    found = kb.search("graft0 graft7", kb.search_options(mode="lexical")).results[0]
    assert found.citation.endswith("orchard.pdf#page=1")
    # another chunk of page 1 ranks first: PAGE_CAP moves the crafted one down below it
    conn = kb.reader()
    page_one = [
        row[0]
        for row in conn.execute(
            "SELECT id FROM chunks WHERE page_start = 1 AND page_end = 1 AND id != ?",
            (hit.chunk_id,),
        )
    ]
    assert page_one
    other = Candidate(page_one[-1], 1.0, {})
    ranked = [other, Candidate(hit.chunk_id, 0.9, {})]
    out = diversify(conn, ranked, per_file=3, files=False)
    assert out[1].chunk_id == hit.chunk_id and out[1].cut_by


def _first(kb, chunk_id: int):
    (chunk,) = kb.reads.chunk(chunk_id, 0)
    return chunk


def test_also_at_links_the_page_its_citation_opens(tmp_path: Path) -> None:
    """A copy of a result in another PDF, over a page break: its link in the human output
    opens the page its citation names, as the result's own link does."""
    from kb_search.cli.render import _also_at_line
    from kb_search.cli.terminal import Terminal
    from kb_search.search.results import Copy

    path = str(tmp_path / "copy.pdf")
    copy = Copy(7, f"{path}#page=2", 1, "Copy", path, "pdf", 1, None)
    term = Terminal(styles="full", hyperlinks=True, cwd=tmp_path)
    line = _also_at_line(term, [copy]).renderable
    links = [span.style.link for span in line.spans if getattr(span.style, "link", None)]
    assert links == [Path(path).as_uri() + "#page=2"]
