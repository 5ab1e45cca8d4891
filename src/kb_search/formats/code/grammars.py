"""Which tree-sitter grammar reads which language, and which of its nodes are definitions.

Each grammar is its own PyPI package (`tree-sitter-go`, ...), imported on first use; a
language whose package is missing falls back to the regex chunker. Definition kinds:

- `function`: a leaf (function, method, constructor, macro); nested functions stay inside it.
- `type`: a leaf type (Go type, Rust struct/enum, C struct, TS type alias).
- `class`: a container (class, struct, interface, trait, impl, object): one chunk when it
  fits the budget, else a chunk for its header/fields and one per member.
- `namespace`: a container that is always opened (namespace, Ruby module, Rust `mod`).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

Node = Any  # tree_sitter.Node; the package is optional, so it is not imported here
NameFinder = Callable[[Node], "str | None"]

FUNCTION, TYPE, CLASS, NAMESPACE = "function", "type", "class", "namespace"


def text_of(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def field_name(node: Node) -> str | None:
    """The `name` field, the usual place for a definition's name."""
    name = node.child_by_field_name("name")
    return text_of(name) or None


def _named(name: str) -> NameFinder:
    return lambda node: name


def _with_body(finder: NameFinder) -> NameFinder:
    """Only when the node has a body: `mod foo;` or `namespace X;` are not containers."""
    return lambda node: finder(node) if node.child_by_field_name("body") else None


# The receiver's type: from a word's start only, no two `\s*` side by side, no class past the
# next "[": linear on any receiver text.
_RECEIVER_TYPE = re.compile(r"(?<!\w)(\w+)\s*(?:\[[^\[\]]*\]\s*)?\)\s*$")


def _strip_generics(name: str) -> str:
    """`name` less everything from its first "<" to its last ">" (on one line), as
    `re.sub("<.*>", "", name)` would, without its quadratic backtracking on many "<"."""
    lines = []
    for line in name.split("\n"):
        start, end = line.find("<"), line.rfind(">")
        lines.append(line[:start] + line[end + 1 :] if 0 <= start < end else line)
    return "\n".join(lines).strip()


# --- per-language name finders -------------------------------------------------------------


def _go_method(node: Node) -> str | None:
    receiver = text_of(node.child_by_field_name("receiver"))
    match = _RECEIVER_TYPE.search(receiver)
    name = field_name(node)
    return f"{match.group(1)}.{name}" if match and name else name


def _go_types(node: Node) -> str | None:
    names = [
        field_name(spec)
        for spec in node.named_children
        if spec.type in ("type_spec", "type_alias")
    ]
    return ", ".join(n for n in names if n) or None


def _rust_impl(node: Node) -> str | None:
    return _strip_generics(text_of(node.child_by_field_name("type"))) or None


def _c_function(node: Node) -> str | None:
    declarator = node.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    if declarator is None:
        return None
    return text_of(declarator.child_by_field_name("declarator")) or None


def _c_tagged_type(node: Node) -> str | None:
    """`struct buffer {...}` with a body; a bare `struct buffer` is a use, not a definition."""
    return field_name(node) if node.child_by_field_name("body") else None


def _c_typedef(node: Node) -> str | None:
    kind = node.child_by_field_name("type")
    if kind is None or kind.child_by_field_name("body") is None:
        return None
    return text_of(node.child_by_field_name("declarator")) or None


_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)


def _js_variable(node: Node) -> str | None:
    """`const add = (a, b) => {...}`: a function bound to a name."""
    declarators = [c for c in node.named_children if c.type == "variable_declarator"]
    if len(declarators) != 1:
        return None
    value = declarators[0].child_by_field_name("value")
    if value is None or value.type not in _FUNCTION_VALUES | {"class"}:
        return None
    return field_name(declarators[0])


def _js_field(node: Node) -> str | None:
    """A class field holding an arrow function: `handle = (e) => {...}`."""
    value = node.child_by_field_name("value")
    if value is None or value.type not in _FUNCTION_VALUES:
        return None
    return text_of(node.child_by_field_name("property") or node.child_by_field_name("name"))


def _js_assignment(node: Node) -> str | None:
    """`Foo.prototype.bar = function () {...}` or `module.exports.x = () => ...`."""
    assignment = node.named_children[0] if node.named_children else None
    if assignment is None or assignment.type != "assignment_expression":
        return None
    value = assignment.child_by_field_name("right")
    if value is None or value.type not in _FUNCTION_VALUES:
        return None
    name = text_of(assignment.child_by_field_name("left")).replace(".prototype.", ".")
    return name.removeprefix("module.exports.").removeprefix("exports.") or None


def _lua_assignment(node: Node) -> str | None:
    """`M.double = function(x) ... end` and `local greet = function(name) ... end`."""
    assignment = node if node.type == "assignment_statement" else None
    for child in node.named_children:
        if child.type == "assignment_statement":
            assignment = child
    if assignment is None:
        return None
    targets = [c for c in assignment.named_children if c.type == "variable_list"]
    values = [c for c in assignment.named_children if c.type == "expression_list"]
    if not targets or not values or not values[0].named_children:
        return None
    if values[0].named_children[0].type != "function_definition":
        return None
    return text_of(targets[0]) or None


# --- grammars --------------------------------------------------------------------------------

_COMMENTS = frozenset({"comment", "line_comment", "block_comment", "multiline_comment"})


@dataclass(frozen=True)
class Grammar:
    """How to read one language's syntax tree."""

    module: str  # the PyPI grammar package's module, e.g. "tree_sitter_go"
    definitions: Mapping[str, str]  # node type -> FUNCTION | TYPE | CLASS | NAMESPACE
    function: str = "language"  # the module's function returning the language pointer
    comment: str = "//"  # line-comment marker, for context lines
    scopes: frozenset[str] = frozenset()  # nodes searched for definitions (bodies, #ifdef)
    wrappers: frozenset[str] = frozenset()  # `export`, decorators, templates: lines of the one
    # definition inside them
    leading: frozenset[str] = _COMMENTS  # nodes that lead a definition: comments, attributes
    leading_line: str = ""  # a regex for lines that lead one too: C's `#ifdef` above a function
    names: Mapping[str, NameFinder] = field(default_factory=dict)  # None: not a definition

    def name_of(self, node: Node) -> str | None:
        finder = self.names.get(node.type, field_name)
        name = finder(node)
        if not name:
            return None
        return re.sub(r"\s+", " ", re.sub(r"::|[:\\]", ".", name)).strip(".")


_JS_DEFINITIONS = {
    "function_declaration": FUNCTION,
    "generator_function_declaration": FUNCTION,
    "method_definition": FUNCTION,
    "lexical_declaration": FUNCTION,
    "variable_declaration": FUNCTION,
    "field_definition": FUNCTION,
    "expression_statement": FUNCTION,
    "class_declaration": CLASS,
}
_JS_NAMES: dict[str, NameFinder] = {
    "lexical_declaration": _js_variable,
    "variable_declaration": _js_variable,
    "field_definition": _js_field,
    "public_field_definition": _js_field,
    "expression_statement": _js_assignment,
}
_TS_DEFINITIONS = {
    **_JS_DEFINITIONS,
    "public_field_definition": FUNCTION,
    "function_signature": FUNCTION,
    "method_signature": FUNCTION,
    "abstract_method_signature": FUNCTION,
    "abstract_class_declaration": CLASS,
    "interface_declaration": CLASS,
    "type_alias_declaration": TYPE,
    "enum_declaration": TYPE,
    "internal_module": NAMESPACE,
    "module": NAMESPACE,
}
_JS_SCOPES = frozenset({"class_body", "statement_block", "interface_body"})
_JS_WRAPPERS = frozenset({"export_statement", "ambient_declaration"})
_JS_LEADING = _COMMENTS | {"decorator"}

_C_DEFINITIONS = {
    "function_definition": FUNCTION,
    "struct_specifier": TYPE,
    "union_specifier": TYPE,
    "enum_specifier": TYPE,
    "type_definition": TYPE,
}
_C_NAMES: dict[str, NameFinder] = {
    "function_definition": _c_function,
    "struct_specifier": _c_tagged_type,
    "union_specifier": _c_tagged_type,
    "enum_specifier": _c_tagged_type,
    "class_specifier": _c_tagged_type,
    "type_definition": _c_typedef,
}
_C_CONDITIONAL = r"\s*#\s*if"
_C_SCOPES = frozenset(
    {
        "preproc_if",
        "preproc_ifdef",
        "preproc_else",
        "preproc_elif",
        "preproc_elifdef",
        "linkage_specification",
        "declaration_list",
        "field_declaration_list",
    }
)

GRAMMARS: dict[str, Grammar] = {
    "go": Grammar(
        "tree_sitter_go",
        {"function_declaration": FUNCTION, "method_declaration": FUNCTION,
         "type_declaration": TYPE},
        names={"method_declaration": _go_method, "type_declaration": _go_types},
    ),
    "javascript": Grammar(
        "tree_sitter_javascript",
        _JS_DEFINITIONS,
        scopes=_JS_SCOPES,
        wrappers=_JS_WRAPPERS,
        leading=_JS_LEADING,
        names=_JS_NAMES,
    ),
    "typescript": Grammar(
        "tree_sitter_typescript",
        _TS_DEFINITIONS,
        function="language_typescript",
        scopes=_JS_SCOPES,
        wrappers=_JS_WRAPPERS,
        leading=_JS_LEADING,
        names=_JS_NAMES,
    ),
    "tsx": Grammar(
        "tree_sitter_typescript",
        _TS_DEFINITIONS,
        function="language_tsx",
        scopes=_JS_SCOPES,
        wrappers=_JS_WRAPPERS,
        leading=_JS_LEADING,
        names=_JS_NAMES,
    ),
    "rust": Grammar(
        "tree_sitter_rust",
        {"function_item": FUNCTION, "function_signature_item": FUNCTION,
         "macro_definition": FUNCTION, "struct_item": TYPE, "enum_item": TYPE,
         "union_item": TYPE, "type_item": TYPE, "impl_item": CLASS, "trait_item": CLASS,
         "mod_item": NAMESPACE},
        scopes=frozenset({"declaration_list"}),
        leading=_COMMENTS | {"attribute_item"},
        names={"impl_item": _rust_impl, "mod_item": _with_body(field_name)},
    ),
    "java": Grammar(
        "tree_sitter_java",
        {"method_declaration": FUNCTION, "constructor_declaration": FUNCTION,
         "compact_constructor_declaration": FUNCTION, "class_declaration": CLASS,
         "interface_declaration": CLASS, "enum_declaration": CLASS,
         "record_declaration": CLASS, "annotation_type_declaration": CLASS},
        scopes=frozenset({"class_body", "interface_body", "enum_body", "enum_body_declarations",
                          "annotation_type_body"}),
    ),
    "c": Grammar(
        "tree_sitter_c",
        _C_DEFINITIONS,
        scopes=_C_SCOPES,
        leading_line=_C_CONDITIONAL,
        names=_C_NAMES,
    ),
    "cpp": Grammar(
        "tree_sitter_cpp",
        {**_C_DEFINITIONS, "struct_specifier": CLASS, "class_specifier": CLASS,
         "union_specifier": CLASS, "namespace_definition": NAMESPACE},
        scopes=_C_SCOPES,
        wrappers=frozenset({"template_declaration"}),
        leading_line=_C_CONDITIONAL,
        names=_C_NAMES,
    ),
    "csharp": Grammar(
        "tree_sitter_c_sharp",
        {"method_declaration": FUNCTION, "constructor_declaration": FUNCTION,
         "destructor_declaration": FUNCTION, "operator_declaration": FUNCTION,
         "conversion_operator_declaration": FUNCTION, "class_declaration": CLASS,
         "struct_declaration": CLASS, "interface_declaration": CLASS,
         "record_declaration": CLASS, "enum_declaration": TYPE, "delegate_declaration": TYPE,
         "namespace_declaration": NAMESPACE},
        scopes=frozenset({"declaration_list"}),
        names={"operator_declaration": _named("operator"),
               "conversion_operator_declaration": _named("operator")},
    ),
    "ruby": Grammar(
        "tree_sitter_ruby",
        {"method": FUNCTION, "singleton_method": FUNCTION, "class": CLASS,
         "module": NAMESPACE},
        comment="#",
        scopes=frozenset({"body_statement", "singleton_class"}),
    ),
    "php": Grammar(
        "tree_sitter_php",
        {"function_definition": FUNCTION, "method_declaration": FUNCTION,
         "class_declaration": CLASS, "interface_declaration": CLASS,
         "trait_declaration": CLASS, "enum_declaration": CLASS,
         "namespace_definition": NAMESPACE},
        function="language_php",
        scopes=frozenset({"declaration_list", "compound_statement"}),
        names={"namespace_definition": _with_body(field_name)},
    ),
    "bash": Grammar("tree_sitter_bash", {"function_definition": FUNCTION}, comment="#"),
    "kotlin": Grammar(
        "tree_sitter_kotlin",
        {"function_declaration": FUNCTION, "secondary_constructor": FUNCTION,
         "class_declaration": CLASS, "object_declaration": CLASS, "companion_object": CLASS,
         "type_alias": TYPE},
        scopes=frozenset({"class_body", "enum_class_body"}),
        names={"secondary_constructor": _named("constructor"),
               "companion_object": lambda node: field_name(node) or "Companion"},
    ),
    "swift": Grammar(
        "tree_sitter_swift",
        {"function_declaration": FUNCTION, "protocol_function_declaration": FUNCTION,
         "init_declaration": FUNCTION, "deinit_declaration": FUNCTION,
         "subscript_declaration": FUNCTION, "class_declaration": CLASS,
         "protocol_declaration": CLASS, "typealias_declaration": TYPE},
        scopes=frozenset({"class_body", "protocol_body", "enum_class_body"}),
        names={"init_declaration": _named("init"), "deinit_declaration": _named("deinit"),
               "subscript_declaration": _named("subscript")},
    ),
    "scala": Grammar(
        "tree_sitter_scala",
        {"function_definition": FUNCTION, "function_declaration": FUNCTION,
         "class_definition": CLASS, "object_definition": CLASS, "trait_definition": CLASS,
         "enum_definition": CLASS, "type_definition": TYPE},
        scopes=frozenset({"template_body", "enum_body"}),
    ),
    "lua": Grammar(
        "tree_sitter_lua",
        {"function_declaration": FUNCTION, "variable_declaration": FUNCTION,
         "assignment_statement": FUNCTION},
        comment="--",
        names={"variable_declaration": _lua_assignment, "assignment_statement": _lua_assignment},
    ),
    "python": Grammar(
        "tree_sitter_python",
        {"function_definition": FUNCTION, "class_definition": CLASS},
        comment="#",
        scopes=frozenset({"block"}),
        wrappers=frozenset({"decorated_definition"}),
    ),
}
GRAMMARS["zsh"] = GRAMMARS["bash"]


def grammar_name(language: str, suffix: str) -> str:
    """The grammar for a file: TSX files need the TSX grammar, the rest go by language."""
    if language == "typescript" and suffix.lower() == ".tsx":
        return "tsx"
    return language


@cache
def load_language(name: str) -> Any | None:
    """The tree-sitter Language for a grammar, or None when its package is not installed."""
    grammar = GRAMMARS.get(name)
    if grammar is None:
        return None
    try:
        from tree_sitter import Language

        module = importlib.import_module(grammar.module)
        return Language(getattr(module, grammar.function)())
    except (ImportError, AttributeError, ValueError):
        return None
