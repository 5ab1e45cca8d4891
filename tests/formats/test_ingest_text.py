from pathlib import Path

from kb_search.formats.text import parse_text
from kb_search.parsed import ChunkSettings


def words(text: str) -> int:
    return len(text.split())


def parse(text: str, name: str = "note.txt", max_tokens: int = 200):
    return parse_text(text, Path(name), ChunkSettings(max_tokens, 5), count=words)


def test_small_note_is_one_chunk_titled_by_first_line():
    doc = parse("\n\nShopping list\n\neggs milk\nbread\n\n")
    assert doc.title == "Shopping list"
    assert doc.doc_type == "text"
    assert len(doc.chunks) == 1
    chunk = doc.chunks[0]
    assert (chunk.line_start, chunk.line_end) == (3, 6)
    assert chunk.text == "Shopping list\n\neggs milk\nbread"
    assert chunk.token_count == 5


def test_long_first_line_gives_stem_title():
    doc = parse("word " * 40, name="journal.txt")
    assert doc.title == "journal"


def test_large_note_is_packed_into_paragraph_windows():
    paragraphs = [" ".join([f"p{i}"] * 10) for i in range(6)]
    doc = parse("\n\n".join(paragraphs), max_tokens=25)
    assert [(c.line_start, c.line_end) for c in doc.chunks] == [(1, 3), (5, 7), (9, 11)]
    assert doc.chunks[1].text.startswith("p2")
    assert all(c.token_count <= 25 for c in doc.chunks)


def test_giant_paragraph_is_split_by_lines_then_words():
    lines = [" ".join(["w"] * 8) for _ in range(5)] + [" ".join(["big"] * 30)]
    doc = parse("\n".join(lines), max_tokens=20)
    assert all(c.token_count <= 20 for c in doc.chunks)
    assert sum(c.token_count for c in doc.chunks) == 70
    assert doc.chunks[-1].line_start == 6


def test_rst_sections_give_heading_chains():
    text = "\n".join(
        [
            "=====",
            "Title",
            "=====",
            "",
            "intro " * 15,
            "",
            "Usage",
            "-----",
            "",
            "usage " * 15,
            "",
            "Details",
            "~~~~~~~",
            "",
            "details " * 15,
            "",
            "Other",
            "-----",
            "",
            "other " * 15,
        ]
    )
    doc = parse(text, name="readme.rst", max_tokens=25)
    assert doc.title == "Title"
    assert [(c.heading, c.line_start) for c in doc.chunks] == [
        ("Title", 1),
        ("Title > Usage", 7),
        ("Title > Usage > Details", 12),
        ("Title > Other", 17),
    ]
