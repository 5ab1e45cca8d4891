"""Which chunks are navigation (contents, lists of figures, indexes), as read from PDFs."""

from __future__ import annotations

from kb_search.formats.navigation import is_navigation

CONTENTS_LEADERS = (
    "Contents\n\n1 | Introduction … 1\n1.1 | Changes … 1\n1.2 | LaTeX/TeX cooperation … 2\n"
    "2 | Some preliminary examples … 4\n3 | XKV parameterization … 8\n4 | Examples … 10"
)
CONTENTS_CELLS = (
    "1 | Overview | 1\n2 | Invocation | 4\n2.1 | Package options | 4\n3 | Basic usage | 5\n"
    "3.1 | Tree syntax | 5\n4 | Using qtree | 10"
)
INDEX = (
    "\\baselineskip . . . 870, 874, 894, 899 \\begin … 275, 283, 347, 440 \\bfseries … 806, 807 "
    "\\centering … 871 colored highlight … 17 \\coordinate … 189 dashed highlight … 17 "
    "\\downarrow … 16, 85 \\draw … 441, 457, 470"
)
# German, no leaders: the entries end in their pages after a plain space.
INHALT = (
    "Inhaltsverzeichnis\n\nTopologische Grundbegriffe 2\n\n1.1 Topologische Räume 2\n"
    "1.2 Metrische Räume 6\n1.3 Stetigkeit 9\n1.4 Zusammenhang 11\n1.5 Kompaktheit 14"
)
STICHWORTE = (
    "Stichwortverzeichnis\n\nAbbildung affine, 107 differenzierbare, 29 homotope, 50 offene, 53 "
    "simpliziale, 35 stetige, 9 Abschluss, 3 Abstand, 86 Abstandsaxiom, 65 Achterknoten, 20 "
    "Aktion, siehe Gruppenoperation Anordnungsaxiome, 66 Atlas, 24 Außenwinkel, 70 Axiom, 64"
)
PROSE = (
    "Some stanzas have certain lines indented, often alternate ones. To typeset stanzas like "
    "this you have to add your own spacing, as in section 2 … 3 of the guide. The alltt "
    "environment is like the verbatim environment except that you can use LaTeX macros "
    "inside it. In the verse environment long lines will be wrapped and indented."
)
NUMBER_TABLE = (
    "Font | Size | Leading\nvolumetitlefont | 18 | 23\nvolumesubtitlefont | 14 | 18\n"
    "poemtitlefont | 14 | 18\nsequencetitlefont | 12 | 14\n0 | 1 | 2 | 3 | 4 | 5"
)
CHANGES = (
    "v1.0 General: Initial version … 42 v1.0a General: Added cwl file for TeXstudio … 1 "
    "v1.1 General: New section about breaks … 4 New section about the symbol syntax … 2"
)


def test_a_table_of_contents_with_leaders_or_cells_is_navigation() -> None:
    assert is_navigation(CONTENTS_LEADERS, "User's Guide > Version 5.0")
    assert is_navigation(CONTENTS_CELLS, "1 Overview > 1.2 Home page")


def test_an_index_is_navigation() -> None:
    assert is_navigation(INDEX, "Index > B")


def test_a_named_contents_list_without_leaders_is_navigation() -> None:
    assert is_navigation(INHALT, None)
    assert is_navigation(STICHWORTE, "Stichwortverzeichnis")
    # the same entries under no navigation name are not enough: page numbers after words
    # are everywhere in prose ('version 2', 'figure 3')
    assert not is_navigation(INHALT.replace("Inhaltsverzeichnis", "Grundbegriffe"), None)


def test_prose_a_table_of_figures_and_a_change_history_are_not() -> None:
    assert not is_navigation(PROSE, "2 Verses in LaTeX without this package")
    assert not is_navigation(NUMBER_TABLE, "14 Customizing page geometry")
    assert not is_navigation(CHANGES, "10 Change History")
    assert not is_navigation("", "Contents")
    # a dot before a decimal is no leader ('.72 em')
    assert not is_navigation("labeloffset 1 em .72 em 1 em .2 ex .2 ex .2 ex .2 ex", None)
