"""Tree-sitter code chunking on generated source files, one per language (tests/data/code)."""

from pathlib import Path

import pytest

from kb_search.formats.code.grammars import GRAMMARS, grammar_name
from kb_search.formats.code.parse import parse_code
from kb_search.formats.registry import language_for
from kb_search.parsed import ChunkSettings

SAMPLES = Path(__file__).parents[2] / "data" / "code"
FILES = sorted(SAMPLES.iterdir())


def parse(name: str, max_tokens: int = 80, min_tokens: int = 5, text: str | None = None):
    path = SAMPLES / name
    require_grammar(path)
    return parse_code(text if text is not None else path.read_text(), path,
                      ChunkSettings(max_tokens, min_tokens))  # fmt: skip


# Taken before any test swaps a grammar for a missing one.
GRAMMAR_MODULES = {name: grammar.module for name, grammar in GRAMMARS.items()}


def require_grammar(path: Path) -> None:
    """C#, Kotlin, Scala and Swift grammars are the `code` extra: without it, skip."""
    module = GRAMMAR_MODULES.get(grammar_name(language_for(path) or "text", path.suffix))
    if module is not None:
        pytest.importorskip(module, reason=f"{path.name} needs the `code` extra")


def summary(doc):
    return [(c.symbol, c.line_start, c.line_end) for c in doc.chunks]


def chunk(doc, symbol: str):
    matches = [c for c in doc.chunks if c.symbol == symbol]
    assert len(matches) == 1, (symbol, summary(doc))
    return matches[0]


# At 80 tokens the bigger classes split into header + members; small ones stay whole.
EXPECTED = {
    "sample.go": [
        (None, 1, 10), ("Server", 12, 16), ("Handler", 18, 21), ("Server.Start", 23, 31),
        ("Server.Name", 33, 34), ("ID, Label", 36, 39), ("helper", 41, 41),
    ],
    "sample.java": [
        (None, 1, 3), ("Cart", 5, 11), ("Cart.add", 13, 20), ("Cart.remove", 22, 28),
        ("Cart.total", 30, 33), ("Cart.Line", 35, 43), ("Priced", 45, 47), ("Color", 49, 49),
    ],
    "sample.rs": [
        (None, 1, 1), ("Point", 3, 8), ("Point", 10, 10), ("Point.new", 11, 14),
        ("Point.norm", 16, 20), ("Point", 22, 26), ("Shape", 28, 31), ("Kind", 33, 36),
        ("square", 38, 42), ("run", 44, 45), ("tests", 47, 49), ("tests.it_works", 51, 55),
    ],
    "sample.ts": [
        (None, 1, 1), ("StoreOptions", 3, 7), ("Key", 9, 9), ("add", 11, 14),
        ("double", 16, 18), ("Store", 20, 25), ("Store.get", 27, 30), ("Store.set", 32, 38),
        ("Store.handle", 40, 43), ("Geometry", 45, 45), ("Geometry.area", 46, 49),
        ("Mode", 51, 54), ("main", 56, 56),
    ],
    "sample.tsx": [(None, 1, 1), ("Props", 3, 5), ("Card", 7, 10), ("List", 12, 16)],
    "sample.js": [(None, 1, 1), ("read", 3, 8), ("Cache", 10, 23), (None, 25, 25)],
    "sample.c": [
        (None, 1, 3), ("buffer", 5, 9), ("point_t", 11, 13), ("color_t", 15, 15),
        (None, 17, 17), ("buffer_append", 19, 28), ("buffer_name", 30, 30), ("main", 32, 35),
        ("debug_dump", 37, 41),
    ],
    "sample.cpp": [
        (None, 1, 1), ("app", 3, 3), ("app.ui", 4, 4), ("app.ui.Widget", 6, 10),
        ("app.ui.Widget.draw", 12, 15), ("app.ui.Widget", 17, 21),
        ("app.ui.Widget.resize", 23, 26), ("app.Stack", 28, 34), ("main", 36, 38),
    ],
    "sample.cs": [
        (None, 1, 1), ("Shop.Billing", 3, 4), ("Shop.Billing.Invoice", 5, 9),
        ("Shop.Billing.Invoice.AddLine", 11, 18), ("Shop.Billing.Invoice.Invoice", 20, 20),
        ("Shop.Billing.Invoice.IVisitor", 22, 26), ("Shop.Billing.Money", 28, 31),
        ("Shop.Billing.Status", 33, 33), ("Shop.Billing.Customer", 35, 36),
    ],
    "sample.rb": [
        (None, 1, 1), ("Billing", 3, 4), ("Billing.Invoice", 5, 7),
        ("Billing.Invoice.initialize", 9, 12), ("Billing.Invoice.total", 14, 17),
        ("Billing.Invoice.load", 19, 22), ("Billing.version", 24, 27), ("main", 29, 31),
        (None, 33, 33),
    ],
    "sample.php": [
        (None, 1, 5), ("User", 7, 13), ("User.__construct", 15, 23), ("User.name", 25, 29),
        ("HasName", 31, 34), ("Greets", 36, 39), ("helper", 41, 44),
    ],
    "sample.sh": [
        (None, 1, 4), ("log", 6, 9), ("rotate", 11, 15), ("cleanup", 17, 19), (None, 21, 22),
    ],
    "sample.kt": [
        (None, 1, 3), ("Vec", 5, 6), ("Vec.length", 7, 8), ("Vec.plus", 10, 14),
        ("Vec.Companion", 16, 19), ("Shape", 21, 23), ("Registry", 25, 31), ("Color", 33, 33),
        ("helper", 35, 38), (None, 40, 40),
    ],
    "sample.swift": [
        (None, 1, 1), ("Shape", 3, 6), ("Circle", 8, 16), ("Canvas", 18, 30),
        ("Circle", 32, 34), ("Direction", 36, 38), ("helper", 40, 42),
    ],
    "sample.scala": [
        (None, 1, 3), ("Account", 5, 7), ("Account.deposit", 9, 15), ("Account.total", 17, 18),
        ("Account", 20, 22), ("Greeter", 24, 26), ("Point", 28, 28), ("helper", 30, 30),
    ],
    "sample.lua": [
        (None, 1, 1), ("M.add", 3, 6), ("M.describe", 8, 11), ("helper", 13, 15),
        ("M.double", 17, 19), ("greet", 21, 23), (None, 25, 25),
    ],
}  # fmt: skip


def test_every_sample_has_expectations():
    assert sorted(EXPECTED) == [p.name for p in FILES]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_symbols_and_line_ranges(name):
    doc = parse(name)
    assert doc.doc_type == "code"
    assert doc.metadata["chunker"].startswith("tree-sitter")
    assert summary(doc) == EXPECTED[name]


@pytest.mark.parametrize("max_tokens,min_tokens", [(30, 5), (60, 5), (80, 40), (200, 40)])
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_nothing_lost_text_matches_lines_budget_kept(path, max_tokens, min_tokens):
    lines = path.read_text().split("\n")
    doc = parse(path.name, max_tokens, min_tokens)
    covered: set[int] = set()
    for c in doc.chunks:
        assert c.token_count <= max_tokens, (c.symbol, c.token_count)
        assert 1 <= c.line_start <= c.line_end <= len(lines)
        body = "\n".join(lines[c.line_start - 1 : c.line_end])
        # The chunk is its lines, perhaps under context lines (or a part of one long line).
        assert c.text.endswith(body) or c.line_start == c.line_end
        covered.update(range(c.line_start, c.line_end + 1))
    missing = [i + 1 for i, line in enumerate(lines) if line.strip() and i + 1 not in covered]
    assert missing == []
    starts = [c.line_start for c in doc.chunks]
    assert starts == sorted(starts)


def test_doc_comments_annotations_and_multiline_signatures_stay_with_the_definition():
    java = parse("sample.java")
    add = chunk(java, "Cart.add")
    assert add.text.splitlines()[1:4] == [
        "    /** Adds an item to the cart. */",
        "    @Override",
        "    public void add(",
    ]
    assert "int quantity) {" in add.text and 'String s = "} not a brace {";' in add.text
    go = parse("sample.go")
    start = chunk(go, "Server.Start")
    assert start.text.startswith("// Start listens on the configured port.\n// It returns when")
    assert start.text.endswith("\treturn nil\n}")
    assert parse("sample.rs").chunks[1].text.startswith(
        "/// A point in the plane.\n#[derive(Debug, Clone)]\npub struct Point {"
    )
    assert "@Log()\n  async set(" in chunk(parse("sample.ts"), "Store.set").text
    assert chunk(parse("sample.c"), "buffer_append").text.startswith(
        "/* Appends bytes.\n * Returns the new length. */\nstatic size_t\nbuffer_append("
    )
    assert chunk(parse("sample.php"), "User").text.startswith('/**\n * A user of the app.\n */\n#[')


def test_members_carry_the_enclosing_signatures():
    cpp = parse("sample.cpp")
    draw = chunk(cpp, "app.ui.Widget.draw")
    assert draw.text.splitlines()[:3] == [
        "// namespace app {",
        "// namespace ui {",
        "// class Widget : public Base {",
    ]
    assert chunk(parse("sample.rb"), "Billing.Invoice.total").text.splitlines()[:2] == [
        "# module Billing",
        "# class Invoice < Base",
    ]
    header = chunk(parse("sample.java"), "Cart")
    assert header.text.startswith("/**\n * A shopping cart")  # its own signature is in its text
    assert "private int total = 0;" in header.text


def test_small_class_is_one_chunk_and_big_budget_keeps_classes_whole():
    doc = parse("sample.java", max_tokens=400)
    assert ("Cart", 5, 43) in summary(doc)
    assert not any(c.symbol and c.symbol.startswith("Cart.") for c in doc.chunks)


def test_namespace_is_always_opened_and_tiny_header_joins_first_member():
    doc = parse("sample.cs", max_tokens=400, min_tokens=40)
    symbols = [c.symbol for c in doc.chunks]
    assert "Shop.Billing.Invoice" in symbols
    invoice = chunk(doc, "Shop.Billing.Invoice")
    assert invoice.line_start == 3 and invoice.text.startswith("namespace Shop.Billing\n{")


def test_tiny_neighbours_are_packed_and_named():
    doc = parse("sample.go", max_tokens=200, min_tokens=40)
    packed = [c for c in doc.chunks if c.symbol and "," in c.symbol]
    assert [(c.symbol, c.line_start, c.line_end) for c in packed] == [
        ("Server.Name, ID, Label, helper", 33, 41)
    ]


def test_oversized_method_is_split_by_lines_with_its_symbol_and_signature():
    body = "\n".join(f"        total += item{i}.price() * {i};" for i in range(60))
    text = (
        "public class Big {\n    /** Sums. */\n    public int sum(\n        int a) {\n"
        f"{body}\n        return total;\n    }}\n}}\n"
    )
    doc = parse("Big.java", max_tokens=80, text=text)
    sums = [c for c in doc.chunks if c.symbol == "Big.sum"]
    assert len(sums) > 3
    assert sums[0].text.startswith("// public class Big {\n    /** Sums. */")
    assert sums[1].text.startswith("// public class Big {\n// public int sum(\n")
    assert sums[-1].line_end == 67  # the class's closing brace joins its last member
    assert all(c.token_count <= 80 for c in doc.chunks)


def test_go_methods_on_value_and_pointer_receivers_share_a_convention():
    text = "package p\n\nfunc (s *Server[T]) Stop() {}\n\nfunc (Server) Reset() {}\n"
    doc = parse("generic.go", text=text)
    assert [c.symbol for c in doc.chunks] == [None, "Server.Stop", "Server.Reset"]


def test_unparseable_file_falls_back_to_regex():
    text = "\n".join(f"<<< %%{i} ))) {{{{ ]]] ?? ::" for i in range(40))
    doc = parse("broken.go", text=text)
    assert doc.metadata["chunker"] == "regex"
    assert "unparsed" in doc.metadata["parse_error"]
    assert doc.chunks and doc.chunks[-1].line_end == 40


def test_cpp_header_named_dot_h_goes_to_the_cpp_grammar():
    text = (
        "#pragma once\n\nnamespace geo {\n\ntemplate <typename T>\nclass Box {\n public:\n"
        "  explicit Box(T v) : v_(v) {}\n  T get() const { return v_; }\n private:\n  T v_;\n};\n"
        "\n}  // namespace geo\n"
    )
    doc = parse("box.h", text=text)
    assert doc.language == "c" and doc.metadata["chunker"] == "tree-sitter cpp"
    assert summary(doc) == [(None, 1, 1), ("geo", 3, 3), ("geo.Box", 5, 14)]


def test_languages_without_a_grammar_use_windows():
    text = "\n".join(f"key_{i}: value number {i}" for i in range(80))
    doc = parse("config.yaml", max_tokens=60, text=text)
    assert doc.metadata["chunker"] == "regex"
    assert len(doc.chunks) > 3 and all(c.symbol is None for c in doc.chunks)


def test_missing_grammar_package_falls_back_to_regex(monkeypatch):
    from dataclasses import replace

    from kb_search.formats.code import grammars as code_grammars

    absent = replace(code_grammars.GRAMMARS["go"], module="tree_sitter_not_installed")
    monkeypatch.setitem(code_grammars.GRAMMARS, "go", absent)
    code_grammars.load_language.cache_clear()
    try:
        doc = parse("sample.go")
    finally:
        code_grammars.load_language.cache_clear()
    assert doc.metadata["chunker"] == "regex"
    assert "Server.Start" in [c.symbol for c in doc.chunks]
