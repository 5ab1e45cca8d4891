"""Citations an agent can open: every search citation opens as given from another working
directory, `kb get` reads exactly the cited passage (and only from indexed files), and
`kb search --explain PATH` says where a file stood."""

from __future__ import annotations

import json
import os
import re
import threading
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

pytest.importorskip("reportlab")

from pdf_samples import body, lines_of, words, write_pdf  # noqa: E402

MARKDOWN = """\
# Lighthouse keeping

A short manual for the keepers of the northern lighthouse.

## Lamp care

Trim the wick every evening, polish the brass lens housing and log the paraffin level
in the keeper's book before the lamp is lit at dusk.

## Fog signals

When the fog rolls in, sound the diaphone horn every thirty seconds and note the start
and end of each fog bank in the weather ledger.
"""

CODE = '''\
"""Tide tables for the harbour."""


def high_tide(day: int) -> float:
    """The hour of high tide on a day of the lunar cycle."""
    return (day * 0.8333 + 4.5) % 24


def tide_height(hour: float, spring: bool) -> float:
    """Metres above chart datum at an hour, higher at spring tides."""
    base = 3.2 if spring else 2.1
    return base * abs(((hour % 12.4) / 6.2) - 1)
'''

HTML = """<!doctype html>
<html><head><title>Harbour rules</title></head>
<body>
<h1 id="rules">Harbour rules</h1>
<p>Every vessel entering the harbour must radio the harbour master on channel twelve
before passing the breakwater.</p>
<h2 id="anchoring">Anchoring</h2>
<p>Anchoring is forbidden inside the marked fairway; use the mooring buoys on the
eastern quay instead.</p>
</body></html>
"""

WORD = re.compile(r"[a-z]{4,}")


def schema(name: str) -> dict:
    return json.loads(resources.files("kb_search").joinpath(f"schemas/{name}").read_text())


def words_of(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "keeper.md").write_text(MARKDOWN)
    (root / "tides.py").write_text(CODE)
    (root / "harbour.html").write_text(HTML)
    pages = [body(lines_of(words(60, "beacon"))), body(lines_of(words(60, "semaphore")))]
    write_pdf(root / "signals.pdf", pages, title="Signals")
    return root


def cited_text(citation: str) -> str:
    """What the citation points at, opened as given (no index involved)."""
    path, _, fragment = citation.partition("#")
    if match := re.fullmatch(r"page=(\d+)", fragment):
        import pypdfium2

        pdf = pypdfium2.PdfDocument(path)
        try:
            page = pdf[int(match[1]) - 1]
            return page.get_textpage().get_text_range()
        finally:
            pdf.close()
    text = Path(path).read_text()
    if match := re.fullmatch(r"L(\d+)(?:-L(\d+))?", fragment):
        first, last = int(match[1]), int(match[2] or match[1])
        return "\n".join(text.split("\n")[first - 1 : last])
    return text  # no fragment, or an anchor: the section is in the file


def test_every_citation_opens_from_another_directory(kb, corpus, tmp_path, monkeypatch):
    kb("add", str(corpus))
    queries = [
        "wick brass lens", "fog diaphone horn", "high tide hour", "tide height spring",
        "beacon0 search", "semaphore0 query", "radio harbour master", "anchoring mooring",
    ]  # fmt: skip
    results = [r for q in queries for r in kb.json("search", q, "--top", "3")["results"]]
    types = {r["source"]["type"] for r in results}
    assert {"markdown", "code", "pdf", "html"} <= types
    elsewhere = tmp_path / "somewhere" / "else"
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    for result in results:
        citation = result["citation"]
        assert citation.split("#")[0] == result["source"]["path"]
        opened = words_of(cited_text(citation))
        expected = words_of(result["text"])
        assert expected and len(expected & opened) >= 0.9 * len(expected), (citation, expected)
        if result["source"]["type"] == "pdf":
            assert "#page=" in citation


def test_compact_keeps_an_openable_citation_and_the_chunk_id(kb, corpus, tmp_path, monkeypatch):
    kb("add", str(corpus))
    compact = kb.json("search", "fog", "horn", "--compact")
    jsonschema.validate(kb.json("search", "fog", "horn"), schema("search_response.schema.json"))
    monkeypatch.chdir(tmp_path / "corpus")
    for result in compact["results"]:
        assert isinstance(result["chunk_id"], int)
        assert Path(result["citation"].split("#")[0]).is_file()
        shown = kb("get", f"chunk:{result['chunk_id']}", "--format", "json").stdout
        assert json.loads(shown)["passages"][0]["citation"].split("#")[0] in result["citation"]


# ---- kb get ---------------------------------------------------------------------------------


@pytest.fixture
def numbered(kb, tmp_path: Path) -> Path:
    root = tmp_path / "numbered"
    root.mkdir()
    for name in ("one", "two", "three"):
        lines = [f"{name} line {i} about the keeper's lamp and fog horn" for i in range(1, 41)]
        (root / f"{name}.txt").write_text("\n".join(lines) + "\n")
    kb("add", str(root))
    return root


def get(kb, *args: str) -> dict:
    data = json.loads(kb("get", *args, "--format", "json").stdout)
    jsonschema.validate(data, schema("get_response.schema.json"))
    return data


def test_get_returns_exactly_the_cited_lines_with_context(kb, numbered):
    path = numbered / "one.txt"
    data = get(kb, f"{path}#L10-L12", "-C", "2")
    (passage,) = data["passages"]
    assert passage["from"] == "disk" and passage["lines"] == [8, 14]
    assert passage["citation"] == f"{path}#L8-L14"
    assert passage["text"].split("\n") == [
        f"one line {i} about the keeper's lamp and fog horn" for i in range(8, 15)
    ]
    relative = get(kb, "numbered/two.txt#L40", "-C", "5")["passages"][0]  # the cwd is tmp_path
    assert relative["lines"] == [35, 40]
    assert relative["text"].endswith("two line 40 about the keeper's lamp and fog horn")


def test_human_get_prints_the_lines_unwrapped(kb, numbered, environment):
    """A terminal narrower than the file's lines: the passage keeps the file's own breaks."""
    environment.env["COLUMNS"] = "30"
    long = numbered / "long.txt"
    line = "a line much wider than thirty columns, kept whole when read back " * 2
    long.write_text(f"{line}\n{line}\n")
    kb("add", str(long))
    human = kb("get", f"{long}#L1-L2", "--format", "human").stdout
    assert human.count(line.rstrip()) == 2


def test_get_several_citations_within_a_byte_budget(kb, numbered):
    cites = [f"{numbered / n}.txt#L1-L10" for n in ("one", "two", "three")]
    whole = get(kb, *cites)
    sizes = [len(p["text"].encode()) for p in whole["passages"]]
    budget = sizes[0] + sizes[1] // 2
    data = get(kb, *cites, "--max-bytes", str(budget))
    first, second = data["passages"]
    assert first["text"] == whole["passages"][0]["text"] and not first["truncated"]
    assert second["truncated"] and second["text"].endswith("[… cut at the byte budget]")
    assert data["truncated"] == [second["citation"]] and data["omitted"] == [cites[2]]
    assert data["bytes"] <= budget
    human = kb("get", *cites, "--max-bytes", str(budget), "--format", "human").stdout
    assert "numbered/one.txt#L1-L10 (from: disk)" in human and "Omitted by --max-bytes" in human


def test_get_refuses_what_is_not_indexed(kb, numbered, tmp_path):
    stray = tmp_path / "stray.txt"
    stray.write_text("secret\n")
    one = numbered / "one.txt"
    bad = (f"{one}#L0", f"{one}#L9-L3", f"{one}#L99", f"{one}#page=1", "", "chunk:x")
    for citation in (str(stray), f"{stray}#L1", "/etc/passwd#L1", "chunk:999999", *bad):
        result = kb("get", citation, ok=False)
        assert result.exit_code == 1 and result.stdout == ""
        assert len(result.stderr.strip().splitlines()) == 1 and "secret" not in result.stderr


def test_get_never_reads_a_fifo_and_serves_the_index_instead(kb, numbered, tmp_path):
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    result = kb("get", str(fifo), ok=False)
    assert result.exit_code == 1 and "not in the index" in result.stderr
    indexed = numbered / "three.txt"
    indexed.unlink()
    os.mkfifo(indexed)  # an indexed path that is now a FIFO: opening it must not block
    answer: list[dict] = []
    reader = threading.Thread(target=lambda: answer.append(get(kb, f"{indexed}#L3")), daemon=True)
    reader.start()
    reader.join(timeout=20)
    if reader.is_alive():  # unblock the test run, then fail
        with open(os.open(indexed, os.O_WRONLY | os.O_NONBLOCK), "w"):
            pass
        pytest.fail("kb get blocked on a FIFO")
    (passage,) = answer[0]["passages"]
    assert passage["from"] == "index" and "three line 3 " in passage["text"]
    assert "regular file" in passage["note"]


def test_get_reads_the_index_when_the_file_changed(kb, numbered):
    path = numbered / "two.txt"
    path.write_text("rewritten\n" * 40)
    passage = get(kb, f"{path}#L5-L6")["passages"][0]
    assert passage["from"] == "index" and "changed" in passage["note"]
    assert "two line 5 " in passage["text"] and "rewritten" not in passage["text"]


def test_show_with_a_line_citation_shows_those_lines(kb, numbered):
    path = numbered / "one.txt"
    data = json.loads(kb("show", f"{path}#L2-L3", "--format", "json").stdout)
    assert [p["text"] for p in data["passages"]] == [
        "one line 2 about the keeper's lamp and fog horn\n"
        "one line 3 about the keeper's lamp and fog horn"
    ]


def test_get_a_pdf_page_and_a_markdown_anchor(kb, corpus):
    kb("add", str(corpus))
    page = get(kb, f"{corpus / 'signals.pdf'}#page=2")["passages"][0]
    assert page["from"] == "index" and page["pages"] == [2, 2] and "semaphore0" in page["text"]
    section = get(kb, f"{corpus / 'keeper.md'}#fog-signals")["passages"][0]
    assert "diaphone" in section["text"] and "brass" not in section["text"]
    whole = get(kb, str(corpus / "signals.pdf"))["passages"][0]  # never the PDF's bytes
    assert whole["from"] == "index" and "%PDF" not in whole["text"]
    assert "beacon0" in whole["text"] and "semaphore0" in whole["text"]


# ---- kb search --explain --------------------------------------------------------------------


def explained(kb, *args: str) -> dict:
    data = kb.json("search", *args)
    jsonschema.validate(data, schema("search_response.schema.json"))
    return data["explain"]


def test_explain_a_file_that_ranked(kb, corpus):
    kb("add", str(corpus))
    explain = explained(kb, "fog", "diaphone", "horn", "--explain", str(corpus / "keeper.md"))
    assert explain["indexed"] and explain["status"] == "returned"
    best = explain["chunks"][0]
    assert best["returned"] == 1 and best["lexical"]["rank"] == 1 and best["fused"]["rank"] == 1
    assert best["citation"].startswith(str(corpus / "keeper.md") + "#L")
    below = explained(kb, "fog", "horn", "--top", "1", "--explain", str(corpus / "tides.py"))
    assert below["status"] in ("cut", "not found")
    assert any("top 1" in r or "query's words" in r for c in below["chunks"] for r in c["cut"])


def test_explain_a_filtered_file(kb, corpus):
    kb("add", str(corpus))
    explain = explained(kb, "fog horn", "--type", "pdf", "--explain", str(corpus / "keeper.md"))
    assert explain["status"] == "filtered" and "type filter (pdf)" in explain["reason"]
    assert explain["chunks"][0]["lexical"]["rank"] == 1  # where it would have stood


def test_explain_files_that_are_not_indexed(kb, corpus, tmp_path):
    (corpus / ".kbignore").write_text("secret.md\n")
    (corpus / "secret.md").write_text("fog horn notes\n")
    (corpus / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    kb("add", str(corpus), ok=False)
    outside = tmp_path / "outside.md"
    outside.write_text("fog horn\n")
    reasons = {
        name: explained(kb, "fog horn", "--explain", str(path))
        for name, path in (("never", outside), ("ignored", corpus / "secret.md"),
                           ("failed", corpus / "broken.pdf"))  # fmt: skip
    }
    assert all(not e["indexed"] and e["status"] == "not indexed" for e in reasons.values())
    assert reasons["never"]["reason"] == "not under any added folder"
    assert ".kbignore" in reasons["ignored"]["reason"]
    assert reasons["failed"]["reason"].startswith("it failed to index: ")
    human = kb("search", "fog horn", "--explain", str(outside), "--format", "human").stdout
    assert "outside.md: not indexed: not under any added folder" in human


def test_explain_names_the_folder_the_walk_passed_by(kb, corpus):
    # Old code: a bundle under dist/ was "ignored by a .kbignore (or a default ignore)", in a
    # folder with no .kbignore, while `kb add` counted it under "build, cache or vendor folder".
    (corpus / "dist").mkdir()
    (corpus / "dist" / "app.js").write_text("// fog horn\nvar a = 1;\n")
    (corpus / ".github").mkdir()
    (corpus / ".github" / "notes.md").write_text("fog horn\n")
    kb("add", str(corpus))
    bundle = explained(kb, "fog horn", "--explain", str(corpus / "dist" / "app.js"))
    assert bundle["reason"] == (
        f"left out by the walk under {corpus}: build, cache or vendor folder (dist)"
    )
    hidden = explained(kb, "fog horn", "--explain", str(corpus / ".github" / "notes.md"))
    assert hidden["reason"].endswith(": hidden folder (.github)")
    assert ".kbignore" not in bundle["reason"] + hidden["reason"]


def test_stats_say_where_the_paths_of_a_db_built_elsewhere_point(kb, numbered, tmp_path):
    assert kb.json("stats")["paths_here"] == {"checked": 3, "missing": 0, "note": None}
    numbered.rename(tmp_path / "moved")  # as if the DB were opened on another machine
    here = kb.json("stats")["paths_here"]
    assert here["missing"] == here["checked"] == 3
    assert here["note"].startswith(f"indexed paths point to {numbered}; 3 of 3 sampled files")
    doctor = kb("doctor", "--format", "json", ok=False).stdout
    assert str(numbered) in json.dumps(json.loads(doctor))

