"""The PDF counts' title checks flag the kinds of wrong titles the audits found."""

from __future__ import annotations

import pytest
from bench.pdf import title_flag


@pytest.mark.parametrize(
    ("title", "why"),
    [
        ("Documentation for 2up.tex:", "cut short"),
        ("Das robustcommand-Package – Erweiterungen von", "cut short"),
        ("Le dahut - Pr\u00c3\u00a9cis de zoologie", "mojibake"),
        ("easyformat [.5em] _the_ manual", "TeX source"),
        ("The TEXshade package\u21e4", "footnote mark"),
        ("The TEXshade package", ""),
        ("Documentation for colortab: Shading and coloring TEX tables", ""),
        ("Le dahut - Pr\u00e9cis de zoologie", ""),
        ("\u58f0 \u660e", ""),
        ("2b", "no words"),
    ],
)
def test_title_flags(title: str, why: str) -> None:
    assert title_flag(title) == why
