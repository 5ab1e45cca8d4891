"""Texinfo (`formats/texinfo.py`): GNU manuals' sources read as sections, not as markup."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

from kb_search.formats.registry import detect_type
from kb_search.ingest.parse import parse_file
from kb_search.parsed import ChunkSettings

MANUAL = r"""\input texinfo
@c The GNU Free Documentation License applies.
@setfilename manual.info
@documentencoding us-ascii
@set VERSION 1.0.8
@settitle bzip2 and libbzip2, version @value{VERSION}

@titlepage
@title bzip2 TITLE PAGE TEXT
@end titlepage

@node Top, Introduction, (dir), (dir)
@top bzip2

@menu
* Introduction::   MENU TEXT
@end menu

@node Introduction
@chapter Introduction
@cindex compression INDEX ENTRY

@samp{bzip2} compresses files using the @emph{Burrows-Wheeler}
block-sorting algorithm; see @uref{https://sourceware.org/bzip2/, the home page}
and @xref{Memory management}.

@section Memory management

Pass @code{bzalloc} and @samp{bzfree (
opaque, p)} to manage memory, @dots{} 100% safe: mail jseward@@acm.org.

@example
bzip2 -dc rec*file.bz2 > recovered_data
@group
int x = @{ 0 @};
@end group
@end example

@itemize @bullet
@item
Only the first stream is read.
@item @option{-k} keeps the input files.
@end itemize

@multitable @columnfractions .3 .7
@headitem Flag @tab Meaning
@item @code{-9} @tab best compression
@end multitable

@deftypefun int BZ2_bzRead (int *bzerror, void *buf, int len)
Reads up to @var{len} bytes.
@end deftypefun
@bye
"""


def test_a_texinfo_manual_reads_as_titled_sections_without_its_markup(tmp_path):
    path = tmp_path / "manual.texi"
    path.write_text(MANUAL)
    assert detect_type(path) == "texinfo"
    doc = parse_file(path, ChunkSettings(max_tokens=60, min_tokens=5))
    assert doc.title == "bzip2 and libbzip2, version 1.0.8"  # was "\input texinfo"
    assert doc.doc_type == "texinfo"
    text = "\n".join(c.text for c in doc.chunks)
    for gone in ("@", "\\input", "MENU TEXT", "TITLE PAGE TEXT", "INDEX ENTRY", "Free Doc"):
        assert gone not in text.replace("jseward@acm.org", ""), gone
    assert "`bzip2` compresses files using the Burrows-Wheeler" in text
    assert "the home page" in text and "see Memory management" in text
    assert "`bzfree (\nopaque, p)`" in text  # an argument that runs over a line's end
    assert "... 100% safe: mail jseward@acm.org." in text
    assert "```\nbzip2 -dc rec*file.bz2 > recovered_data\n" in text
    assert "\nint x = { 0 };\n" in text  # @group lines gone, @{ @} read
    assert "- `-k` keeps the input files." in text
    assert "| `-9` | best compression |" in text
    assert "**int BZ2_bzRead (int *bzerror, void *buf, int len)**" in text
    assert {c.heading for c in doc.chunks} == {
        "Introduction", "Introduction > Memory management",
    }
    lines = MANUAL.split("\n")
    for chunk in doc.chunks:  # chunks cite the file's own lines
        source = "\n".join(lines[chunk.line_start - 1 : chunk.line_end])
        last_word = re.findall(r"[A-Za-z]\w*", chunk.text)[-1]
        assert last_word in source.replace("@{", "{").replace("@}", "}").replace("@@", "@")


def test_a_gzipped_texinfo_manual_is_read_inflated(tmp_path):
    path = tmp_path / "manual.texi.gz"
    path.write_bytes(gzip.compress(MANUAL.encode()))
    doc = parse_file(Path(path), ChunkSettings())
    assert doc.title == "bzip2 and libbzip2, version 1.0.8"
    assert any("`bzip2` compresses files" in c.text for c in doc.chunks)


def test_unclosed_blocks_by_the_thousand_read_in_linear_time(tmp_path: Path) -> None:
    """Every line looked through the open blocks: 40,000 unclosed `@quotation`s took 25 s
    (quadratic); the open blocks are capped, so the file reads at once and its text stays."""
    import time

    path = tmp_path / "deep.texi"
    path.write_text("@settitle Deep\n" + "@quotation\n" * 40_000 + "DEEPTEXT here\n")
    started = time.perf_counter()
    document = parse_file(path, ChunkSettings())
    assert time.perf_counter() - started < 3
    assert "DEEPTEXT" in " ".join(chunk.text for chunk in document.chunks)


def test_a_value_that_names_itself_does_not_grow_without_bound(tmp_path: Path) -> None:
    """`@set a @value{a}@value{a}...`: each nesting level read multiplied the line (6 copies:
    6**12 values); a line's `@value`s now add at most MAX_VALUE_CHARS."""
    from kb_search.formats.texinfo import MAX_VALUE_CHARS

    path = tmp_path / "bomb.texi"
    path.write_text("@set a " + "@value{a}" * 6 + "\n@set VERSION 2.1\n\n@value{a}\n\n"
                    "Release @value{VERSION} notes.\n")  # fmt: skip
    document = parse_file(path, ChunkSettings())
    text = " ".join(chunk.text for chunk in document.chunks)
    assert len(text) < 2 * MAX_VALUE_CHARS
    assert "Release 2.1 notes." in text


def test_verbatim_text_is_shown_as_written(tmp_path: Path) -> None:
    """`@verbatim` is literal in Texinfo; its `@code{x}` and `@@` had been read as commands
    (a manual's example of Texinfo itself lost its markup)."""
    path = tmp_path / "lit.texi"
    path.write_text("@settitle Lit\n@chapter Markup\n\nWrite it so:\n\n@verbatim\n"
                    "@code{ls} costs @@ 1\n@end verbatim\n")  # fmt: skip
    text = " ".join(chunk.text for chunk in parse_file(path, ChunkSettings()).chunks)
    assert "@code{ls} costs @@ 1" in text
