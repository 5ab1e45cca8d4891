from pathlib import Path

from kb_search.formats.code.python import parse_python
from kb_search.parsed import ChunkSettings

SOURCE = '''"""Spider helpers.

More words.
"""

import os

LIMIT = 3


# Says hello.
@decorator
def hello(name):
    return f"hi {name}"


class Small:
    x = 1


class Spider(Base, metaclass=Meta):
    """Crawls pages.

    Long description.
    """

    name = "spider"

    def parse(self, response):
        for item in response.items:
            yield {"item": item, "a": 1, "b": 2, "c": 3}

    @property
    def count(self):
        return len(self.items) + 1 + 2 + 3 + 4 + 5


if __name__ == "__main__":
    hello("world")
'''


def parse(text: str, max_tokens: int = 80):
    return parse_python(text, Path("pkg/spider.py"), ChunkSettings(max_tokens, 5))


def summary(doc):
    return [(c.symbol, c.line_start, c.line_end) for c in doc.chunks]


def test_top_level_definitions_methods_and_module_code():
    doc = parse(SOURCE)
    assert doc.title == "spider.py"
    assert doc.language == "python" and doc.doc_type == "code"
    assert doc.metadata["docstring"].startswith("Spider helpers.")
    assert summary(doc) == [
        (None, 1, 8),
        ("hello", 11, 14),
        ("Small", 17, 18),
        ("Spider", 21, 27),
        ("Spider.parse", 29, 31),
        ("Spider.count", 33, 35),
        (None, 38, 39),
    ]


def test_first_chunk_holds_docstring_and_function_keeps_comment_and_decorator():
    doc = parse(SOURCE)
    assert doc.chunks[0].text.startswith('"""Spider helpers.')
    assert doc.chunks[1].text.startswith("# Says hello.\n@decorator\ndef hello(name):")


def test_method_chunks_carry_class_context():
    doc = parse(SOURCE)
    method = doc.chunks[4]
    assert method.text.splitlines()[0] == "# class Spider(Base, metaclass=Meta): Crawls pages."
    assert "def parse(self, response):" in method.text
    assert doc.chunks[5].text.splitlines()[1] == "    @property"


def test_class_that_fits_is_one_chunk():
    doc = parse(SOURCE, max_tokens=400)
    assert ("Spider", 21, 35) in summary(doc)


def test_oversized_function_is_split_into_windows_with_signature_header():
    body = "\n".join(f"    value_{i} = compute({i}, option={i})" for i in range(60))
    doc = parse(f"def big(a, b):\n{body}\n    return a\n", max_tokens=80)
    assert len(doc.chunks) > 3
    assert {c.symbol for c in doc.chunks} == {"big"}
    assert all(c.token_count <= 80 for c in doc.chunks)
    assert doc.chunks[1].text.startswith("# def big(a, b):\n")
    assert doc.chunks[0].line_start == 1 and doc.chunks[-1].line_end == 62


def test_syntax_error_falls_back_to_line_windows():
    text = "print 'python 2'\n" + "\n".join(f"x{i} = {i}" for i in range(100))
    doc = parse(text, max_tokens=50)
    assert len(doc.chunks) > 1
    assert doc.chunks[0].line_start == 1
    assert doc.chunks[-1].line_end == 101
    assert all(c.symbol is None and c.token_count <= 50 for c in doc.chunks)
    assert "parse_error" in doc.metadata
