"""Each document once: the same guide as PDF and as HTML answers in one slot that names the
other copy (`also_at`); a document that only shares phrases with it is not grouped."""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from kb_search.shingles import containment, shingles

pytest.importorskip("reportlab")

from pdf_samples import body, lines_of, write_pdf  # noqa: E402

SECTIONS = {
    "Preparing the orchard": (
        "Before the first frost, rake the fallen leaves away from the trunks so that scab"
        " spores cannot winter in them. Paint the lower bark of young trees with a thin lime"
        " wash, which reflects the low winter sun and keeps the bark from splitting when warm"
        " afternoons follow freezing nights. Check every stake and tie, loosening any tie that"
        " has started to bite into the growing wood."
    ),
    "Winter pruning of apple trees": (
        "Prune apple trees while they are dormant, between leaf fall and the swelling of the"
        " buds. Remove dead, diseased and crossing branches first, then open the centre of the"
        " crown so that light and air reach the fruiting spurs. Cut just above an outward"
        " facing bud with a clean sloping cut, and never take more than a quarter of the"
        " canopy in a single winter, or the tree answers with a thicket of water shoots."
    ),
    "Grafting new varieties": (
        "Collect scion wood in midwinter from last summer's growth, pencil thick and with"
        " plump buds, and keep it wrapped in damp newspaper in the refrigerator. In early"
        " spring, when the rootstock sap rises, make matching whip and tongue cuts, bind the"
        " union firmly with grafting tape and seal every exposed surface with wax."
    ),
}
# The same subject in other words: shares the headings and a few phrases, not the text.
NEIGHBOUR = """# Orchard care in the cold months

## Winter pruning of apple trees

Dormant apple trees are pruned to shape them, which we do in late winter with a pruning saw
and loppers. Our club prefers to leave the centre of the crown alone on old standard trees,
thinning only the spurs, because heavy cuts on veterans invite canker and decay in the
heartwood. Cut just above an outward facing bud and keep the tools sharp and disinfected.

## Grafting new varieties

At the spring meeting we graft onto bought rootstocks; members bring scion wood from their
own trees, and the oldest member shows the cleft graft used on mature branches, which takes
on thicker wood than a whip graft and heals over within two seasons.
"""
QUERY = "prune apple trees dormant crossing branches crown fruiting spurs"


def write_guide(folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    parts = ["<html><head><title>The orchard guide</title></head><body>",
             "<h1>The orchard guide</h1>"]  # fmt: skip
    pages = []
    for heading, text in SECTIONS.items():
        parts += [f"<h2>{html.escape(heading)}</h2>", f"<p>{html.escape(text)}</p>"]
        draws = [(72, 80, heading, "Helvetica-Bold", 16)]
        draws += body(lines_of(text, per_line=11), top=120)
        pages.append(draws)
    page = folder / "orchard-guide.html"
    page.write_text("\n".join(parts) + "</body></html>\n", encoding="utf-8")
    pdf = write_pdf(folder / "orchard-guide.pdf", pages, title="The orchard guide")
    return page, pdf


def schema() -> dict:
    text = resources.files("kb_search").joinpath("schemas/search_response.schema.json")
    return json.loads(text.read_text())


def test_the_same_guide_as_pdf_and_html_takes_one_slot(kb, tmp_path):
    """Old code: the PDF page and the HTML section both answered, two slots of five."""
    page, pdf = write_guide(tmp_path / "docs")
    (tmp_path / "docs" / "club-notes.md").write_text(NEIGHBOUR, encoding="utf-8")
    kb("add", str(tmp_path / "docs"))
    for mode in ("lexical", "hybrid"):
        data = kb.json("search", QUERY, "--mode", mode, "--top", "5")
        jsonschema.validate(data, schema())
        guide = [r for r in data["results"] if Path(r["source"]["path"]).stem == "orchard-guide"]
        sections = [next(h for h in SECTIONS if h in r["text"]) for r in guide]
        assert guide and len(sections) == len(set(sections)), sections  # each section once...
        for result in guide:  # ...naming where else it is: the other format
            other = str(pdf if result["source"]["path"] == str(page) else page)
            assert [c["path"] for c in result["also_at"]] == [other]
            assert result["also_at"][0]["citation"].startswith(other + "#")
        # the neighbouring notes share phrases and headings, not the text: a result of its own
        notes = [r for r in data["results"] if r["source"]["path"].endswith("club-notes.md")]
        assert notes and all(not r["also_at"] for r in notes)
    human = kb("search", QUERY, "--mode", "lexical", "--top", "5", "--format", "human").stdout
    assert "also at: " in human


def test_containment_separates_copies_from_neighbours(tmp_path):
    html_text = SECTIONS["Winter pruning of apple trees"]
    # the PDF's text: the same words, cut into lines, with the next section's start after it
    pdf_text = "\n".join(lines_of(html_text, 11)) + "\n" + SECTIONS["Grafting new varieties"][:120]
    neighbour = NEIGHBOUR.split("## Winter pruning of apple trees")[1].split("##")[0]
    assert containment(shingles(html_text), shingles(pdf_text)) > 0.9
    assert containment(shingles(html_text), shingles(neighbour)) < 0.2
    assert containment(shingles("too short"), shingles("too short")) == 0.0


def test_grouping_keeps_a_top_3_the_prefix_of_a_top_10(kb, tmp_path):
    write_guide(tmp_path / "docs")
    (tmp_path / "docs" / "club-notes.md").write_text(NEIGHBOUR, encoding="utf-8")
    kb("add", str(tmp_path / "docs"))
    for query in (QUERY, "grafting scion wood rootstock", "orchard frost lime wash"):
        top10 = kb.json("search", query, "--top", "10")["results"]
        top3 = kb.json("search", query, "--top", "3")["results"]
        assert [r["chunk_id"] for r in top3] == [r["chunk_id"] for r in top10[:3]]
        assert [r["also_at"] for r in top3] == [r["also_at"] for r in top10[:3]]


def test_the_shingle_index_gives_the_same_containment_as_sets():
    from kb_search.shingles import ShingleIndex

    texts = [*SECTIONS.values(), NEIGHBOUR, "\n".join(lines_of(SECTIONS["Grafting new varieties"]))]
    index = ShingleIndex()
    for number, text in enumerate(texts):
        got = index.containments(shingles(text))
        for other in range(number):
            want = containment(shingles(text), shingles(texts[other]))
            assert abs(got.get(other, 0.0) - want) < 1e-9
        index.add(shingles(text))


def test_a_pdf_page_cut_across_two_html_sections_is_still_a_copy(kb, tmp_path):
    """The valgrind manual as PDF and as HTML: each PDF page holds the second half of one
    section and the first half of the next, so no HTML chunk holds 70% of a page (old code:
    both formats answered, shares of .37-.54 on the real manual); with the chunks beside it,
    the HTML holds all of the page, and the page overlaps the section shown."""
    folder = tmp_path / "docs"
    folder.mkdir()
    parts = ["<html><head><title>The orchard guide</title></head><body><h1>The orchard guide</h1>"]
    for heading, text in SECTIONS.items():
        parts += [f"<h2>{html.escape(heading)}</h2>", f"<p>{html.escape(text)}</p>"]
    page = folder / "orchard-guide.html"
    page.write_text("\n".join(parts) + "</body></html>\n", encoding="utf-8")
    halves = []
    for text in SECTIONS.values():
        words = text.split()
        halves += [" ".join(words[: len(words) // 2]), " ".join(words[len(words) // 2 :])]
    pages = [halves[0]] + [f"{a} {b}" for a, b in zip(halves[1::2], halves[2::2])] + [halves[-1]]
    write_pdf(folder / "orchard-print.pdf", [body(lines_of(text, per_line=11)) for text in pages])
    kb("add", str(folder))
    grafting = "grafting scion wood rootstock sap whip tongue"
    for query, wanted in ((QUERY, {2, 3}), (grafting, {3, 4})):
        results = kb.json("search", query, "--mode", "lexical", "--top", "5")["results"]
        first = results[0]
        assert first["source"]["path"] == str(page)
        named = {c["page"] for c in first["also_at"]}
        assert named == wanted, first["also_at"]  # the two pages that hold this section
        shown = {r["source"]["page"] for r in results if r["source"]["path"] != str(page)}
        assert not shown & wanted  # and they take no slot of their own


def test_a_long_also_at_path_wraps_under_its_result(kb, environment, tmp_path):
    """Old code: `also at:` ended its line and the path it names began at the left margin,
    where the next result's number stands."""
    deep = tmp_path / "a-folder-with-a-rather-long-name" / "and-another-one-under-it"
    write_guide(deep)
    kb("add", str(deep))
    environment.env["COLUMNS"] = "60"
    human = kb("search", QUERY, "--mode", "lexical", "--format", "human").stdout
    lines = human.split("\n")
    start = next(n for n, line in enumerate(lines) if "also at:" in line)
    block = lines[start : lines.index("", start)]
    assert len(block) > 1  # the path wrapped
    assert all(line.startswith("   ") for line in block), block


def test_stats_count_the_documents_another_holds_and_files_mode_lists_the_guide_once(kb, tmp_path):
    """Old code: `kb stats` said nothing of copies. `--files` lists the guide once, naming the
    other format (a guard: here the chunk rule already did it; tests/search/
    test_document_copies.py has the case only the document pairs catch)."""
    page, pdf = write_guide(tmp_path / "docs")
    (tmp_path / "docs" / "club-notes.md").write_text(NEIGHBOUR, encoding="utf-8")
    kb("add", str(tmp_path / "docs"))
    assert kb.json("stats")["copied_documents"] == 2  # the PDF and the HTML hold each other
    assert "Copies: 2 documents another holds" in kb("stats", "--format", "human").stdout
    for query in (QUERY, "orchard frost lime wash grafting scion"):
        data = kb.json("search", query, "--files", "--mode", "lexical")
        paths = [r["source"]["path"] for r in data["results"]]
        guides = [p for p in paths if Path(p).stem == "orchard-guide"]
        assert len(guides) == 1, paths
        first = next(r for r in data["results"] if r["source"]["path"] == guides[0])
        assert {c["path"] for c in first["also_at"]} == {str(page), str(pdf)} - {guides[0]}
