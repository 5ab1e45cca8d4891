"""`kb eval` scores PDF answers per page: page hit@5 over the questions located by a page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("reportlab")

from kb_search.config import load_config  # noqa: E402
from kb_search.knowledge_base import KnowledgeBase  # noqa: E402
from kb_testing import HashEmbedder  # noqa: E402
from pdf_samples import body, lines_of, write_pdf  # noqa: E402

PAGES = [
    "orchards apples pruning winter grafting rootstock " * 12,
    "beekeeping hives swarm queen honey frames " * 12,
    "sourdough starter flour hydration oven crust " * 12,
]


@pytest.fixture
def kb(tmp_path: Path):
    folder = tmp_path / "manuals"
    folder.mkdir()
    write_pdf(folder / "farm.pdf", [body(lines_of(text)) for text in PAGES], title="Farm notes")
    config = load_config(env={"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"})
    with KnowledgeBase(config, embedder=HashEmbedder(), cwd=tmp_path) as knowledge_base:
        knowledge_base.add([folder])
        yield knowledge_base


def test_page_hit_at_5_counts_the_right_page_only(kb, tmp_path: Path) -> None:
    items = [
        {"id": "bees", "question": "beekeeping hives swarm queen", "relevant": [
            "manuals/farm.pdf#page=2"]},
        # the right file, a page that does not answer: a file hit, not a page hit
        {"id": "wrong-page", "question": "sourdough starter hydration", "relevant": [
            "manuals/farm.pdf#page=1"]},
        {"id": "file-only", "question": "orchards apples pruning", "relevant": [
            "manuals/farm.pdf"]},
    ]  # fmt: skip
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps(i) for i in items) + "\n", encoding="utf-8")
    report = kb.eval(path, ["lexical"])
    (lexical,) = report["scores"]
    assert lexical.page_questions == 2
    assert lexical.file["hit@1"] == 1.0
    assert lexical.page["hit@1"] == pytest.approx(0.5)
    assert lexical.to_dict()["page"]["hit@1"] == pytest.approx(0.5)
    assert lexical.misses == [] and "page" not in json.dumps(lexical.misses)


def test_human_table_has_a_page_column_when_answers_are_pages(kb, tmp_path: Path) -> None:
    from kb_search.cli.render import questions_report_human

    path = tmp_path / "q.jsonl"
    line = {"id": "b", "question": "honey frames", "relevant": ["manuals/farm.pdf#page=2"]}
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    assert "page hit@5" in questions_report_human(kb.eval(path, ["lexical"]))
    line["relevant"] = ["manuals/farm.pdf"]
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    assert "page hit@5" not in questions_report_human(kb.eval(path, ["lexical"]))


def test_a_chunk_over_a_page_break_cites_the_page_with_its_text(tmp_path: Path) -> None:
    """A heading at the foot of page 1 opens the section whose text is on page 2: the chunk
    spans pages 1-2 and its citation opens page 2, where a reader finds the answer."""
    from pdf_samples import words

    folder = tmp_path / "manuals"
    folder.mkdir()
    first = body(lines_of(words(150, "apple"))) + [
        (72, 700, "2 Grafting rootstock", "Helvetica-Bold", 16)
    ]
    second = body(lines_of(words(90, "graft")))
    write_pdf(folder / "orchard.pdf", [first, second], title="Orchard")
    config = load_config(env={"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"})
    with KnowledgeBase(config, embedder=HashEmbedder(), cwd=tmp_path) as kb:
        kb.add([folder])
        hit = kb.search("graft0 graft7", kb.search_options(mode="lexical")).results[0]
        assert (hit.source.page, hit.source.page_end) == (1, 2)
        assert hit.citation.endswith("orchard.pdf#page=2")
        (passage,) = kb.get([hit.citation]).passages
        assert "graft0" in passage.text


def test_the_next_results_open_other_pages_before_the_same_page_again(tmp_path: Path) -> None:
    """One section over two pages, page 1 cut in several chunks: the second result is page 2,
    not page 1 again (its citation would open the page the first one opens); page 1's other
    chunks follow, moved down, not out."""
    from pdf_samples import words

    folder = tmp_path / "manuals"
    folder.mkdir()
    dense = " ".join(f"pruning {w}" for w in words(150, "apple").split())
    sparse = words(200, "graft").split()
    sparse_text = " ".join(f"pruning {w}" if i % 3 == 0 else w for i, w in enumerate(sparse))
    first = [(72, 80, "1 Pruning", "Helvetica-Bold", 16)] + body(lines_of(dense), top=110, size=9)
    write_pdf(folder / "orchard.pdf", [first, body(lines_of(sparse_text))], title="Orchard")
    config = load_config(env={"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"})
    with KnowledgeBase(config, embedder=HashEmbedder(), cwd=tmp_path) as kb:
        kb.add([folder])
        results = kb.search("pruning", kb.search_options(mode="lexical")).results
        pages = [r.source.page for r in results]
        assert pages.count(1) >= 3  # page 1 holds several chunks, all better matches
        assert pages[:2] == [1, 2]
