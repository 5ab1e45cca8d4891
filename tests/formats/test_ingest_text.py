from pathlib import Path

from kb_search.formats.text import parse_text
from kb_search.parsed import ChunkSettings


def words(text: str) -> int:
    return len(text.split())


def parse(text: str, name: str = "note.txt", max_tokens: int = 200):
    return parse_text(text, Path(name), ChunkSettings(max_tokens, 5), count=words)


def test_small_note_is_one_chunk_titled_by_first_line():
    doc = parse("\n\nShopping list\n\neggs milk\nbread\n\n")
    assert doc.title == "Shopping list"
    assert doc.doc_type == "text"
    assert len(doc.chunks) == 1
    chunk = doc.chunks[0]
    assert (chunk.line_start, chunk.line_end) == (3, 6)
    assert chunk.text == "Shopping list\n\neggs milk\nbread"
    assert chunk.token_count == 5


def test_long_first_line_gives_stem_title():
    doc = parse("word " * 40, name="journal.txt")
    assert doc.title == "journal"


def test_markup_read_as_text_is_not_titled_by_its_tags():
    """Old code: `sitemap.xml` and a `.devhelp2` were titled `<?xml version="1.0"...?>`."""
    doc = parse(
        '<?xml version="1.0" encoding="UTF-8"?>\n<urlset>\n<url>a</url>\n', name="sitemap.xml"
    )
    assert doc.title == "sitemap"
    doc = parse("<!-- generated -->\nRelease notes for 2.0\n", name="notes.xml")
    assert doc.title == "Release notes for 2.0"


def test_a_list_term_or_literal_label_is_no_title():
    doc = parse("-b::\n\tShow blank SHA-1 for boundary commits.\n", name="blame-options.txt")
    assert doc.title == "blame-options"


def test_large_note_is_packed_into_paragraph_windows():
    paragraphs = [" ".join([f"p{i}"] * 10) for i in range(6)]
    doc = parse("\n\n".join(paragraphs), max_tokens=25)
    assert [(c.line_start, c.line_end) for c in doc.chunks] == [(1, 3), (5, 7), (9, 11)]
    assert doc.chunks[1].text.startswith("p2")
    assert all(c.token_count <= 25 for c in doc.chunks)


def test_giant_paragraph_is_split_by_lines_then_words():
    lines = [" ".join(["w"] * 8) for _ in range(5)] + [" ".join(["big"] * 30)]
    doc = parse("\n".join(lines), max_tokens=20)
    assert all(c.token_count <= 20 for c in doc.chunks)
    assert sum(c.token_count for c in doc.chunks) == 70
    assert doc.chunks[-1].line_start == 6


def test_rst_sections_give_heading_chains():
    text = "\n".join(
        [
            "=====",
            "Title",
            "=====",
            "",
            "intro " * 15,
            "",
            "Usage",
            "-----",
            "",
            "usage " * 15,
            "",
            "Details",
            "~~~~~~~",
            "",
            "details " * 15,
            "",
            "Other",
            "-----",
            "",
            "other " * 15,
        ]
    )
    doc = parse(text, name="readme.rst", max_tokens=25)
    assert doc.title == "Title"
    assert [(c.heading, c.line_start) for c in doc.chunks] == [
        ("Title", 1),
        ("Title > Usage", 7),
        ("Title > Usage > Details", 12),
        ("Title > Other", 17),
    ]


PKG_INFO = """Metadata-Version: 2.4
Name: click
Version: 8.5.1
Summary: Composable command line interface toolkit
Maintainer-email: Pallets <contact@palletsprojects.com>
Classifier: Development Status :: 5 - Production/Stable
 continued on a folded line

# $ click_

Click is a Python package for creating beautiful command line interfaces.
"""


def test_package_metadata_is_titled_by_the_package_and_its_summary():
    doc = parse_text(PKG_INFO, Path("/x/click-8.5.1/PKG-INFO"), ChunkSettings())
    assert doc.title == "click 8.5.1: Composable command line interface toolkit"
    long = PKG_INFO.replace("Composable command line interface toolkit", "Render rich text, " * 8)
    title = parse_text(long, Path("PKG-INFO"), ChunkSettings()).title
    assert title.startswith("click 8.5.1: Render rich text") and title.endswith(", Render rich…")
    assert len(title) <= 100
    control = "Package: hello\nVersion: 2.10-3\nArchitecture: amd64\nDescription: GNU hello\n"
    assert parse_text(control, Path("control"), ChunkSettings()).title == "hello 2.10-3: GNU hello"
    r_description = "Package: zoo\nTitle: S3 Infrastructure for Time Series\nLicense: GPL-2\n"
    assert parse_text(r_description, Path("DESCRIPTION"), ChunkSettings()).title == (
        "zoo: S3 Infrastructure for Time Series"
    )


def test_text_that_only_opens_like_headers_keeps_its_first_line_title():
    for text in (
        "Note: the meeting moved\nName: Ann\n\nSee you there.\n",  # no summary
        "Name: x\nSummary: y\nthis line is prose, not a header\n",  # not a header block
        "Name: x\nSummary: y\n\nbody\n",  # two fields: too little to be package metadata
    ):
        assert parse_text(text, Path("notes"), ChunkSettings()).title == text.split("\n")[0]


def test_a_note_kept_as_mail_is_titled_by_its_own_heading_not_a_header_field():
    """git's howto files open with From/Date/Subject/Abstract (or one Content-type) lines."""
    howto = (
        "From: Junio C Hamano <gitster@pobox.com>\nDate: Wed, 21 Nov 2007 16:32:55 -0800\n"
        'Subject: Addendum to "MaintNotes"\nAbstract: Imagine that Git development is racing\n'
        " along as usual.\nContent-type: text/asciidoc\n\nHow to maintain Git\n"
        "===================\n\nThe maintainer's job.\n"
    )
    assert parse_text(howto, Path("maintain-git.txt"), ChunkSettings()).title == (
        "How to maintain Git"
    )
    daemon = "Content-type: text/asciidoc\n\nHow to use git-daemon\n=====================\n"
    assert parse_text(daemon, Path("use-git-daemon.txt"), ChunkSettings()).title == (
        "How to use git-daemon"
    )
    # one field of a person's own note is its first line, as before
    note = "Meeting: Monday\nAttendees: Ann, Bob\n\nWe discussed the roadmap.\n"
    assert parse_text(note, Path("notes.txt"), ChunkSettings()).title == "Meeting: Monday"


def test_rst_directives_and_asciidoc_title_markers_are_not_titles():
    encoding = ".. module:: itsdangerous.encoding\n\nEncoding Utilities\n==================\n"
    assert parse_text(encoding, Path("encoding.rst"), ChunkSettings()).title == (
        "Encoding Utilities"
    )
    index = (
        ".. rst-class:: hide-header\n\n.. image:: logo.png\n    :align: center\n\n"
        "ItsDangerous\n============\n"
    )
    assert parse_text(index, Path("index.rst"), ChunkSettings()).title == "ItsDangerous"
    trace = "= Trace2 API\n\nThe Trace2 API can be used to print debug information.\n"
    assert parse_text(trace, Path("api-trace2.txt"), ChunkSettings()).title == "Trace2 API"


def test_editor_mode_lines_keywords_and_wordless_lines_are_no_title():
    """Old code, on Debian doc packages: gnupg's TODO was titled `-*- outline -*-`, TRANSLATE
    `$Id$`, bc's pi.b `/*`, and a modeline trailed a title (`Automatic.prf ... -*- conf -*-`)."""
    todo = " " * 60 + "-*- outline -*-\n\n* src/base64\n  Check the code.\n"
    assert parse_text(todo, Path("TODO"), ChunkSettings()).title == "* src/base64"
    translate = "$Id$\n\nNote for translators\n"
    assert parse_text(translate, Path("TRANSLATE"), ChunkSettings()).title == (
        "Note for translators"
    )
    program = "/*\n   A program to find the digits of PI.\n*/\n"
    assert parse_text(program, Path("pi.b"), ChunkSettings()).title == (
        "A program to find the digits of PI."
    )
    prf = "# Automatic.prf - Configure options       -*- conf -*-\nfoo\n"
    assert parse_text(prf, Path("Automatic.prf"), ChunkSettings()).title == (
        "# Automatic.prf - Configure options"
    )
    kept = "Price: $Ident$ -*- rises\n"  # neither a keyword nor a closed modeline
    assert parse_text(kept, Path("n.txt"), ChunkSettings()).title == kept.strip()


def test_a_debian_copyright_file_is_titled_by_its_package():
    """Old code: every DEP-5 `/usr/share/doc/*/copyright` (495 of 737 here) was titled
    `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/`."""
    dep5 = "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
    apt = dep5 + "Upstream-Name: apt\nSource: https://example.org/apt\n\nFiles: *\n"
    title = parse_text(apt, Path("/usr/share/doc/apt/copyright"), ChunkSettings()).title
    assert title == "apt: copyright and licences"
    unnamed = dep5 + "Source: https://example.org/x\n\nFiles: *\nUpstream-Name: not-here\n"
    title = parse_text(unnamed, Path("/usr/share/doc/libfoo1/copyright"), ChunkSettings()).title
    assert title == "libfoo1: copyright and licences"
    other = "Format: a pamphlet\nUpstream-Name: x\n"
    assert parse_text(other, Path("doc/copyright"), ChunkSettings()).title == "Format: a pamphlet"


def test_a_change_log_is_titled_by_its_folder_not_its_newest_entry():
    """Old code: GNU ChangeLogs were titled by their newest entry's date and author
    (`2022-10-10  Werner Koch  <wk@gnupg.org>`), a `git log` dump by `commit <hash>`."""
    gnu = "2022-10-10  Werner Koch  <wk@gnupg.org>\n\n\tRelease 2.2.40.\n"
    assert parse_text(gnu, Path("doc/gnupg/changelog"), ChunkSettings()).title == (
        "gnupg changelog"
    )
    bare = "2015-07-10  Nicolas Williams  nico@cryptonector.com\n\n\t* jq.c: fix\n"
    assert parse_text(bare, Path("jq/changelog"), ChunkSettings()).title == "jq changelog"
    old = "Fri Apr  7 15:14:43 PDT 2017  Phil Nelson <philnelson@acm.org>\n\n\t* bc: fix\n"
    assert parse_text(old, Path("bc/ChangeLog"), ChunkSettings()).title == "bc ChangeLog"
    git = "commit a919700fbde28c29ccdb1d2a8bceba80ade19e73\nAuthor: A <a@b.c>\n"
    assert parse_text(git, Path("fontconfig/changelog"), ChunkSettings()).title == (
        "fontconfig changelog"
    )
    mention = "2022-10-10 meeting with Ann <ann@x.org>\n"  # one space: a note's own first line
    assert parse_text(mention, Path("notes/roof.txt"), ChunkSettings()).title == mention.strip()


def test_a_script_kb_has_no_parser_for_is_titled_by_its_name():
    """Perl and awk scripts are read as text: the old code titled lsof's ten example scripts
    `#!/usr/bin/perl` (and mawk's `#!/usr/bin/mawk -f`), where code is titled by its name."""
    perl = "#!/usr/bin/perl\n#\n# $Id: identd.pl,v 1.5 $\n\nuse strict;\n"
    assert parse_text(perl, Path("examples/identd.pl"), ChunkSettings()).title == "identd.pl"
    awk = "#!/usr/bin/mawk -We\n\n# hcal: print a calendar\nBEGIN { x = 1 }\n"
    assert parse_text(awk, Path("examples/hcal"), ChunkSettings()).title == "hcal"
    batch = "@ECHO OFF\n\npushd %~dp0\n\nREM Command file for Sphinx documentation\n"
    assert parse_text(batch, Path("docs/make.bat"), ChunkSettings()).title == "make.bat"
    vimrc = "set number\nset expandtab shiftwidth=4\n"  # a dotfile: its name, not a setting
    assert parse_text(vimrc, Path("home/.vimrc"), ChunkSettings()).title == ".vimrc"


def test_rst_fields_before_the_title_are_no_title():
    """pip's manual pages open with `:orphan:`: the old code titled all 15 of them so."""
    page = ":orphan:\n\n=========\npip-cache\n=========\n\n.. pip-command-usage:: cache\n"
    assert parse_text(page, Path("man/commands/cache.rst"), ChunkSettings()).title == "pip-cache"
    depth = ":tocdepth: 2\n:author: Ada\n\nRelease notes\n=============\n"
    assert parse_text(depth, Path("news.rst"), ChunkSettings()).title == "Release notes"
    note = ":tocdepth: 2 is what Sphinx reads\n"  # plain text: its first line
    assert parse_text(note, Path("note.txt"), ChunkSettings()).title == note.strip()


GROTTY = (
    "\n\n               \x1b[1mman-db - the database cached manual pager suite\x1b[0m\n\n"
    "                  \x1b[4mGraeme\x1b[24m \x1b[4mW.\x1b[24m \x1b[4mWilford\x1b[24m\n\n"
    "    It is made up of several user programs:\n"
    "         \x1b[1m+\x08o man       \x1b[22m- an interface to the reference manuals\n"
    "         \x1b[1m+\x08o apropos   \x1b[22m- search the manual page names\n"
    "    The  \x1b]0;window title\x07ca_\x08c_\x08h_\x08e is B\x08Bu\x08ui\x08il\x08lt nightly.\n"
)


def test_a_terminals_escape_codes_and_overstrikes_are_not_text(kb, tmp_path):
    """man-db's manual as grotty wrote it (`man-db-manual.txt.gz`): the old code kept its
    `ESC[4m` underlines and `+^Ho` bullets in the chunks and title, so a keyword search for
    its author (`ESC[4mWilford`) or for `cache` (`c^Hc...`) found nothing."""
    manual = tmp_path / "man-db-manual.txt"
    manual.write_text(GROTTY, encoding="utf-8")
    kb("add", str(manual))
    listed = kb.json("list")["documents"][0]
    assert listed["title"] == "man-db - the database cached manual pager suite"
    for word in ("Wilford", "cache", "built", "apropos"):
        hits = kb.json("search", word, "--mode", "lexical")["results"]
        assert [hit["citation"].split("#")[0] for hit in hits] == [str(manual)], word
    text = kb.json("show", str(manual))["chunks"][0]["text"]
    assert "\x1b" not in text and "\x08" not in text and "window title" not in text
    assert "o man       - an interface" in text
    assert hits[0]["citation"] == f"{manual}#L3-L10"  # the file's own lines


def test_debian_change_logs_and_release_headers_are_no_titles():
    """Every Debian package ships `changelog.Debian.gz` (688 here): the old code titled each by
    its newest entry (`lsof (4.95.0-1) unstable; urgency=low`), pip's change log by its newest
    release (`23.0.1 (2023-02-17)`), GCC's by `2022-08-19  Release Manager`."""
    debian = "lsof (4.95.0-1) unstable; urgency=low\n\n  * New upstream release.\n"
    title = parse_text(debian, Path("doc/lsof/changelog.Debian"), ChunkSettings()).title
    assert title == "lsof changelog.Debian"
    news = "python-pip (23.0+dfsg-2) unstable; urgency=medium\n\n  * pip now refuses...\n"
    assert parse_text(news, Path("doc/pip/NEWS.Debian"), ChunkSettings()).title == (
        "python-pip NEWS.Debian"
    )
    for first in ("23.0.1 (2023-02-17)", "v66.1.1", "3.42.2 - 2022-07-16", "2.1.5"):
        text = f"{first}\n{'=' * len(first)}\n\n- Fix the resolver.\n"
        assert parse_text(text, Path("doc/pip/changelog"), ChunkSettings()).title == (
            "pip changelog"
        ), first
    gcc = "2022-08-19  Release Manager\n\n\t* GCC 12.2.0 released.\n"
    assert parse_text(gcc, Path("gcc/changelog"), ChunkSettings()).title == "gcc changelog"
    # a note that only opens with a number or a date stays titled by its line
    for first in ("2.5 kg of flour, 1 l of milk", "2026-02-01 meeting with the roofer"):
        assert parse_text(first + "\n", Path("notes/x.txt"), ChunkSettings()).title == first
