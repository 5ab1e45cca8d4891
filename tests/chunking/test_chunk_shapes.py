"""Chunking of the shapes that went wrong on real documentation (Argo CD's docs) and of
hostile input: a table whose separator row is 170 dashes, heading-only sections, a row wider
than the budget, a 1 MB line without spaces, a file of 20,000 headings."""

from __future__ import annotations

import re
from pathlib import Path

from chunk_invariants import check_document

from kb_search.chunking.caps import cap_document
from kb_search.chunking.tokens import count_tokens
from kb_search.chunking.units import Passage, chunk_passages
from kb_search.formats.markdown import parse_markdown
from kb_search.formats.text import parse_text
from kb_search.ingest.parse import parse_file
from kb_search.parsed import ChunkSettings, ParsedChunk, ParsedDocument

SETTINGS = ChunkSettings()  # 200 / 40, the defaults
_WORD = re.compile(r"[^\W\d_]{2,}\w*")


def words(text: str) -> int:
    return len(text.split())


def prose_words(text: str) -> int:
    return len(_WORD.findall(text))


def sync_waves_like(rows: int) -> str:
    """The layout of docs/user-guide/sync-waves.md: padded cells, a 170-dash separator."""
    header = "| Hook         | Description" + " " * 160 + "|"
    separator = "|--------------|" + "-" * 172 + "|"
    body = [
        f"| `Hook{i}`" + " " * 6 + f"| Executes step {i} of the sync once the hooks of wave "
        f"{i + 1} have completed and were successful." + " " * 70 + "|"
        for i in range(rows)
    ]
    intro = "Sync phases and hooks define when resources are applied during a sync operation."
    outro = "Adding the hook annotation to a resource assigns it to a specific sync phase."
    return "\n".join(
        ["# Sync Phases and Waves", "", intro, "", header, separator, *body, "", outro]
    )


def md(text: str, settings: ChunkSettings = SETTINGS, count=count_tokens):
    return parse_markdown(text, Path("doc.md"), settings, count)


def test_a_wide_table_is_split_by_rows_with_a_small_normalised_header():
    text = sync_waves_like(40)
    doc = md(text)
    check_document(doc, text, SETTINGS, count_tokens)
    total = sum(count_tokens(line) for line in text.split("\n"))
    assert len(doc.chunks) <= total // (SETTINGS.max_tokens // 2) + 1  # full chunks, not 402
    assert all(prose_words(c.text) >= 8 for c in doc.chunks)
    assert not any("----" in c.text for c in doc.chunks)  # separator stored as |---|
    header = "| Hook | Description |\n|---|---|\n"
    with_rows = [c for c in doc.chunks if "`Hook" in c.text]
    assert len(with_rows) > 2
    for chunk in with_rows:
        assert header in chunk.text
        assert "  |" not in chunk.text  # padding collapsed
    for i in range(40):  # every row whole, exactly once
        row = f"| `Hook{i}` | Executes step {i} of the sync"
        assert sum(c.text.count(row) for c in doc.chunks) == 1, i
    continued = [c for c in with_rows if not c.text.startswith("# Sync Phases and Waves\n\nSync")]
    assert all(c.text.startswith(f"# Sync Phases and Waves\n\n{header}") for c in continued)


def test_a_wide_header_is_not_repeated():
    columns = [f"Column {i} with a long descriptive name" for i in range(12)]
    header = "| " + " | ".join(columns) + " |"
    separator = "|" + "---|" * len(columns)
    rows = ["| " + " | ".join(f"v{r}c{c}" for c in range(12)) + " |" for r in range(60)]
    text = "\n".join(["# Wide", "", header, separator, *rows])
    doc = md(text)
    check_document(doc, text, SETTINGS, count_tokens)
    assert sum(c.text.count("Column 0 with") for c in doc.chunks) == 1
    assert len(doc.chunks) > 2


def test_heading_only_sections_join_the_next_section_and_name_it():
    big = "\n\n".join(f"Pulling step {i}: " + "fetch the chart layer " * 12 for i in range(6))
    text = f"# OCI\n\n## Pulling\n\n{big}\n\n## Pushing\n\n{big}\n"
    doc = md(text)
    check_document(doc, text, SETTINGS, count_tokens)
    assert doc.chunks[0].text.startswith("# OCI\n\n## Pulling\n\nPulling step 0")
    assert doc.chunks[0].heading == "OCI > Pulling"
    pushing = [c for c in doc.chunks if "## Pushing" in c.text]
    assert pushing[0].text.startswith("## Pushing\n\nPulling step 0")
    assert all(c.heading == "OCI > Pushing" for c in doc.chunks[doc.chunks.index(pushing[0]) :])


def test_a_deep_heading_never_ends_a_chunk():
    body = "\n\n".join(f"#### Option {i}\n\n" + f"option {i} text " * 20 for i in range(12))
    text = f"# Options\n\n{body}\n"
    doc = md(text)
    check_document(doc, text, SETTINGS, count_tokens)
    for chunk in doc.chunks:
        assert not chunk.text.rstrip().split("\n")[-1].startswith("#")


def test_small_sections_merge_with_a_neighbour_and_big_ones_stay_apart():
    sections = [f"## Small {i}\n\nshort {i}." for i in range(6)]
    sections.insert(3, "## Big\n\n" + "a long sentence about the big section. " * 30)
    text = "# Guide\n\n" + "\n\n".join(sections) + "\n"
    doc = md(text)
    check_document(doc, text, SETTINGS, count_tokens)
    assert all(c.token_count >= SETTINGS.min_tokens for c in doc.chunks)
    assert all(c.text.count("## Big") <= 1 for c in doc.chunks)


HEADS = ("| Name", "| Description", "| Example")


def test_a_row_wider_than_the_budget_is_split_by_cells_keeping_their_names():
    names = ["Name", "Kind", "Default", "Description", "Example"]
    cells = ["replicas", "int", "1", " ".join(["explains"] * 40), " ".join(["example"] * 40)]
    rows = ["| a | b | c | d | e |", "| " + " | ".join(cells) + " |", "| f | g | h | i | j |"]
    table = ["| " + " | ".join(names) + " |", "|---|---|---|---|---|", *rows]
    text = "\n".join(["# Fields", "", *table])
    settings = ChunkSettings(max_tokens=60, min_tokens=5)
    doc = md(text, settings, words)
    check_document(doc, text, settings, words)
    pieces = [c for c in doc.chunks if "replicas" in c.text or "explains" in c.text]
    assert len(pieces) >= 2
    for piece in pieces:
        lines = piece.text.split("\n")
        header_at = next(i for i, line in enumerate(lines) if line.startswith(HEADS))
        columns = lines[header_at].count("|") - 1
        assert lines[header_at + 1] == "|---" * columns + "|"
        assert lines[header_at + 2].count("|") - 1 == columns
    explained = [c for c in doc.chunks if "explains" in c.text]
    assert sum(c.text.count("explains") for c in explained) == 40  # the cell whole, once
    assert "| a | b | c | d | e |" in doc.chunks[0].text  # rows that fit stay rows


def test_a_single_cell_over_the_budget_is_cut_at_spaces_under_its_name():
    cell = " ".join(f"word{i}" for i in range(150))
    text = f"| Key | Value |\n|---|---|\n| big | {cell} |\n"
    settings = ChunkSettings(max_tokens=60, min_tokens=5)
    doc = md(text, settings, words)
    check_document(doc, text, settings, words)
    value_pieces = [c for c in doc.chunks if "word" in c.text]
    assert len(value_pieces) >= 3
    assert all(c.text.startswith("| Value |\n|---|\n| word") for c in value_pieces)
    found = " ".join(c.text.split("\n")[2].strip("| ") for c in value_pieces)
    assert found == cell


def test_a_one_megabyte_line_without_spaces_is_cut_to_the_character_cap(tmp_path: Path):
    line = "".join("abcdefghijklmnopqrstuvwxyz0123456789"[i * 7 % 36] for i in range(1_000_000))
    path = tmp_path / "blob.txt"
    path.write_text(line)
    doc = parse_file(path, SETTINGS)
    assert len(doc.chunks) <= SETTINGS.max_chunks
    assert all(len(c.text) <= SETTINGS.char_limit for c in doc.chunks)
    assert all(c.token_count <= SETTINGS.max_tokens for c in doc.chunks)
    assert all((c.line_start, c.line_end) == (1, 1) for c in doc.chunks)
    assert "".join(c.text for c in doc.chunks) == line
    assert doc.notes == [f"1 line longer than {SETTINGS.char_limit} characters split"]


def test_a_long_line_in_markdown_keeps_its_heading_and_every_character():
    line = "x" * 30_000
    doc = md(f"# Blob\n\n{line}\n", ChunkSettings(max_tokens=200, max_chars=1000))
    assert all(len(c.text) <= 1000 for c in doc.chunks)
    assert all(c.text.startswith("# Blob\n\n") for c in doc.chunks)
    assert "".join(c.text.removeprefix("# Blob\n\n") for c in doc.chunks) == line


def test_twenty_thousand_headings_stay_under_the_chunk_cap():
    sections = [f"## Heading {i}\n\nShort body {i} with a few words." for i in range(20_000)]
    text = "# Many\n\n" + "\n\n".join(sections) + "\n"
    doc = md(text)
    assert len(doc.chunks) <= SETTINGS.max_chunks
    assert all(c.token_count >= SETTINGS.min_tokens for c in doc.chunks)
    assert all(c.token_count <= SETTINGS.max_tokens for c in doc.chunks)
    assert all(not c.text.rstrip().split("\n")[-1].startswith("#") for c in doc.chunks)
    starts = [c.line_start for c in doc.chunks]
    assert starts == sorted(starts)


def test_beyond_max_chunks_the_rest_is_dropped_with_a_note():
    text = "\n\n".join(f"Paragraph {i} " + "word " * 30 for i in range(100))
    settings = ChunkSettings(max_tokens=40, min_tokens=5, max_chunks=10)
    doc = parse_text(text, Path("long.txt"), settings, words)
    assert len(doc.chunks) == 10
    assert doc.notes and doc.notes[-1].startswith("truncated after 10 chunks")


def test_every_format_gets_the_caps_in_parse_file(tmp_path: Path):
    path = tmp_path / "bundle.js"
    path.write_text("var data = '" + "q" * 50_000 + "';\n")
    settings = ChunkSettings(max_tokens=200, max_chars=2000)
    doc = parse_file(path, settings, count=words)  # like the model: a long word is one token
    assert all(len(c.text) <= 2000 for c in doc.chunks)
    assert "".join(c.text for c in doc.chunks).replace(" ", "").count("q") == 50_000
    assert any("longer than 2000 characters" in note for note in doc.notes)


def test_a_small_tail_is_rebalanced_not_left_alone():
    paragraphs = [" ".join([f"p{i}"] * 18) for i in range(3)] + ["tail end"]
    text = "\n\n".join(paragraphs)
    settings = ChunkSettings(max_tokens=40, min_tokens=10)
    doc = parse_text(text, Path("note.txt"), settings, words)
    check_document(doc, text, settings, words, markdown=False)
    assert [c.token_count for c in doc.chunks] == [36, 20]


def test_pdf_passages_keep_headings_with_their_text_and_prefer_page_breaks():
    prose = "The pump moves water through the cooling loop at a steady rate. " * 6
    passages = [
        Passage("Cooling", ("Cooling",), 1, heading=True),
        Passage(prose, ("Cooling",), 1),
        Passage("Maintenance", ("Maintenance",), 1, heading=True),  # last line of page 1
        Passage(prose, ("Maintenance",), 2),
        Passage(
            "part | count | price\npump | 2 | 40\nvalve | 8 | 3", ("Maintenance",), 2, rows=True
        ),
        Passage(prose, ("Maintenance",), 3),
    ]
    cut = chunk_passages(passages, SETTINGS, count_tokens)
    assert all(c.line_start is None for c in cut.chunks)
    assert [(c.page_start, c.page_end, c.heading) for c in cut.chunks] == [
        (1, 1, "Cooling"),
        (1, 2, "Maintenance"),
        (3, 3, "Maintenance"),
    ]
    assert cut.chunks[1].text.startswith("Maintenance\n\nThe pump")
    assert "part | count | price\npump | 2 | 40\nvalve | 8 | 3" in cut.chunks[1].text
    assert cut.chunks[2].text.startswith("Maintenance\n\nThe pump")  # heading repeated


def test_cap_document_cuts_long_chunks_at_lines_and_drops_past_the_chunk_cap():
    text = "\n".join(f"line {i} " + "x" * 30 for i in range(10))
    long_chunk = ParsedChunk(text, symbol="f", line_start=11, line_end=20)
    chunks = [long_chunk] + [ParsedChunk(f"chunk {i}", line_start=i, line_end=i) for i in range(9)]
    document = ParsedDocument("t", "code", chunks)
    capped = cap_document(document, ChunkSettings(max_chars=100, max_chunks=4), words)
    assert len(capped.chunks) == 4
    assert [(c.line_start, c.line_end) for c in capped.chunks[:3]] == [(11, 12), (13, 14), (15, 16)]
    assert all(len(c.text) <= 100 and c.symbol == "f" for c in capped.chunks[:3])
    assert capped.notes == [
        "1 chunks longer than 100 characters split",
        "truncated after 4 chunks (10 more not indexed)",
    ]


def test_dot_leaders_of_a_table_of_contents_count_as_three_dots():
    entries = [f"Creature {i} " + "." * 60 + f" {i + 6}" for i in range(40)]
    passages = [Passage(line, ("Contents",), 1) for line in entries]
    cut = chunk_passages(passages, SETTINGS, count_tokens)
    assert len(cut.chunks) <= 3
    assert all(prose_words(c.text) >= 8 and "...." not in c.text for c in cut.chunks)
    assert "Creature 7 ... 13" in cut.chunks[0].text
    doc = md("# Index\n\nBear . . . . . . . . 8\n\nA rule:\n\n----------\n")
    assert doc.chunks[0].text == "# Index\n\nBear ... 8\n\nA rule:\n\n---"
