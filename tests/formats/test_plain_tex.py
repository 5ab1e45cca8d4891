"""Plain TeX (a reference card: no preamble to split off) opens with page setup; before, a
gzipped GDB reference card was titled "=11in =8.5in =.25in ..." and its first chunk was
register assignments. Setup lines are no text; the title is the first line of text."""

from __future__ import annotations

import gzip
from pathlib import Path

from kb_search.formats.latex import setup_lines
from kb_search.ingest.parse import parse_file
from kb_search.parsed import ChunkSettings

CARD = r"""%%%%%%%% refcard.tex %%%%%%%%
%This file is TeX source for a reference card.
\newdimen\totalwidth \newdimen\totalheight
\totalwidth=11in    % total width of paper
\totalheight=8.5in  % total height of paper
\hmargin=.25in
\ifx\pdfoutput\undefined\else
  \pdfpagewidth=\totalwidth
\fi
\hoffset=-1in \advance \hoffset by \hmargin
\temp=\hmargin \multiply \temp by 2 \advance \fullhsize by -\temp
\divide \hsize by 3
\def\vdecor{\hskip\hmargin plus1fil
\vbox to \vsize{\hbox to \barwidth{\vrule height\barheight width\barwidth}\vfill
\hbox to \barwidth{\vrule height\barheight width\barwidth}}%
\hskip\hmargin plus1fil}
\font\bbf=cmbx10
\hyphenpenalty=5000\tolerance=2000\raggedright\raggedbottom
\parindent=0pt
\long\def\sec#1;#2\endsec{\vskip \secskip
\halign{%
\vtop{\hsize=\itmwid\tt
##\par\vskip \lskip }\hfil
&\vtop{\hsize=\dfnwid\rm ##\par\vskip \lskip}\cr
\noalign{{\bbf #1}\vskip \lskip}
#2
}
}

{\vbbf GDB QUICK REFERENCE}\hfil{\smrm GDB Version 5}\qquad

\sec Essential Commands;
bt& backtrace: display program stack\cr
p {\it expr}&display the value of an expression\cr
\endsec

\bye
"""


def test_a_gzipped_plain_tex_card_is_titled_and_chunked_by_its_text(tmp_path: Path):
    path = tmp_path / "refcard.tex.gz"
    path.write_bytes(gzip.compress(CARD.encode()))
    document = parse_file(path, ChunkSettings())
    assert document.doc_type == "latex"
    assert document.title == "GDB QUICK REFERENCE GDB Version 5"
    text = "\n".join(chunk.text for chunk in document.chunks)
    for junk in ("=11in", "8.5in", "plus1fil", "cmbx10", "by -", "##", "\\bye", "=="):
        assert junk not in text, junk
    assert "bt backtrace: display program stack\np expr display the value" in text
    first = next(n for n, line in enumerate(CARD.split("\n"), 1) if "QUICK" in line)
    assert document.chunks[0].line_start == first  # cites the card's own lines


def test_setup_lines_leave_latex_text_alone():
    lines = [
        r"\section{Results}", r"The value is $x = 5$ here.", r"\begin{itemize}", r"\item one",
        r"\end{itemize}", r"\setlength{\parindent}{0pt}", r"\hsize=4in", r"\def\x{a", "b}",
        "after", r"\newcommand{\kb}[1]{\texttt{#1}}", r"Use \kb{add} first.",
    ]  # fmt: skip
    assert setup_lines(lines) == [6, 7, 8, 10]


def test_a_latex_title_still_wins(tmp_path: Path):
    path = tmp_path / "paper.tex"
    path.write_text(
        "\\documentclass{article}\n\\title{Burrow Networks}\n\\begin{document}\n"
        "\\section{Intro}\nRabbits dig burrows.\n\\end{document}\n"
    )
    assert parse_file(path, ChunkSettings()).title == "Burrow Networks"


def test_a_definition_whose_brace_never_closes_does_not_swallow_the_text(tmp_path: Path):
    """A `{` inside `\\verb!...!` in a preamble (texlive's endnotes-hy example) left the
    definition open to the end of the file: the old code dropped the whole document body."""
    path = tmp_path / "endnotes.tex"
    path.write_text(
        "\\documentclass{article}\n\\newbox\\enbox\n\\setbox\\enbox\\hbox{\\verb!{!\n"
        "\\def\\enPAR{\\par\\hskip15pt}\n\\begin{document}\n\\section{Making endnotes clickable}\n"
        "The new syntax for the endnote command adds a star.\n\\end{document}\n"
    )
    text = "\n".join(chunk.text for chunk in parse_file(path, ChunkSettings()).chunks)
    assert "Making endnotes clickable" in text
    assert "The new syntax for the endnote command adds a star." in text


def test_plain_tex_after_an_unclosed_definition_keeps_its_text():
    lines = [r"\def\open{\hbox{", r"\hsize=4in", "Rabbits dig burrows.", "", r"\bye"]
    assert setup_lines(lines) == [0, 1, 4]


def test_text_after_a_let_on_its_line_is_kept(tmp_path: Path):
    """A paper's unnumbered funding note: `\\let` takes two tokens, the rest of the line is
    text. The setup-line rule dropped the whole line (text read before it was added)."""
    path = tmp_path / "paper.tex"
    path.write_text(
        "\\documentclass{article}\n\\begin{document}\n\\section{Intro}\n"
        "Rabbits dig burrows in the meadow.\n"
        "\\let\\thefootnote\\relax\\footnotetext{Funded by the Rabbit Council grant.}\n"
        "\\let\\a\\b \\let\\c=\\d\n\\end{document}\n"
    )
    text = "\n".join(chunk.text for chunk in parse_file(path, ChunkSettings()).chunks)
    assert "Funded by the Rabbit Council grant." in text
    assert setup_lines(["\\let\\a\\b \\let\\c=\\d", "\\let\\x\\relax Words here."]) == [0]
