"""Source files that are a tool's table of literals (Gay's dtoa test numbers, Unicode and
IDNA tables) are left out like generated files, counted as "data table"; code with a table
in it, a small table and data formats (JSON) stay (formats/generated.py `is_data_table`)."""

from __future__ import annotations

from pathlib import Path

from kb_search.formats.generated import DATA_TABLE, DATA_TABLE_MIN_BYTES, is_data_table
from kb_search.formats.registry import classify

LICENCE = "// Copyright 2010 the V8 project authors. All rights reserved.\n" * 20
OPENING = (
    LICENCE
    + "\n// This file contains 100.000 decimal representations of random doubles.\n"
    + '#include "gay-fixed.h"\n\nnamespace double_conversion {\n\n'
    + "static const PrecomputedFixed kFixedTestNumbers[] = {\n"
)
CLOSING = (
    "};\n\nstatic const int kFixedTestNumbersLength = "
    "sizeof(kFixedTestNumbers) / sizeof(kFixedTestNumbers[0]);\n\n"
    "Vector<const PrecomputedFixed> PrecomputedFixedRepresentations() {\n"
    "  int number_elements = kFixedTestNumbersLength;\n"
    "  return Vector<const PrecomputedFixed>(kFixedTestNumbers, number_elements);\n}\n\n"
    "}  // namespace double_conversion\n"
)
FUNCTION = (
    "static int scale(int value, int factor) {\n"
    "  if (value < 0) {\n    return -scale(-value, factor);\n  }\n"
    "  int result = value * factor;\n  return result / 10;\n}\n\n"
)


def rows(count: int) -> str:
    return "".join(
        f'  {{{n * 3.3831671815188e-3:.25e}, {n % 19}, "{n * 7919}", {n % 23 - 11}}},\n'
        for n in range(count)
    )


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_generated_table_of_literals_is_left_out(tmp_path):
    """double-conversion's gay-fixed.cc: 100,000 rows, 6 MB. The old code indexed each of
    the three such files as 5,000 chunks (the cap), 14% of a 640-file folder's chunks."""
    table = write(tmp_path / "cctest" / "gay-fixed.cc", OPENING + rows(4000) + CLOSING)
    assert table.stat().st_size > DATA_TABLE_MIN_BYTES
    assert is_data_table(table)
    assert classify(table).left_out == DATA_TABLE
    assert classify(table, include_generated=True).left_out is None
    assert classify(table, named=True).left_out is None


def test_python_and_javascript_tables_are_data_tables_too(tmp_path):
    idna = "".join(f"    (0x{n:X}, 'M', '{chr(97 + n % 26)}'),\n" for n in range(6000))
    opening = '"""IDNA Mapping Table"""\n\ndata = (\n'
    python = write(tmp_path / "uts46data.py", opening + idna + ")\n")
    js = write(tmp_path / "table.js", "export default [\n" + rows(3000) + "];\n")
    assert classify(python).left_out == DATA_TABLE
    assert classify(js).left_out == DATA_TABLE


def test_code_around_a_table_is_read(tmp_path):
    """A table above (or below) the file's functions: its middle or end is code."""
    above = write(tmp_path / "above.cc", OPENING + rows(2000) + CLOSING + FUNCTION * 400)
    below = write(tmp_path / "below.cc", FUNCTION * 400 + OPENING + rows(2000) + CLOSING)
    assert not is_data_table(above) and not is_data_table(below)
    assert classify(above).left_out is None and classify(below).left_out is None


def test_a_small_table_and_a_json_fixture_are_read(tmp_path):
    small = write(tmp_path / "small.cc", OPENING + rows(300) + CLOSING)
    assert small.stat().st_size < DATA_TABLE_MIN_BYTES
    assert classify(small).left_out is None
    records = ",\n".join(f'  [{n}, "{n * 7}", true, null]' for n in range(8000))
    fixture = write(tmp_path / "sample.json", "[\n" + records + "\n]\n")
    assert fixture.stat().st_size > DATA_TABLE_MIN_BYTES
    assert classify(fixture).left_out is None


def test_the_add_summary_counts_data_tables(kb, tmp_path):
    folder = tmp_path / "project"
    write(folder / "README.md", "# Project\n\nThe zebra option turns on stripes.\n")
    write(folder / "tables" / "gay-fixed.cc", OPENING + rows(4000) + CLOSING)
    data = kb.json("add", str(folder))
    assert data["added"] == 1 and data["left_out"] == {DATA_TABLE: 1}
    assert "1 generated file left out: 1 data table (" in data["summary"]


def test_a_log_is_left_out_by_its_lines_whatever_its_name(tmp_path):
    """`nohup.out`, `output.txt`: what a program printed, one event a line. The old code
    indexed a 15 MB one as 5,000 chunks (the cap), all embedded; only `*.log` was known."""
    stamped = "".join(
        f"2026-02-{1 + n % 28:02d}T12:{n % 60:02d}:05Z INFO sync worker={n % 8} status=ok\n"
        for n in range(200)
    )
    levels = "".join(f"[{n}] DEBUG handler request_id={n:08x} latency_ms=3\n" for n in range(200))
    syslog = "".join(f"Feb  {1 + n % 9} 12:00:{n % 60:02d} host cron[{n}]: x\n" for n in range(99))
    python = "".join(f"WARNING:root:disk {n}% full\n" for n in range(60))
    for name, text in (
        ("nohup.out", stamped),
        ("output.txt", levels),
        ("messages", syslog),
        ("run.txt", python),
        ("mvn-output.txt", "[INFO] Building jar: target/app.jar\n" * 40),
    ):
        path = write(tmp_path / name, text)
        assert classify(path).left_out == "log", name
        assert classify(path, include_generated=True).left_out is None
    for rotated in ("app.log.1", "app.log.2024-05-01"):
        assert classify(write(tmp_path / rotated, "started\n")).left_out == "log", rotated


def test_a_journal_or_a_short_transcript_is_read(tmp_path):
    journal = "".join(f"2026-02-{1 + n % 28:02d} 09:30 call with Bob: roof\n" for n in range(60))
    short = "".join(f"2026-02-01 12:00:{n:02d} started step {n}\n" for n in range(10))
    chat = "".join(f"[12:{n % 60:02d}:05] <ada> shall we meet at {n}?\n" for n in range(60))
    notes = "Errors seen this week:\n" + "".join(
        f"- the ERROR on page {n} comes from a stale cache\n" for n in range(40)
    )
    texts = {"journal.txt": journal, "steps.txt": short, "errors.txt": notes, "irc.txt": chat}
    for name, text in texts.items():
        assert classify(write(tmp_path / name, text)).left_out is None, name


def test_doxygen_search_data_and_navigation_scripts_are_left_out(tmp_path):
    """Doxygen's HTML output (a `-dev` package's API docs) holds a data script per letter in
    `search/` and the navigation tree as scripts beside `doxygen.css`: generated, like
    Sphinx's `searchindex.js`. Scripts of the same names elsewhere are read."""
    html = tmp_path / "html"
    write(html / "doxygen.css", "body { margin: 0 }\n")
    write(html / "search" / "searchdata.js", "var indexSectionsWithContent = { 0: 'a' };\n")
    letter = write(html / "search" / "all_0.js", "var searchData=\n[\n  ['a',['a',[1]]]\n];\n")
    tree = write(html / "navtreeindex0.js", 'var NAVTREEINDEX0 =\n{\n"a.html":[0,1]\n};\n')
    menu = write(html / "menudata.js", "var menudata={children:[]}\n")
    assert classify(letter).left_out == "search index"
    assert classify(tree).left_out == "build asset" and classify(menu).left_out == "build asset"
    mine = write(tmp_path / "app" / "search" / "all_0.js", "export const all = [];\n")
    own_menu = write(tmp_path / "app" / "menudata.js", "export const menu = [];\n")
    assert classify(mine).left_out is None and classify(own_menu).left_out is None
