"""Break 9 of issue 25: indexed content and file names reached the terminal raw (OSC 0 window
titles, ESC[2J screen clears, OSC 8 links to any URL, newlines in `kb list`). Human output now
escapes every control character it did not write itself; the only links are kb's own, to the
indexed files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ESC = "\x1b"
TITLE = f"{ESC}]0;pwned-title\x07"
CLEAR = f"{ESC}[2J"
LINK = f"{ESC}]8;;https://evil.example/{ESC}\\click me{ESC}]8;;{ESC}\\"
CSI_C1 = "\x9b2J"
HOSTILE_NAME = f"evil{ESC}]0;name-title\x07\nsecond line{CLEAR}.md"
HOSTILE_TAG = f"tag{ESC}[31m"
# What kb writes itself with --color always: SGR styles and OSC 8 links to local files.
OWN = re.compile(r"\x1b\[[0-9;]*m|\x1b\]8;[^\x1b\x07]*;(?:file://[^\x1b\x07]*)?\x1b\\")


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    body = (
        f"# Heading {TITLE} swordfish\n\n"
        f"The launch code is swordfish {CLEAR} and {LINK} and {CSI_C1} here.\n"
        "Markup [bold]swordfish[/bold] and [link=https://evil.example]swordfish[/link].\n"
    )
    (root / HOSTILE_NAME).write_text(body, encoding="utf-8")
    return root


def _assert_clean(text: str, styled: bool) -> None:
    leftover = OWN.sub("", text) if styled else text
    for char in (ESC, "\x07", "\x9b"):
        assert char not in leftover, (char, text)
    for url in re.findall(r"\x1b\]8;[^;]*;([^\x1b]*)", text):
        assert not url or url.startswith("file:///"), text


@pytest.mark.parametrize("color", ["never", "always"])
def test_hostile_names_and_content_never_reach_the_terminal_raw(kb, hostile, color):
    human = ("--format", "human", "--color", color)
    styled = color == "always"
    outputs = [kb("add", str(hostile), "--tag", HOSTILE_TAG, *human).stdout]
    listing = kb("list", *human).stdout
    outputs.append(listing)
    # one document: a header, a rule and ONE row (the newline in its name does not split it)
    assert len(listing.splitlines()) == 3, listing
    assert "\\x1b]0;name-title\\x07\\nsecond line\\x1b[2J.md" in listing
    search = kb("search", "swordfish", "--mode", "lexical", *human).stdout
    outputs.append(search)
    assert "[bold]swordfish[/bold]" in search or "swordfish" in search
    doc_id = kb.json("list")["documents"][0]["document_id"]
    shown = kb("show", str(doc_id), *human).stdout
    outputs.append(shown)
    assert "[link=https://evil.example]" in shown  # markup stays text, never a link
    chunk_id = kb.json("show", str(doc_id))["chunks"][0]["chunk_id"]
    outputs += [
        kb("chunk", str(chunk_id), *human).stdout,
        kb("tags", *human).stdout,
        kb("stats", *human).stdout,
        kb("sync", *human).stdout,
    ]
    (hostile / HOSTILE_NAME).write_text("# Changed\n\nOther words.\n", encoding="utf-8")
    doctor = kb("doctor", *human, ok=False).stdout  # names the changed file
    assert "name-title\\x07\\nsecond line" in doctor  # one line per check
    outputs.append(doctor)
    for text in outputs:
        _assert_clean(text, styled)
    if styled:  # kb's own link to the file it indexed is still there
        assert (hostile / HOSTILE_NAME).as_uri() in shown


BIDI = ("\u202e", "\u2066", "\u2067", "\u2069", "\u202a")


@pytest.mark.parametrize("color", ["never", "always"])
def test_bidi_overrides_in_names_and_content_are_shown_escaped(kb, tmp_path, color):
    """A right-to-left override makes "invoice<U+202E>dm.exe" read as "invoiceexe.md" at a
    terminal; kb shows it as `\\u202e`. Right-to-left text itself (and its marks) stays."""
    root = tmp_path / "bills"
    root.mkdir()
    name = "invoice\u202edm.exe.md"
    body = "# Paid \u2067lanternfish\u2069\n\nשלום\u200f lanternfish \u202aref\u202c here.\n"
    (root / name).write_text(body, encoding="utf-8")
    human = ("--format", "human", "--color", color)
    outputs = [
        kb("add", str(root), *human).stdout,
        kb("list", *human).stdout,
        kb("search", "lanternfish", "--mode", "lexical", *human).stdout,
    ]
    doc_id = kb.json("list")["documents"][0]["document_id"]
    outputs.append(kb("show", str(doc_id), *human).stdout)
    for out in outputs:
        assert not any(char in out for char in BIDI), out
    assert "invoice\\u202edm.exe.md" in outputs[1]
    assert "\\u2067lanternfish\\u2069" in outputs[2]
    assert "שלום\u200f" in outputs[3]  # a mark, not an override: kept
    # JSON is data, not terminal text: the name is as it is on disk
    assert kb.json("list")["documents"][0]["path"].endswith(name)


def test_error_messages_escape_the_paths_they_echo(kb, tmp_path):
    missing = tmp_path / f"gone{TITLE}{CLEAR}"
    result = kb("add", str(missing), "--format", "human", ok=False)
    assert result.exit_code == 1
    _assert_clean(result.stderr, styled=False)
    assert len(result.stderr.strip().splitlines()) == 1


def test_progress_line_names_are_escaped():
    from kb_search.cli.progress import status_text
    from kb_search.progress import Tally

    tally = Tally()
    tally.start(2)
    tally.name = HOSTILE_NAME
    line = status_text(tally)
    _assert_clean(line, styled=False)
    assert "\n" not in line


@pytest.mark.parametrize("typed", [f"--bad{TITLE}cmd", f"--topp{TITLE}", f"-{CLEAR}"])
def test_an_unknown_option_is_echoed_escaped(kb, typed):
    """Issue 33, break 8: `kb search x $'--bad\\e]0;PWN\\acmd'` printed the raw OSC in its
    "is not an option" error (click's own errors already escaped it)."""
    result = kb("search", "x", typed, ok=False)
    assert result.exit_code == 2
    _assert_clean(result.stderr, styled=False)
    assert "not an option" in result.stderr and "\\x1b" in result.stderr
