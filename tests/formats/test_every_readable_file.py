"""A real folder, whole: files without a known extension are read when they are text, generated
files are left out by reason, and a file named on the command line is classified as in a folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kb_search.formats.generated import is_minified, reason_by_name
from kb_search.formats.registry import UNSUPPORTED, classify, detect_type, language_for
from kb_search.formats.sniff import defines_shell_functions
from kb_search.ingest.executor import AddOptions
from kb_search.ingest.pipeline import candidates

FUNCTION_FILE = """# isvalidip -- is the argument a valid IPv4 address
isvalidip()
{
\tcase "$1" in
\t"" | *[!0-9.]* | *[!0-9]) return 1 ;;
\tesac
\treturn 0
}
"""
PROSE = (
    "The quick brown fox jumps over the lazy dog while the farmer reads the manual about"
    " installing packages from source and configuring the system for daily use. "
)
BUNDLE = "!function(e,t){" + ";".join(f"var a{i}=e[{i}]||t.x{i}" for i in range(600)) + "}();"


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "name, text, doc_type, language",
    [
        ("README", "Requests\n========\n\nHTTP for Humans.\n", "text", None),
        ("LICENSE", "Apache License\nVersion 2.0, January 2004\n", "text", None),
        ("NOTICE", "Copyright 2019 Kenneth Reitz\n", "text", None),
        ("PKG-INFO", "Metadata-Version: 2.1\nName: requests\nVersion: 2.32.3\n", "text", None),
        ("MANIFEST.in", "include README.md LICENSE\nrecursive-include tests *.py\n", "text", None),
        ("README.Debian", "Notes for Debian users.\n", "text", None),
        ("bashrc", "# ~/.bashrc\nexport PATH=$HOME/bin:$PATH\n", "code", "bash"),
        ("Bash_profile", "# login shell\n. ~/.bashrc\n", "code", "bash"),
        (".bashrc", "alias ll='ls -l'\n", "code", "bash"),
        ("isvalidip", FUNCTION_FILE, "code", "bash"),
        ("Dockerfile", "FROM debian:12\nRUN apt-get update\n", "code", "dockerfile"),
        ("latin1-notes", "Caf\xe9 cr\xe8me, na\xefve\n".encode("cp1252"), "text", None),
        ("utf16-notes", "Notes in UTF-16\n".encode("utf-16"), "text", None),
    ],
)
def test_readable_files_without_a_known_extension_are_indexed(
    tmp_path, name, text, doc_type, language
):
    path = write(tmp_path / name, text)
    verdict = classify(path)
    assert verdict.left_out is None
    assert verdict.format is not None
    assert (verdict.format.doc_type, verdict.format.language) == (doc_type, language)


@pytest.mark.parametrize(
    "name, data",
    [
        ("ls", b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8),  # a program
        ("photo.png", b"\x89PNG\r\n\x1a\n" + bytes(200)),
        ("style.css", "body { color: red }\n" * 20),  # text, but no document
        ("server.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
        (".coveragerc", "[run]\nbranch = True\n"),  # a tool's hidden settings
        (".gitkeep", b""),  # hidden, and empty
    ],
)
def test_binary_files_and_non_documents_are_unsupported(tmp_path, name, data):
    path = write(tmp_path / name, data)
    assert classify(path) == classify(path, include_generated=True)
    assert classify(path).left_out == UNSUPPORTED
    assert detect_type(path) is None


def test_shell_function_files_are_told_from_c_and_prose():
    assert defines_shell_functions(FUNCTION_FILE)
    assert defines_shell_functions("function greet {\n  echo hi\n}\n")
    assert not defines_shell_functions("int main()\n{\n  return 0;\n}\n#include <stdio.h>\n")
    assert not defines_shell_functions(PROSE)
    # and a whole C file without #include: statements end in ';'
    c_code = "main()\n{\n  int a;\n  a = 1;\n  b = 2;\n  c = 3;\n}\n"
    assert not defines_shell_functions(c_code)


AWK = (
    "# standard help message\nfunction help(hlpmsg) {\nbasename = ARGV[0]\n"
    'printf "Format:  %s [pattern]\\n", basename\n}\n\n{ print $1 }\n'
)


def test_awk_scripts_are_not_shell_function_files(tmp_path):
    """awk's `function help(hlpmsg) {` opens like a shell function: the old code read lsof's
    `xusers.awk` and mawk's `qsort.awk`, `decl.awk`... as bash code (`--lang bash` listed
    them); with an awk `#!` line or without, they are text."""
    assert not defines_shell_functions(AWK)
    assert not defines_shell_functions("#!/usr/bin/awk -f\n" + AWK)
    assert not defines_shell_functions("function  isort(A , n,    i, j, hold)\n{\n  n++\n}\n")
    assert defines_shell_functions("function greet()\n{\n  echo hi\n}\n")
    assert defines_shell_functions("greet () (\n  echo hi\n)\n")
    for name, head in (("xusers.awk", "#!/usr/bin/awk -f\n"), ("qsort.awk", "")):
        verdict = classify(write(tmp_path / name, head + AWK))
        assert (verdict.format.doc_type, verdict.format.language) == ("text", None), name
    shell = write(tmp_path / "functions" / "isvalidip", "isvalidip() {\n  echo ok\n}\n")
    assert classify(shell).format.language == "bash"


@pytest.mark.parametrize(
    "name, reason",
    [
        ("package-lock.json", "lock file"),
        ("poetry.lock", "lock file"),
        ("Cargo.lock", "lock file"),
        ("go.sum", "lock file"),
        ("jquery.min.js", "minified"),
        ("theme.min.css", "minified"),
        ("app.js.map", "source map"),
        ("searchindex.js", "search index"),
        ("check.log", "log"),
        ("config.log", "log"),
        ("logbook.md", None),
        ("notes.md", None),
        ("map", None),
        ("mindmap.txt", None),
    ],
)
def test_generated_files_by_name(name, reason):
    assert reason_by_name(Path("/somewhere") / name) == reason


def test_minified_by_content_and_prose_with_long_lines_is_not(tmp_path):
    assert is_minified(BUNDLE.encode())
    one_line_json = json.dumps({f"k{i}": [i, i + 1] for i in range(400)}, separators=(",", ":"))
    assert is_minified(one_line_json.encode())
    # a Markdown/prose file written one paragraph per line: long lines, spaces every few words
    assert not is_minified(((PROSE * 12) + "\n\n").encode() * 4)
    assert not is_minified(b"short;line\n" * 50)  # under MIN_CHARS
    bundle = write(tmp_path / "vendor-bundle.js", BUNDLE)
    assert classify(bundle).left_out == "minified"
    assert classify(bundle, include_generated=True).left_out is None
    prose = write(tmp_path / "guide.md", (PROSE * 12 + "\n\n") * 4)
    assert classify(prose).left_out is None  # Markdown is a document however wrapped


def test_sphinx_build_copies_are_left_out_beside_a_search_index(tmp_path):
    html = tmp_path / "html"
    write(html / "searchindex.js", 'Search.setIndex({"docnames":["index"]})')
    sources = write(html / "_sources" / "api.rst.txt", "API\n===\n\nThe API.\n")
    script = write(html / "_static" / "doctools.js", "function f() {\n  return 1;\n}\n")
    page = write(html / "api.html", "<html><body><h1>API</h1><p>The API.</p></body></html>")
    assert classify(sources).left_out == "build asset"
    assert classify(script).left_out == "build asset"
    assert classify(page).left_out is None
    plain = write(tmp_path / "docs" / "_static" / "custom.js", "function g() {}\n")
    assert classify(plain).left_out is None  # a source tree's _static: no search index beside it


def test_a_folder_walk_counts_what_it_leaves_out_by_reason(tmp_path):
    write(tmp_path / "README", "A project.\n")
    write(tmp_path / "poetry.lock", "[[package]]\nname = 'x'\n")
    write(tmp_path / "yarn.lock", "# yarn lockfile v1\n")
    write(tmp_path / "static" / "app.min.js", BUNDLE)
    write(tmp_path / "static" / "bundle.js", BUNDLE)
    write(tmp_path / "logo.png", b"\x89PNG\r\n\x1a\n" + bytes(100))
    found = candidates([tmp_path], AddOptions())
    assert sorted(item.path.name for item in found.found) == ["README"]
    assert found.left_out == {"lock file": 2, "minified": 2}
    assert [p.name for p in found.unsupported] == ["logo.png"]
    everything = candidates([tmp_path], AddOptions(include_generated=True))
    assert len(everything.found) == 5 and not everything.left_out


def test_a_binary_named_on_the_command_line_is_unsupported_as_in_a_folder(tmp_path):
    """Old code: `kb add ./ls` failed ("binary file"); in a folder it was "unsupported"."""
    binary = write(tmp_path / "bin" / "ls", b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8)
    named = candidates([binary], AddOptions())
    walked = candidates([binary.parent], AddOptions())
    assert named.unsupported == walked.unsupported == [binary.resolve()]
    assert not named.failures and not named.found


def test_a_generated_file_named_on_its_own_is_indexed(tmp_path):
    lock = write(tmp_path / "poetry.lock", "[[package]]\nname = 'x'\n")
    assert [item.path.name for item in candidates([lock], AddOptions()).found] == ["poetry.lock"]
    assert candidates([tmp_path], AddOptions()).left_out == {"lock file": 1}


def test_language_of_known_names_is_unchanged():
    assert language_for(Path("Makefile")) == "make"
    assert language_for(Path("x.py")) == "python"


def test_the_add_summary_counts_left_out_files_by_reason(kb, tmp_path):
    """Old code: README was 'unsupported', the lock file and the bundle were indexed."""
    folder = tmp_path / "project"
    write(folder / "README", "Project notes: the zebra option turns on stripes.\n")
    write(folder / "poetry.lock", "[[package]]\nname = 'x'\n")
    write(folder / "Cargo.lock", "[[package]]\nname = 'y'\n")
    write(folder / "static" / "app.js", BUNDLE)
    data = kb.json("add", str(folder))
    assert (data["added"], data["unsupported"]) == (1, 0)
    assert data["left_out"] == {"lock file": 2, "minified": 1}
    assert "3 generated files left out: 2 lock files, 1 minified" in data["summary"]
    hits = kb.json("search", "zebra stripes", "--mode", "lexical")["results"]
    assert [Path(r["source"]["path"]).name for r in hits] == ["README"]
    again = kb.json("add", str(folder), "--include-generated")
    assert again["added"] == 3 and again["left_out"] == {}


def test_a_hidden_text_file_named_on_its_own_is_read(tmp_path):
    note = write(tmp_path / ".ideas", "Ideas for the garden: plant garlic in October.\n")
    assert classify(note).left_out == UNSUPPORTED  # in a folder: a tool's settings, left out
    assert classify(note, named=True).format.doc_type == "text"
    assert [item.path.name for item in candidates([note], AddOptions()).found] == [".ideas"]
    binary = write(tmp_path / ".cache-blob", bytes(range(256)) * 4)
    assert classify(binary, named=True).left_out == UNSUPPORTED


def test_an_empty_file_without_an_extension_is_an_empty_text_file(kb, tmp_path):
    """`TODO` with nothing in it yet is counted with the other empty files, not as a file of
    an unsupported type (walked or named: one wording for one outcome)."""
    notes = tmp_path / "notes"
    write(notes / "TODO", b"")
    write(notes / "blank.md", "")
    write(notes / "NOTES", "  \n\n")
    write(notes / "good.md", "# Good\n\nSomething about lemurs.\n")
    write(notes / "pkg" / "py.typed", b"")  # zero bytes, any suffix: counted "binary" before
    summary = kb.json("add", str(notes))
    assert (summary["empty"], summary["unsupported"]) == (4, 0), summary
    assert "4 empty files skipped (nothing to index)" in summary["summary"]
    named = kb("add", str(notes / "TODO"), "--format", "json", ok=False)
    assert named.exit_code == 1
    assert named.stderr.strip().splitlines()[-1] == (
        "Error: nothing added: 1 empty file (nothing to index)"
    )


def test_a_named_hidden_file_or_style_sheet_is_read_as_text(kb, tmp_path):
    """`kb add .notes site.css`: a file you name is read whenever it is text (the plain-text
    fallback named a parser the registry did not have: both failed)."""
    notes = write(tmp_path / "loose" / ".notes", "Ideas for the garden: plant more lavender.\n")
    style = write(tmp_path / "loose" / "site.css", "body { color: darkolivegreen }\n")
    summary = kb.json("add", str(notes), str(style))
    assert (summary["added"], summary["failed"]) == (2, []), summary["failed"]
    hit = kb.json("search", "lavender", "--mode", "lexical")["results"][0]
    assert hit["source"]["path"].endswith(".notes")


@pytest.mark.parametrize(
    "name, text, doc_type, language",
    [
        (".gitconfig", "[alias]\n\tlg = log --graph --oneline\n", "code", "ini"),
        (".inputrc", "set completion-ignore-case on\nset bell-style none\n", "text", None),
        (".vimrc", "set expandtab\nset shiftwidth=4\nsyntax on\n", "text", None),
        (".tmux.conf", "set -g prefix C-a\nbind r source-file ~/.tmux.conf\n", "text", None),
        (".xinitrc", "#!/bin/sh\nexec i3\n", "code", "bash"),
    ],
)
def test_a_persons_own_dotfiles_in_a_folder_are_read(tmp_path, name, text, doc_type, language):
    """Old code: `.gitconfig`, `.inputrc`, `.vimrc` in a dotfiles folder were "unsupported"."""
    path = write(tmp_path / "home" / name, text)
    verdict = classify(path)
    assert verdict.left_out is None and verdict.format is not None
    assert (verdict.format.doc_type, verdict.format.language) == (doc_type, language)
    assert [item.path.name for item in candidates([tmp_path], AddOptions()).found] == [name]


def test_dotfiles_that_hold_secrets_or_tool_settings_stay_out(tmp_path):
    for name in (".netrc", ".pgpass", ".npmrc", ".editorconfig", ".gitignore"):
        write(tmp_path / name, "machine example.org login jo password hunter2\n")
    assert not candidates([tmp_path], AddOptions()).found


def test_the_add_summary_says_what_kind_each_unsupported_file_is(kb, tmp_path):
    """Old code: a program, two style sheets and a tool's hidden settings were one count,
    "4 files of unsupported types ignored", and the first name."""
    folder = tmp_path / "project"
    write(folder / "notes.md", "# Notes\n\nThe walrus option.\n")
    write(folder / "bin" / "ls", b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8)
    write(folder / "css" / "a.css", "body { color: red }\n")
    write(folder / "css" / "b.css", "p { margin: 0 }\n")
    write(folder / ".coveragerc", "[run]\nbranch = True\n")
    data = kb.json("add", str(folder))
    assert data["unsupported"] == 4
    assert data["unsupported_kinds"] == {"binary": 1, "hidden": 1, "no document": 2}
    assert (
        "4 files of unsupported types ignored: 2 style sheets, drawings or keys, 1 binary,"
        " 1 hidden settings file (first: " in data["summary"]
    )


DOCBOOK = """<?xml version="1.0" standalone="no"?>
<!DOCTYPE article PUBLIC "-//OASIS//DTD DocBook XML V4.1.2//EN"
"http://www.oasis-open.org/docbook/xml/4.1.2/docbookx.dtd">
<article id="index">
<articleinfo><title>Shared MIME-info Database</title></articleinfo>
<sect1><title>Unified system</title>
<para><userinput>magic</userinput> elements contain a list of
<userinput>match</userinput> elements. The default priority value is 50.</para>
</sect1>
</article>
"""


def test_a_docbook_manual_is_read_as_markup_not_as_plain_text(kb, tmp_path):
    """Old code: a DocBook `.xml(.gz)` (a manual's source beside its HTML and PDF) was plain
    text: titled `<?xml version="1.0" standalone="no"?>`, its chunks full of tags."""
    import gzip

    folder = tmp_path / "doc"
    write(folder / "spec.xml.gz", gzip.compress(DOCBOOK.encode()))
    write(folder / "sitemap.xml", '<?xml version="1.0"?>\n<urlset><url>a</url></urlset>\n')
    assert classify(folder / "spec.xml.gz").format.doc_type == "html"
    assert classify(folder / "sitemap.xml").format.doc_type == "text"  # other XML: as before
    kb.json("add", str(folder))
    hit = kb.json("search", "default priority value", "--mode", "lexical")["results"][0]
    assert hit["source"]["title"] == "Shared MIME-info Database"
    assert "<userinput>" not in hit["text"] and "magic elements contain" in hit["text"]
    # its sections are sections, and a passage cites its own lines, not the whole file's
    assert hit["source"]["heading"] == "Unified system"
    assert hit["source"]["lines"] == [5, 8]


@pytest.mark.parametrize(
    "head",
    [
        "# SHA1:54b5b77ec8c7a0064ffa93b2fd16cb0130ba177c\n#\n"
        "# This file is autogenerated by pip-compile-multi\n# To update, run:\n",
        "#\n# This file is autogenerated by pip-compile with Python 3.12\n#\n",
        "# This file was autogenerated by uv via the following command:\n",
    ],
)
def test_a_pinned_requirements_file_a_tool_wrote_is_a_lock_file(tmp_path, head):
    """Old code: click's `requirements/*.txt` (pip-compile output) were indexed as text."""
    pinned = write(tmp_path / "requirements" / "dev.txt", head + "click==8.1.7\n    # via x\n")
    assert classify(pinned).left_out == "lock file"
    assert classify(pinned, include_generated=True).left_out is None
    own = write(tmp_path / "requirements.txt", "# what we need\nclick>=8\n")
    assert classify(own).left_out is None
    notes = write(tmp_path / "notes.txt", "The docs are generated by pip-compile? No.\n")
    assert classify(notes).left_out is None


def test_the_add_summary_counts_the_folders_the_walk_passed_by(kb, tmp_path):
    """Old code: `click.egg-info/`, `build/`, `.github/` and what a .kbignore named were passed
    by in silence: the summary did not say that any folder was left out."""
    folder = tmp_path / "click-8.1.7"
    write(folder / "README", "Click: the kraken option.\n")
    write(folder / "src" / "click.egg-info" / "PKG-INFO", "Name: click\n")
    write(folder / "build" / "lib" / "core.py", "x = 1\n")
    write(folder / ".github" / "workflows" / "main.yml", "on: push\n")
    write(folder / "src" / "core.pyc", b"\x00\x01")
    write(folder / "drafts" / "plan.md", "# Plan\n")
    write(folder / ".kbignore", "drafts/\n")
    data = kb.json("add", str(folder))
    assert data["not_walked"] == {
        "build or editor file": 1,
        "build, cache or vendor folder": 2,
        "hidden folder": 1,
        "ignore rules": 1,
    }
    assert (
        "5 paths not walked: 2 build, cache or vendor folders, 1 build or editor file,"
        " 1 hidden folder, 1 by .gitignore/.kbignore." in data["summary"]
    )


def test_office_lock_files_are_editor_files_not_failures(kb, tmp_path):
    """Word and Excel leave an owner file beside an open document (`~$report.docx`, 162
    bytes), LibreOffice a `.~lock.notes.odt#`, Emacs an auto-save `#notes.md#`. The old code
    read the owner files as documents: two failures on every run ("docling cannot open the
    DOCX file: ... hash ..."), and the auto-save as a second copy of the note."""
    folder = tmp_path / "office"
    write(folder / "notes.md", "# Notes\n\nThe zebra plan.\n")
    write(folder / "~$report.docx", b"\x05Jo Ex" + b"\x00" * 154)
    write(folder / "~$budget.xlsx", b"\x05Jo Ex" + b"\x00" * 156)
    write(folder / ".~lock.notes.odt#", ",Jo Example,host,28.11.2026 00:10,file:///home/jo;\n")
    write(folder / "#notes.md#", "# Notes\n\nThe zebra plan, half saved.\n")  # Emacs auto-save
    write(folder / "#1 priorities.md", "# Top\n\nMine.\n")  # a person's file
    data = kb.json("add", str(folder))
    assert data["added"] == 2 and data["failed"] == [] and data["unsupported"] == 0
    assert data["not_walked"] == {"build or editor file": 4}


APPLE_DOUBLE = b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        " + b"\x00" * 4000


def test_macos_and_windows_folder_metadata_is_passed_by(kb, tmp_path):
    """A folder copied from a Mac to a USB disk or a share, or unzipped, holds an AppleDouble
    `._name` beside each file (and `__MACOSX/`); Windows leaves `desktop.ini`. The old code
    read `._report.pdf` as a PDF, `._budget.docx` as a DOCX...: one failure per document on
    every run, and `desktop.ini` as INI code."""
    folder = tmp_path / "from-mac"
    write(folder / "notes.md", "# Notes\n\nThe zebra plan.\n")
    for name in ("._report.pdf", "._budget.docx", "._notes.md", "__MACOSX/docs/._guide.pdf"):
        write(folder / name, APPLE_DOUBLE)
    write(folder / "desktop.ini", "[.ShellClassInfo]\nIconResource=imageres.dll,-3\n")
    data = kb.json("add", str(folder))
    assert data["added"] == 1 and data["failed"] == [] and data["unsupported"] == 0
    assert data["not_walked"] == {"build, cache or vendor folder": 1}  # __MACOSX/


def test_report_and_site_builds_are_not_walked(kb, tmp_path):
    """coverage.py's `htmlcov/` holds every source file again as an HTML page (a Python
    project without git: no .gitignore to say so), Jekyll's `_site/` every post again."""
    folder = tmp_path / "project"
    write(folder / "app.py", "def zebra():\n    return 1\n")
    write(folder / "htmlcov" / "z_app_py.html", "<html><body><p>def zebra():</p></body></html>")
    write(folder / "blog" / "_site" / "post.html", "<html><body><p>zebra</p></body></html>")
    data = kb.json("add", str(folder))
    assert data["added"] == 1 and data["not_walked"] == {"build, cache or vendor folder": 2}


def test_the_add_summary_counts_the_links_the_walk_did_not_follow(kb, tmp_path):
    """Symbolic links are not followed (ripgrep's default): a link to a file or folder out of
    the tree is not read. The old code passed them by in silence, so a person whose notes
    folder links to ~/docs/os-release or ~/manuals never learned why those were missing."""
    outside = write(tmp_path / "elsewhere" / "manual.md", "# Manual\n\nThe zebra switch.\n")
    folder = tmp_path / "notes"
    write(folder / "plan.md", "# Plan\n\nThe zebra plan.\n")
    (folder / "manual-link.md").symlink_to(outside)
    (folder / "manuals").symlink_to(outside.parent, target_is_directory=True)
    data = kb.json("add", str(folder))
    assert data["added"] == 1 and data["not_walked"] == {"symbolic link": 2}
    assert "2 paths not walked: 2 symbolic links." in data["summary"]


PO = (
    '# German translation.\nmsgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
    '#: mkdocs/themes/readthedocs/search.html:5\nmsgid "Search Results"\nmsgstr "Suchergebnisse"\n'
)


def test_translation_catalogs_are_left_out_by_reason_and_includable(kb, tmp_path):
    """Old code: every `.po`/`.pot` was indexed as text, one copy of each message per language
    (34 in the folder walked); they are left out as generated, counted, and includable."""
    folder = tmp_path / "theme"
    write(folder / "README.md", "# Theme\n\nThe search results page lists matches.\n")
    for lang in ("de", "fr", "ja"):
        write(folder / "locales" / lang / "LC_MESSAGES" / "messages.po", PO)
    write(folder / "messages.pot", PO.replace("Suchergebnisse", ""))
    assert classify(folder / "messages.pot").left_out == "translation catalog"
    data = kb.json("add", str(folder))
    assert data["added"] == 1 and data["left_out"] == {"translation catalog": 4}
    assert "4 generated files left out: 4 translation catalogs" in data["summary"]
    assert kb.json("search", "Suchergebnisse", "--mode", "lexical")["results"] == []
    named = folder / "locales" / "de" / "LC_MESSAGES" / "messages.po"
    assert classify(named, named=True).left_out is None  # named on its own: read
    again = kb.json("add", str(folder), "--include-generated")
    assert again["added"] == 4 and again["left_out"] == {}


def test_a_one_line_json_dump_with_spaces_is_minified_and_pretty_prose_json_is_not(tmp_path):
    # `json.dump(records, f)`: Python's separators put a space after every comma and colon,
    # and the values are prose: a 6.7 MB export of this kind had been 5,000 chunks
    records = [
        {"id": i, "title": f"item {i}", "desc": "lorem ipsum dolor sit amet " * 3}
        for i in range(300)
    ]
    dump = write(tmp_path / "export.json", json.dumps(records))
    assert classify(dump).left_out == "minified"
    assert classify(dump, include_generated=True).left_out is None
    # pretty-printed with long prose values: a person's data, read
    articles = [{"title": f"post {i}", "body": PROSE * 12} for i in range(4)]
    pretty = write(tmp_path / "articles.json", json.dumps(articles, indent=2))
    assert classify(pretty).left_out is None
    # the same spaced one-line text in a .txt is prose-like wrapping, judged as before
    assert classify(write(tmp_path / "export.txt", json.dumps(records))).left_out is None


MDBOOK_REDIRECT = """<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>Redirecting...</title>
    <meta http-equiv="refresh" content="0; URL=./vec/vec-raw.html">
    <link rel="canonical" href="./vec/vec-raw.html">
  </head>
  <body>
      <p>Redirecting to... <a href="./vec/vec-raw.html">./vec/vec-raw.html</a>.</p>
  </body>
</html>
"""


def test_an_html_redirect_stub_is_left_out_and_a_page_that_refreshes_itself_is_not(tmp_path):
    stub = write(tmp_path / "book" / "vec-raw.html", MDBOOK_REDIRECT)
    assert classify(stub).left_out == "redirect page"
    assert classify(stub, include_generated=True).left_out is None
    # attributes in the other order, single quotes, a plain `url=`
    other = "<html><head><meta content='5;url=new.html' http-equiv='Refresh'></head></html>"
    assert classify(write(tmp_path / "old.htm", other)).left_out == "redirect page"
    # a status page that reloads itself (no URL) is a page
    status = "<html><head><meta http-equiv='refresh' content='300'></head><body>Up</body></html>"
    assert classify(write(tmp_path / "status.html", status)).left_out is None
    # ...nor one that moves on to a URL after minutes (a board reloading its own address, a
    # session timeout): the stub rule took every refresh with a URL
    board = status.replace("content='300'", "content='300; URL=status.html'")
    assert classify(write(tmp_path / "board.html", board)).left_out is None
    # a whole page that also redirects, past the first 8 KiB: its text is read
    long_page = MDBOOK_REDIRECT.replace("</body>", "<p>" + PROSE * 80 + "</p></body>")
    assert classify(write(tmp_path / "moved-with-text.html", long_page)).left_out is None
    found = candidates([tmp_path / "book"], AddOptions())
    assert not found.found and found.left_out == {"redirect page": 1}


PIP_MOVED = """:orphan:

.. meta::

  :http-equiv=refresh: 3; url=../../cli/pip_show/

This page has moved
===================

You should be redirected automatically in 3 seconds. If that didn't
work, here's a link: :doc:`../cli/pip_show`
"""


def test_a_rest_redirect_stub_is_left_out(tmp_path):
    """pip's docs keep 16 moved pages as reST stubs ("This page has moved"): the
    old code indexed each, so `pip show` found a stub beside its real page."""
    stub = write(tmp_path / "reference" / "pip_show.rst", PIP_MOVED)
    assert classify(stub).left_out == "redirect page"
    assert classify(stub, include_generated=True).left_out is None
    # a page that only sets other meta fields, or refreshes after minutes, is a page
    keywords = PIP_MOVED.replace(":http-equiv=refresh: 3; url=../../cli/pip_show/", ":key: a")
    assert classify(write(tmp_path / "keywords.rst", keywords)).left_out is None
    slow = PIP_MOVED.replace("refresh: 3;", "refresh: 600;")
    assert classify(write(tmp_path / "slow.rst", slow)).left_out is None
    long_page = PIP_MOVED + PROSE * 100  # a whole page past the first 8 KiB is read
    assert classify(write(tmp_path / "long.rst", long_page)).left_out is None


def test_an_mdbook_print_copy_is_left_out_and_a_chapter_named_print_is_not(tmp_path):
    # mdBook's print.html holds the whole book again (560 of the Rustonomicon's 1,289 chunks)
    head = '<html><head><title>The Rustonomicon</title><meta name="robots" content="noindex">'
    copy = write(tmp_path / "nomicon" / "print.html", head + "</head><body><h1>Meet</h1></body>")
    assert classify(copy).left_out == "build asset"
    assert classify(copy, include_generated=True).left_out is None
    chapter = "<html><head><title>Formatted print</title></head><body><p>println!</p></body>"
    assert classify(write(tmp_path / "hello" / "print.html", chapter)).left_out is None
    noindex_page = write(tmp_path / "nomicon" / "vec.html", head + "</head><body>Vec</body>")
    assert classify(noindex_page).left_out is None  # noindex alone: a page (a private wiki's)
