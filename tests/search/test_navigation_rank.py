"""A PDF's table of contents is marked as navigation at parse, stored, shown in the JSON and
ranked below the pages it lists, never left out."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("reportlab")

from kb_search.formats.pdf.parse import parse_pdf  # noqa: E402
from kb_search.parsed import ChunkSettings  # noqa: E402
from kb_search.search.pipeline import SearchOptions  # noqa: E402
from kb_testing import kb_over_files  # noqa: E402
from pdf_samples import PageSpec, body, lines_of, write_pdf  # noqa: E402

SECTIONS = [
    ("1 Installing the frobnicator", "installing frobnicator"),
    ("2 Configuring the quuxer", "configuring quuxer"),
    ("3 Removing the blorpcache", "removing blorpcache"),
]

PARTS = ["Unpacking the parcel", "Checking the seals", "Reading the label"]


def handbook(path: Path) -> Path:
    contents: PageSpec = [(72, 80, "Contents", "Helvetica-Bold", 16)]
    entries = []
    for n, (title, _topic) in enumerate(SECTIONS):
        entries.append(f"{title} {'. ' * 30}{n + 2}")
        entries += [f"{n + 1}.{k} {part} {'. ' * 25}{n + 2}" for k, part in enumerate(PARTS, 1)]
    contents += body(entries, top=120)
    pages = [contents]
    for title, topic in SECTIONS:
        steps = [f"Step {i}: the tool reads the settings and writes the log." for i in range(12)]
        steps[0] = f"Before {topic}, the parcel needs unpacking."
        prose = " ".join(steps)
        pages.append([(72, 80, title, "Helvetica-Bold", 14), *body(lines_of(prose, 11), top=110)])
    return write_pdf(path, pages, title="Frobnicator Handbook")


# Other files that match the query's words weakly: the ranking has a tail, as in any corpus.
NOTES = {
    f"note{n}.md": f"# Note {n}\n\n"
    + "Plain words about other work and tools. " * 20
    + ("Installing takes a minute." if n % 2 else "The quuxer is elsewhere.")
    for n in range(6)
}


def test_the_contents_page_is_marked_and_the_pages_are_not(tmp_path: Path) -> None:
    doc = parse_pdf(handbook(tmp_path / "handbook.pdf"), ChunkSettings())
    marked = {c.page_start for c in doc.chunks if c.navigation}
    assert marked == {1}
    assert all(not c.navigation for c in doc.chunks if c.page_start != 1)


@pytest.fixture
def kb(tmp_path: Path):
    (tmp_path / "docs").mkdir()
    handbook(tmp_path / "docs" / "handbook.pdf")
    kb = kb_over_files(tmp_path, NOTES)
    yield kb
    kb.close()


def test_content_ranks_above_the_contents_that_match_about_as_well(kb) -> None:
    # every word of the query is in the contents list, which is shorter than the section that
    # holds them too: the keyword leg's best match is the list, moved below the section
    query = "installing frobnicator unpacking parcel"
    response = kb.search(query, SearchOptions(mode="lexical", top=5))
    first = response.results[0]
    assert not first.source.navigation and first.source.page == 2
    toc = [r for r in response.results if r.source.navigation]
    assert len(toc) == 1 and toc[0].source.page == 1  # moved down, not out
    assert toc[0].score_breakdown["fts_rank"] == 1
    assert toc[0].score <= first.score  # scores read in the order of the results


def test_a_question_about_the_contents_still_finds_them(kb) -> None:
    response = kb.search("contents", SearchOptions(mode="hybrid", top=3))
    assert response.results[0].source.navigation
    assert response.results[0].to_dict()["source"]["navigation"] is True
    assert response.results[0].source.page == 1


def test_the_mark_is_in_every_result_of_the_json(kb) -> None:
    response = kb.search("quuxer settings", SearchOptions(mode="hybrid", top=5))
    assert all(r.to_dict()["source"]["navigation"] in (True, False) for r in response.results)


def test_kb_chunk_shows_the_mark(kb) -> None:
    toc = kb.search("contents", SearchOptions(mode="lexical", top=1)).results[0]
    views = kb.reads.chunk(toc.chunk_id, context=1)
    assert [v.to_dict()["navigation"] for v in views] == [True, False]
