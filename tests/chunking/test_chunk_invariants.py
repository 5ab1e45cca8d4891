"""The chunking invariants on every file of examples/ and on a seeded random Markdown corpus.

Invariants (tests/chunking/chunk_invariants.py): token_count <= max_tokens (and never below
the counter's count of the text), no empty chunk, no chunk over the character cap, no chunk
under min_tokens unless the document is one chunk or neither neighbour had room for it,
line ranges inside the file and in order, heading chains found in the file, every word of
every non-blank line in a chunk covering it, table rows whole, fences balanced.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from chunk_invariants import check_document

from kb_search.chunking.tokens import count_tokens
from kb_search.formats.markdown import front_matter, parse_markdown
from kb_search.ingest.parse import parse_file
from kb_search.parsed import ChunkSettings

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TEXT_SUFFIXES = {".md", ".txt", ".rst"}


def words(text: str) -> int:
    return len(text.split())


@pytest.mark.parametrize(
    "path", sorted(p for p in EXAMPLES.rglob("*") if p.is_file()), ids=lambda p: p.name
)
@pytest.mark.parametrize("max_tokens", [200, 48])
def test_every_example_file_keeps_the_invariants(path: Path, max_tokens: int) -> None:
    settings = ChunkSettings(max_tokens=max_tokens, min_tokens=max_tokens // 5)
    document = parse_file(path, settings)
    text = path.read_text(encoding="utf-8")
    is_markdown = path.suffix == ".md"
    body_start = front_matter(text.split("\n"))[1] if is_markdown else 0
    if path.suffix in TEXT_SUFFIXES:
        check_document(document, text, settings, count_tokens, body_start, is_markdown)
    else:  # code: its own chunker; the shared limits still hold
        for chunk in document.chunks:
            assert chunk.text.strip()
            assert chunk.token_count <= settings.max_tokens
            assert len(chunk.text) <= settings.char_limit
            assert 1 <= chunk.line_start <= chunk.line_end <= text.count("\n") + 1


class MarkdownGenerator:
    """Random Markdown of the shapes real documentation has: heading-only sections, runs of
    headings, one-line and wrapped paragraphs, lists, fences short and long, narrow and wide
    tables with padded or 100-dash separators, tables with hundreds of rows."""

    def __init__(self, seed: int):
        self.random = random.Random(seed)
        self.serial = 0

    def word(self) -> str:
        self.serial += 1
        return f"w{self.serial}"

    def sentence(self, low: int = 3, high: int = 20) -> str:
        return " ".join(self.word() for _ in range(self.random.randint(low, high))) + "."

    def paragraph(self) -> list[str]:
        shape = self.random.random()
        if shape < 0.3:  # one long line, as most Markdown is written
            return [" ".join(self.sentence() for _ in range(self.random.randint(1, 12)))]
        if shape < 0.5:
            return [f"- {self.sentence(2, 12)}" for _ in range(self.random.randint(1, 8))]
        return [self.sentence(4, 14) for _ in range(self.random.randint(1, 6))]

    def fence(self) -> list[str]:
        size = self.random.choice([2, 5, 30, 80])
        body = [f"    call({self.word()}, {self.word()})" for _ in range(size)]
        return ["```python", *body, "```"]

    def table(self) -> list[str]:
        columns = self.random.randint(2, 4)
        dashes = self.random.choice([3, 12, 100])
        header = "| " + " | ".join(f"Col{self.word()}" for _ in range(columns)) + " |"
        separator = "|" + "|".join("-" * dashes for _ in range(columns)) + "|"
        rows = []
        for _ in range(self.random.choice([1, 3, 12, 150])):
            cells = [" ".join(self.word() for _ in range(self.random.randint(1, 6)))]
            cells += [self.word() for _ in range(columns - 1)]
            padding = " " * self.random.choice([1, 1, 30])
            rows.append("|" + "|".join(f" {c}{padding}" for c in cells) + "|")
        return [header, separator, *rows]

    def document(self) -> str:
        lines: list[str] = []
        if self.random.random() < 0.2:
            lines += ["---", f"title: {self.word()}", "---"]
        for _ in range(self.random.randint(1, 25)):
            level = self.random.choice([1, 2, 2, 3, 3, 4])
            lines += [f"{'#' * level} Title {self.word()}", ""]
            for _ in range(self.random.choice([0, 0, 1, 1, 2, 4])):  # 0: heading-only
                block = self.random.choice(["p", "p", "p", "fence", "table"])
                lines += getattr(self, {"p": "paragraph"}.get(block, block))() + [""]
        return "\n".join(lines)


@pytest.mark.parametrize("seed", range(60))
def test_generated_markdown_keeps_the_invariants(seed: int) -> None:
    text = MarkdownGenerator(seed).document()
    body_start = front_matter(text.split("\n"))[1]
    for settings, count in (
        (ChunkSettings(max_tokens=60, min_tokens=15), words),
        (ChunkSettings(max_tokens=200, min_tokens=40), count_tokens),
    ):
        document = parse_markdown(text, Path(f"gen{seed}.md"), settings, count)
        check_document(document, text, settings, count, body_start)
