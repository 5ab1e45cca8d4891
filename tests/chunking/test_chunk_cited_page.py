"""The page a chunk over a page break cites: the one holding most of its text, headings not
counted, also when a huge document is cut over runs of units (`_coarsen`)."""

from __future__ import annotations

import pytest

from kb_search.chunking import segment
from kb_search.chunking.segment import Unit, chunk_units
from kb_search.parsed import ChunkSettings


def _count(text: str) -> int:
    return len(text.split())


def _units() -> list[Unit]:
    """A page of paragraphs, a heading at its foot, then a short section on page 2 and the
    next section's heading (a forced break each)."""
    units = [Unit(f"apple{i} " * 30, 30, ("1 Apples",), page_start=1, page_end=1) for i in range(6)]
    units.append(
        Unit(
            "2 Grafting",
            2,
            ("2 Grafting",),
            page_start=1,
            page_end=1,
            heading=True,
            sticky=True,
            forced_break=True,
        )
    )
    units.append(Unit("graft " * 40, 40, ("2 Grafting",), page_start=2, page_end=2))
    units.append(
        Unit(
            "3 Pruning",
            2,
            ("3 Pruning",),
            page_start=2,
            page_end=2,
            heading=True,
            sticky=True,
            forced_break=True,
        )
    )
    units += [Unit("prune " * 30, 30, ("3 Pruning",), page_start=2, page_end=2) for _ in range(3)]
    return units


@pytest.mark.parametrize("coarsen_above", [segment.COARSEN_ABOVE, 0])
def test_a_heading_at_a_page_foot_cites_its_sections_page(monkeypatch, coarsen_above) -> None:
    """The reviewed code cited page 1 once the units were coarsened: the heading's run took
    in the paragraph after it and weighed all of it on the heading's page."""
    monkeypatch.setattr(segment, "COARSEN_ABOVE", coarsen_above)
    settings = ChunkSettings(max_tokens=200)
    (grafting,) = [c for c in chunk_units(_units(), settings, _count).chunks if "graft" in c.text]
    assert (grafting.page_start, grafting.page_end) == (1, 2)
    assert grafting.cited_page == 2
