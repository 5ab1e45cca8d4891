"""Hostile lines and huge files against the patterns and sniffers that judge files and titles
(terminal codes, man-page name lines, contents entries, logs, data tables): each stays
linear or reads a bounded part of the file."""

from __future__ import annotations

import time
from pathlib import Path


def test_sniffers_and_title_patterns_stay_linear_on_hostile_lines(tmp_path: Path):
    """Guards (they pass on the reviewed code): a terminal-code, man-page, contents-entry,
    initials, reST-field or log pattern that backtracks would take minutes on these 400,000-
    character lines; the data-table sniffer reads three windows of a 2 GB file, not the file."""
    from kb_search.formats.generated import is_data_table, is_log_text
    from kb_search.formats.pdf.heading_checks import INITIALS_NAME_RE
    from kb_search.formats.pdf.outline import TOC_ENTRY_RE
    from kb_search.formats.pdf.structure import MAN_NAME_RE
    from kb_search.formats.text import _RST_FIELD, without_terminal_codes

    n = 200_000
    started = time.perf_counter()
    without_terminal_codes(("\x1b[" + "0;" * 1000) * (n // 1000) + "\x1b]" + "a" * n)
    without_terminal_codes("a\x08" * n)
    MAN_NAME_RE.match("a, " * n + "x")
    MAN_NAME_RE.match("a" + " " * n + "x")
    TOC_ENTRY_RE.search("a" + " ." * n + " x")
    INITIALS_NAME_RE.match("A. " * n)
    _RST_FIELD.fullmatch(":a:" + " " * n + "\n")
    assert not is_log_text(("[" + "1" * n + "\n").encode())
    huge = tmp_path / "table.c"
    with huge.open("wb") as handle:
        handle.truncate(2 * 1024**3)  # sparse: no disk used
    assert not is_data_table(huge)
    assert time.perf_counter() - started < 10
