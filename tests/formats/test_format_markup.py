"""Org-mode, AsciiDoc and LaTeX: converted to Markdown line for line (LaTeX per paragraph),
chunked by heading, citing the lines of the source file."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb_search.ingest.parse import parse_file
from kb_search.parsed import ChunkSettings

TIGHT = ChunkSettings(max_tokens=60, min_tokens=1)


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def by_heading(document) -> dict[str, object]:
    return {c.heading: c for c in document.chunks}


ORG = """#+TITLE: Garden notes
#+AUTHOR: Ann Lee
#+FILETAGS: :garden:home:

* TODO Tomatoes                                                 :plants:
  SCHEDULED: <2024-05-01 Wed>
  :PROPERTIES:
  :ID:       abc-123-secret-id
  :END:
Water the [[https://example.org/tomato][tomato beds]] every =morning=.
# a private comment
** Pests
Aphids on the leaves.
#+BEGIN_SRC python
print("spray")
#+END_SRC
#+BEGIN_COMMENT
hidden remark
#+END_COMMENT
* Compost
| bin | temp |
|-----+------|
| A   | 55   |
"""


def test_org_headings_blocks_and_metadata(tmp_path):
    document = parse_file(write(tmp_path, "garden.org", ORG), TIGHT)
    assert document.doc_type == "org"
    assert document.title == "Garden notes"
    assert document.tags == ["garden", "home", "plants"]
    assert document.metadata == {"author": "Ann Lee"}
    chunks = by_heading(document)
    assert list(chunks) == ["Tomatoes", "Tomatoes > Pests", "Compost"]
    tomatoes = chunks["Tomatoes"]
    assert tomatoes.text == "# Tomatoes\n\nWater the tomato beds every `morning`."
    assert (tomatoes.line_start, tomatoes.line_end) == (5, 10)
    pests = chunks["Tomatoes > Pests"]
    assert '```python\nprint("spray")\n```' in pests.text
    assert (pests.line_start, pests.line_end) == (12, 16)
    compost = chunks["Compost"]
    assert compost.text == "# Compost\n| bin | temp |\n|---|---|\n| A | 55 |"
    assert (compost.line_start, compost.line_end) == (20, 23)
    everything = "\n".join(c.text for c in document.chunks)
    for junk in (
        "TODO",
        ":plants:",
        "SCHEDULED",
        "abc-123-secret-id",
        "private comment",
        "hidden remark",
        "#+",
        "[[",
        "https://example.org",
    ):
        assert junk not in everything


ADOC = """= Deploy Guide
Ann Lee <ann@example.org>
:keywords: deploy, k8s
:description: How we deploy

// internal note
== Install

Run the link:https://example.org/install[installer] first.

[source,bash]
----
kubectl apply -f app.yaml
----

=== Verify
See <<install,the install section>>.

////
hidden block
////

== Rollback
NOTE: Keep the previous image tag.
"""


def test_asciidoc_sections_listing_and_attributes(tmp_path):
    document = parse_file(write(tmp_path, "deploy.adoc", ADOC), TIGHT)
    assert document.doc_type == "asciidoc"
    assert document.title == "Deploy Guide"
    assert document.tags == ["deploy", "k8s"]
    assert document.metadata == {
        "author": "Ann Lee <ann@example.org>",
        "description": "How we deploy",
    }
    chunks = by_heading(document)
    install = chunks["Deploy Guide > Install"]
    assert install.text == (  # the title's empty section glued to the first one
        "# Deploy Guide\n\n## Install\n\nRun the installer first.\n\n```bash\n"
        "kubectl apply -f app.yaml\n```"
    )
    assert (install.line_start, install.line_end) == (1, 14)
    verify = chunks["Deploy Guide > Install > Verify"]
    assert verify.text == "### Verify\nSee the install section."
    assert (verify.line_start, verify.line_end) == (16, 17)
    rollback = chunks["Deploy Guide > Rollback"]
    assert (rollback.line_start, rollback.line_end) == (23, 24)
    everything = "\n".join(c.text for c in document.chunks)
    for junk in ("internal note", "hidden block", ":keywords:", "[source", "link:", "<<", "----"):
        assert junk not in everything


LATEX = r"""\documentclass{article}
\usepackage{amsmath}
\newcommand{\R}{\mathbb{R}}
\title{Fast Retrieval with \emph{Hybrid} Search}
\author{Ann Lee \and Bob Chen}
\begin{document}
\maketitle
\begin{abstract}
We fuse BM25 and vectors.
\end{abstract}
\section{Introduction}\label{sec:intro}
Search is hard~\cite{knuth}. We show $x^2 + y$ grows. % secret comment
Caf\'e is a word, see Figure~\ref{fig:plot}. AT\&T said ``hello''.

\begin{figure}
\includegraphics[width=0.5\textwidth]{plot-file.png}
\caption{Recall by depth.}
\end{figure}
\begin{verbatim}
raw % text stays
\end{verbatim}
\subsection{Method}
\begin{itemize}
\item First step

\item Second step
\end{itemize}
\end{document}
"""


def test_latex_sections_text_and_no_macros(tmp_path):
    document = parse_file(write(tmp_path, "paper.tex", LATEX), TIGHT)
    assert document.doc_type == "latex"
    assert document.title == "Fast Retrieval with Hybrid Search"
    assert document.metadata == {"author": "Ann Lee, Bob Chen"}
    chunks = by_heading(document)
    assert list(chunks) == ["Abstract", "Introduction", "Introduction > Method"]
    assert chunks["Abstract"].text == "# Abstract\n\nWe fuse BM25 and vectors."
    intro_chunks = [c for c in document.chunks if c.heading == "Introduction"]
    intro = "\n".join(c.text for c in intro_chunks)
    assert "Search is hard. We show x^2 + y grows." in intro
    assert "Café is a word, see Figure. AT&T said \u201chello\u201d." in intro
    assert "Recall by depth." in intro
    assert "```\nraw % text stays\n```" in intro
    assert (intro_chunks[0].line_start, intro_chunks[-1].line_end) == (11, 21)
    method = chunks["Introduction > Method"]
    assert "First step" in method.text and "Second step" in method.text
    assert (method.line_start, method.line_end) == (22, 27)
    everything = "\n".join(c.text for c in document.chunks)
    for junk in (
        "\\",
        "secret comment",
        "knuth",
        "sec:intro",
        "plot-file",
        "textwidth",
        "mathbb",
        "{",
        "}",
    ):
        assert junk not in everything


def test_latex_without_document_environment_is_read_whole(tmp_path):
    chapter = "\\chapter{Results}\nThe \\textbf{gain} was 4\\%.\n\\section{Ablation}\nNone.\n"
    document = parse_file(write(tmp_path, "results.tex", chapter), TIGHT)
    assert [c.text for c in document.chunks] == [
        "# Results\n\nThe gain was 4%.\n\n## Ablation\n\nNone."
    ]
    assert (document.chunks[0].line_start, document.chunks[0].line_end) == (1, 4)
    assert document.title == "Results"


def test_latex_that_pylatexenc_cannot_parse_still_yields_text(tmp_path):
    nested = "\\section{Deep}\n" + "{" * 3000 + "buried" + "}" * 3000 + "\n"
    document = parse_file(write(tmp_path, "deep.tex", nested), ChunkSettings())
    assert "buried" in document.chunks[-1].text


GIT_PAGE = """git-bisect(1)
=============

NAME
----
git-bisect - Use binary search to find the commit that introduced a bug

SYNOPSIS
--------
[verse]
'git bisect' <subcommand> <options>

DESCRIPTION
-----------
The command takes various subcommands, see linkgit:git-log[1].

Bisect run
~~~~~~~~~~
----
$ git bisect run my_script arguments
----
"""


def test_asciidoc_two_line_titles_are_sections_not_listings(tmp_path):
    document = parse_file(write(tmp_path, "git-bisect.adoc", GIT_PAGE), TIGHT)
    assert document.title == "git-bisect(1)"
    headings = [c.heading for c in document.chunks]
    assert "git-bisect(1) > DESCRIPTION > Bisect run" in headings
    run = by_heading(document)["git-bisect(1) > DESCRIPTION > Bisect run"]
    assert "```\n$ git bisect run my_script arguments\n```" in run.text
    everything = "\n".join(c.text for c in document.chunks)
    assert "linkgit" not in everything and "see git-log(1)." in everything
    assert "-----" not in everything and "~~~~" not in everything


def test_a_txt_written_in_asciidoc_is_read_as_asciidoc_and_stays_text(tmp_path):
    document = parse_file(write(tmp_path, "git-bisect.txt", GIT_PAGE), TIGHT)
    assert document.doc_type == "text"
    assert document.metadata.get("format") == "asciidoc"
    assert "git-bisect(1) > SYNOPSIS" in [c.heading for c in document.chunks]


@pytest.mark.parametrize(
    "name, text",
    [  # underlined titles alone (plain notes, reST) are not AsciiDoc
        ("notes.txt", "Debugging\n=========\n\nHow to\n------\n\nRun it under gdb.\n"),
        ("design.txt", "Design\n======\n\n.. _why:\n\nWhy\n---\n\n----\n\nWords.\n"),
    ],
)
def test_plain_and_rest_text_are_not_taken_for_asciidoc(tmp_path, name, text):
    document = parse_file(write(tmp_path, name, text), TIGHT)
    assert document.metadata.get("format") != "asciidoc"


def test_a_sphinx_rst_txt_source_is_read_as_rest(tmp_path):
    body = "Intro words. " * 40 + "\n\nWhy\n---\n\n" + "Because. " * 40
    text = "Design\n======\n\n" + body + "\n"
    document = parse_file(write(tmp_path, "design.rst.txt", text), TIGHT)
    assert document.metadata == {"format": "rst"}
    assert "Design > Why" in [c.heading for c in document.chunks]


@pytest.mark.parametrize(
    "text, kept",
    [  # a short line over a longer delimiter is text, then a block (Asciidoctor's +-1 rule)
        ("= Doc\n\nIntro.\n\nRun it\n----\n$ make install\n----\n\nAfter, prose.\n", "```\n$ make"),
        ("= Doc\n\nEmbed:\n++++\n<b>x</b>\n++++\n\nText after.\n", "Embed:"),
    ],
)
def test_a_delimiter_under_a_shorter_line_opens_its_block(tmp_path, text, kept):
    document = parse_file(write(tmp_path, "doc.adoc", text), TIGHT)
    everything = "\n".join(c.text for c in document.chunks)
    assert kept in everything and "## " not in everything and "#####" not in everything


def test_the_first_body_line_under_a_section_title_is_no_author(tmp_path):
    text = "My Guide\n========\nInstall\n-------\nDownload the tarball and unpack it.\n"
    document = parse_file(write(tmp_path, "guide.adoc", text), TIGHT)
    assert "author" not in document.metadata
    assert "Download the tarball" in "\n".join(c.text for c in document.chunks)


@pytest.mark.parametrize(
    "name, text",
    [  # rules, `:field:` lines and wiki titles are not AsciiDoc's alone
        ("CHANGES.txt", "My Project\n==========\n\nVersion 1.2\n-----------\n\n* fix\n\n-----\n\n"
         "Version 1.1\n-----------\n\n* first\n"),
        ("notes.txt", "= Meeting notes =\n\n== Attendees ==\n\nAlice\n\n----\n\n"
         "== Decisions ==\n\nShip.\n"),
        ("changes.rst.txt", "Changelog\n=========\n\nVersion 2.0\n-----------\n\n"
         ":Released: 2024-01-02\n\n* New flag. See <<intro>>.\n"),
    ],
)  # fmt: skip
def test_notes_with_rules_fields_or_wiki_titles_stay_plain_text(tmp_path, name, text):
    document = parse_file(write(tmp_path, name, text), TIGHT)
    assert document.metadata.get("format") != "asciidoc"
    everything = "\n".join(c.text for c in document.chunks)
    assert "```" not in everything
    assert "2024-01-02" in everything or "Released" not in text


def test_the_asciidoc_check_of_a_txt_is_linear_on_a_crafted_line():
    import time

    from kb_search.formats.asciidoc import looks_like_asciidoc

    started = time.perf_counter()
    looks_like_asciidoc("= T\n\n== S\n\n" + "<<a," * 10_000)
    assert time.perf_counter() - started < 0.5
