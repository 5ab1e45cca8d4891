from pathlib import Path

from kb_search.formats.code.parse import parse_code
from kb_search.formats.registry import CODE_LANGUAGES as CODE_EXTENSIONS
from kb_search.parsed import ChunkSettings

GO = """package server

import "fmt"

// Server serves things.
type Server struct {
	name string
}

// Start starts it.
func (s *Server) Start(port int) error {
	fmt.Println("{ not a brace")
	return nil
}

var defaultPort = 8080

func helper() {}

type ID int
"""


def parse(text: str, name: str, max_tokens: int = 200):
    return parse_code(text, Path(name), ChunkSettings(max_tokens, 5))


def summary(doc):
    return [(c.symbol, c.line_start, c.line_end) for c in doc.chunks]


def test_extensions_map_to_languages():
    assert CODE_EXTENSIONS[".go"] == "go"
    assert CODE_EXTENSIONS[".tsx"] == "typescript"
    assert CODE_EXTENSIONS[".mjs"] == "javascript"
    assert CODE_EXTENSIONS[".sh"] == "bash"
    assert CODE_EXTENSIONS[".yml"] == "yaml"


def test_go_definitions_methods_and_module_code():
    doc = parse(GO, "server.go")
    assert doc.language == "go" and doc.title == "server.go" and doc.doc_type == "code"
    assert summary(doc) == [
        (None, 1, 3),
        ("Server", 5, 8),
        ("Server.Start", 10, 14),
        (None, 16, 16),
        ("helper", 18, 18),
        ("ID", 20, 20),
    ]
    assert doc.chunks[2].text.startswith("// Start starts it.\nfunc (s *Server) Start(")


def test_bash_functions():
    text = (
        "#!/bin/bash\nset -e\n\n# greet someone\ngreet() {\n  echo hi\n}\n\n"
        "function build {\n  make\n}\n\ngreet\n"
    )
    doc = parse(text, "run.sh")
    assert summary(doc) == [
        (None, 1, 2),
        ("greet", 4, 7),
        ("build", 9, 11),
        (None, 13, 13),
    ]


def test_javascript_and_typescript_definitions():
    text = """import x from "y";

export function load(a) {
  return a;
}

export const add = (a, b) => {
  return a + b;
};

export default class Store {
  get(key) {
    return key;
  }
}

export interface Options {
  name: string;
}
"""
    doc = parse(text, "store.ts")
    assert doc.language == "typescript"
    assert summary(doc) == [
        (None, 1, 1),
        ("load", 3, 5),
        ("add", 7, 9),
        ("Store", 11, 15),
        ("Options", 17, 19),
    ]


def test_rust_items_and_attributes():
    text = """use std::fmt;

#[derive(Debug)]
pub struct Point {
    x: i32,
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.x)
    }
}

pub async fn run<'a>(p: &'a Point) {
}
"""
    doc = parse(text, "point.rs")
    assert summary(doc) == [(None, 1, 1), ("Point", 3, 6), ("Point", 8, 12), ("run", 14, 15)]


def test_big_java_class_is_split_into_members_with_context():
    methods = "\n".join(
        f"    // Method number {i}.\n    public int method{i}(int a) {{\n"
        + "".join(f"        a = a + {j} * {i};\n" for j in range(6))
        + "        return a;\n    }\n"
        for i in range(4)
    )
    text = f"package x;\n\npublic class Calculator {{\n    private int total = 0;\n\n{methods}}}\n"
    doc = parse(text, "Calculator.java", max_tokens=120)
    symbols = [c.symbol for c in doc.chunks]
    assert symbols == [None, "Calculator"] + [f"Calculator.method{i}" for i in range(4)]
    member = doc.chunks[2]
    assert member.text.startswith("// public class Calculator {\n    // Method number 0.")
    assert member.line_start == 6
    assert all(c.token_count <= 120 for c in doc.chunks)


def test_ruby_blocks_end_at_end_keyword():
    text = "require 'x'\n\nclass Greeter\n  def hi\n    puts 'hi'\n  end\nend\n\nputs 1\n"
    doc = parse(text, "greeter.rb")
    assert summary(doc) == [(None, 1, 1), ("Greeter", 3, 7), (None, 9, 9)]


def test_config_files_and_unknown_languages_use_overlapping_windows():
    text = "\n".join(f"key_{i}: value number {i}" for i in range(80))
    doc = parse(text, "config.yaml", max_tokens=60)
    assert doc.language == "yaml"
    assert len(doc.chunks) > 3
    assert all(c.symbol is None and c.token_count <= 60 for c in doc.chunks)
    assert doc.chunks[1].line_start == doc.chunks[0].line_end - 1  # two lines of overlap
    assert doc.chunks[-1].line_end == 80


def test_oversized_go_function_gets_windows_with_signature_header():
    body = "\n".join(f"\tx{i} := compute({i}, {i + 1})" for i in range(60))
    doc = parse(f"package a\n\nfunc Big(a int) int {{\n{body}\n\treturn a\n}}\n", "big.go", 80)
    big = [c for c in doc.chunks if c.symbol == "Big"]
    assert len(big) > 2
    assert big[1].text.startswith("// func Big(a int) int {\n")
    assert big[-1].line_end == 65
    assert all(c.token_count <= 80 for c in doc.chunks)
