"""Source code: `parse` (every language with a tree-sitter grammar, else the regex fallback)
and `python` (Python by its ast) are the parsers the registry names; `grammars` (tree-sitter
queries per language), `outline` and `chunks` (definitions -> chunks), `regex` and `windows`
(fallbacks), `symbols` (a file's definitions by qualified name, for `kb get path.py#Name`).

This face imports nothing: each parser loads only when the registry asks for it."""
