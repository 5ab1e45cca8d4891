"""EPUB and OpenDocument files written with zipfile by the test; hostile archives."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from kb_search.ingest.parse import parse_file
from kb_search.parsed import ChunkSettings, IngestError

TIGHT = ChunkSettings(max_tokens=60, min_tokens=1)
ROOMY = ChunkSettings(max_tokens=100, min_tokens=1)
# Small enough that these little test documents do not fit in one chunk.
TINY = ChunkSettings(max_tokens=18, min_tokens=1)


def write_zip(path: Path, mimetype: str, members: dict[str, str | bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("mimetype", mimetype, compress_type=zipfile.ZIP_STORED)
        for name, data in members.items():
            archive.writestr(name, data)
    return path


CONTAINER = """<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="OEBPS/content.opf"
    media-type="application/oebps-package+xml"/></rootfiles>
</container>"""

OPF = """<?xml version="1.0" encoding="utf-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="id">urn:isbn:9780000000001</dc:identifier>
    <dc:title>The Garden Book</dc:title>
    <dc:creator>Ann Lee</dc:creator>
    <dc:creator>Bob Chen</dc:creator>
    <dc:language>en</dc:language>
    <dc:subject>gardening</dc:subject>
    <dc:subject>soil</dc:subject>
  </metadata>
  <manifest>
    <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
    <item id="c1" href="text/chapter%201.xhtml" media-type="application/xhtml+xml"/>
    <item id="c2" href="text/chapter2.xhtml" media-type="application/xhtml+xml"/>
    <item id="css" href="style.css" media-type="text/css"/>
    <item id="img" href="cover.png" media-type="image/png"/>
  </manifest>
  <spine><itemref idref="nav"/><itemref idref="c2"/><itemref idref="c1"/></spine>
</package>"""


def xhtml(title: str, body: str) -> str:
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml">'
        f"<head><title>{title}</title><style>p {{ color: red }}</style></head>"
        f"<body>{body}</body></html>"
    )


def make_epub(path: Path) -> Path:
    return write_zip(path, "application/epub+zip", {
        "META-INF/container.xml": CONTAINER,
        "OEBPS/content.opf": OPF,
        "OEBPS/nav.xhtml": xhtml("Contents", "<nav><ol><li>NAVENTRY</li></ol></nav><p>TOCTEXT</p>"),
        "OEBPS/text/chapter 1.xhtml": xhtml("Soil", "<h1>Soil</h1><p>Compost feeds the soil.</p>"
                                          "<h2>Worms</h2><p>Worms aerate the beds.</p>"),
        "OEBPS/text/chapter2.xhtml": xhtml("Preface", "<p>Why we garden at all.</p>"),
        "OEBPS/style.css": "p { color: red }",
        "OEBPS/cover.png": b"\x89PNG\r\n\x1a\n" + bytes(200),
    })  # fmt: skip


def test_epub_spine_order_chapters_and_metadata(tmp_path):
    document = parse_file(make_epub(tmp_path / "garden.epub"), TINY)
    assert document.doc_type == "epub"
    assert document.title == "The Garden Book"
    assert document.language == "en"
    assert document.tags == ["gardening", "soil"]
    assert document.page_count == 2
    assert document.metadata == {
        "identifier": "urn:isbn:9780000000001", "authors": ["Ann Lee", "Bob Chen"],
        "page_unit": "chapter",
    }  # fmt: skip
    got = [(c.heading, c.text, c.page_start, c.page_end) for c in document.chunks]
    assert got == [
        ("Preface", "# Preface\n\nWhy we garden at all.", 1, 1),  # spine order, not file order
        ("Soil", "# Soil\n\nCompost feeds the soil.", 2, 2),
        ("Soil > Worms", "## Worms\n\nWorms aerate the beds.", 2, 2),
    ]
    everything = "\n".join(c.text for c in document.chunks)
    for junk in ("NAVENTRY", "TOCTEXT", "color: red", "PNG"):
        assert junk not in everything


ODF_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" '
    'xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0" '
    'xmlns:dc="http://purl.org/dc/elements/1.1/"'
)


def odf(path: Path, kind: str, body: str, title: str = "") -> Path:
    content = (
        f"<office:document-content {ODF_NS}><office:body>{body}</office:body>"
        "</office:document-content>"
    )
    meta = (
        f"<office:document-meta {ODF_NS}><office:meta><dc:title>{title}</dc:title>"
        "<dc:creator>Ann Lee</dc:creator><dc:language>en-GB</dc:language>"
        "<meta:keyword>plans</meta:keyword><meta:keyword>2024</meta:keyword>"
        "</office:meta></office:document-meta>"
    )
    mime = f"application/vnd.oasis.opendocument.{kind}"
    return write_zip(path, mime, {"content.xml": content, "meta.xml": meta, "styles.xml": "<x/>"})


ODT_BODY = """<office:text>
<text:sequence-decls><text:sequence-decl text:name="Figure"/></text:sequence-decls>
<text:table-of-content><text:index-body><text:p>TOCLINE 1</text:p></text:index-body>
</text:table-of-content>
<text:h text:outline-level="1">Garden plan</text:h>
<text:p>Plant <text:span>tomatoes</text:span> in<text:s text:c="3"/>May.<text:note>
<text:note-citation>1</text:note-citation><text:note-body><text:p>After the frost.</text:p>
</text:note-body></text:note></text:p>
<text:h text:outline-level="2">Beds</text:h>
<text:list><text:list-item><text:p>North bed</text:p></text:list-item>
<text:list-item><text:p>South bed</text:p><text:list><text:list-item><text:p>Herbs</text:p>
</text:list-item></text:list></text:list-item></text:list>
<table:table table:name="Costs"><table:table-row><table:table-cell><text:p>Item</text:p>
</table:table-cell><table:table-cell><text:p>Cost</text:p></table:table-cell></table:table-row>
<table:table-row><table:table-cell><text:p>Seeds</text:p></table:table-cell><table:table-cell>
<text:p>12</text:p></table:table-cell><table:table-cell table:number-columns-repeated="16380"/>
</table:table-row>
<table:table-row table:number-rows-repeated="1048570">
<table:table-cell table:number-columns-repeated="16384"/></table:table-row></table:table>
<text:tracked-changes><text:changed-region><text:deletion><text:p>DELETEDTEXT</text:p>
</text:deletion></text:changed-region></text:tracked-changes>
<text:p><office:annotation><text:p>COMMENTTEXT</text:p></office:annotation>Water daily.</text:p>
</office:text>"""


def test_odt_headings_lists_tables_and_metadata(tmp_path):
    document = parse_file(odf(tmp_path / "plan.odt", "text", ODT_BODY, "Garden plan 2024"), TIGHT)
    assert document.doc_type == "odt"
    assert document.title == "Garden plan 2024"
    assert document.language == "en-GB"
    assert document.tags == ["plans", "2024"]
    assert document.metadata == {"author": "Ann Lee"}
    got = [(c.heading, c.text) for c in document.chunks]
    assert got[0] == ("Garden plan", "# Garden plan\n\nPlant tomatoes in May. [After the frost.]")
    beds = got[1]
    assert beds[0] == "Garden plan > Beds"
    assert beds[1] == (
        "## Beds\n\n- North bed\n- South bed\n\n  - Herbs\n\n"
        "| Item | Cost |\n|---|---|\n| Seeds | 12 |\n\nWater daily."
    )
    assert all(c.page_start is None and c.line_start is None for c in document.chunks)
    everything = "\n".join(c.text for c in document.chunks)
    for junk in ("TOCLINE", "DELETEDTEXT", "COMMENTTEXT", "Figure"):
        assert junk not in everything


ODS_BODY = (
    """<office:spreadsheet>
<table:table table:name="Budget">
<table:table-row><table:table-cell><text:p>Month</text:p></table:table-cell><table:table-cell>
<text:p>Spend</text:p></table:table-cell></table:table-row>
"""
    + "".join(
        f"<table:table-row><table:table-cell><text:p>Month {i}</text:p></table:table-cell>"
        f"<table:table-cell><text:p>{100 + i}</text:p></table:table-cell></table:table-row>"
        for i in range(1, 25)
    )
    + """</table:table>
<table:table table:name="Notes"><table:table-row><table:table-cell>
<text:p>Ask the bank</text:p></table:table-cell></table:table-row></table:table>
</office:spreadsheet>"""
)


def test_ods_sheets_are_pages_and_rows_keep_the_header(tmp_path):
    # a budget where heading line and table header together stay small context (a quarter)
    document = parse_file(odf(tmp_path / "budget.ods", "spreadsheet", ODS_BODY), ROOMY)
    assert document.doc_type == "ods"
    assert document.title == "budget"  # no dc:title: the file name, not the first sheet
    assert document.page_count == 2
    assert document.metadata == {"author": "Ann Lee", "page_unit": "sheet"}
    budget = [c for c in document.chunks if c.page_start == 1]
    assert len(budget) > 1
    for chunk in budget:
        assert chunk.heading == "Budget"
        assert "| Month | Spend |\n|---|---|" in chunk.text
        assert chunk.token_count <= ROOMY.max_tokens
    rows = [line for c in budget for line in c.text.split("\n") if line.startswith("| Month ")]
    rows = [row for row in rows if row != "| Month | Spend |"]
    assert len(rows) == 24
    notes = document.chunks[-1]
    assert (notes.heading, notes.page_start) == ("Notes", 2)
    assert "Ask the bank" in notes.text


ODP_BODY = """<office:presentation>
<draw:page draw:name="page1">
  <draw:frame presentation:class="title"><draw:text-box><text:p>Roadmap</text:p>
</draw:text-box></draw:frame>
  <draw:frame presentation:class="outline"><draw:text-box><text:list><text:list-item>
<text:p>Ship search</text:p></text:list-item></text:list></draw:text-box></draw:frame>
  <presentation:notes><draw:frame><draw:text-box><text:p>Mention the latency numbers.</text:p>
</draw:text-box></draw:frame></presentation:notes>
</draw:page>
<draw:page draw:name="page2">
  <draw:frame><draw:text-box><text:p>No title here, just text.</text:p></draw:text-box></draw:frame>
</draw:page>
</office:presentation>"""


def test_odp_slides_are_pages_with_titles_and_notes(tmp_path):
    document = parse_file(
        odf(tmp_path / "talk.odp", "presentation", ODP_BODY), ChunkSettings(25, 1)
    )
    assert document.doc_type == "odp"
    assert document.title == "Roadmap"
    assert document.metadata["page_unit"] == "slide"
    got = [(c.heading, c.text, c.page_start) for c in document.chunks]
    assert got == [
        ("Roadmap", "# Roadmap\n\n- Ship search\n\nNotes: Mention the latency numbers.", 1),
        ("Slide 2", "# Slide 2\n\nNo title here, just text.", 2),
    ]


def test_content_sniffing_finds_epub_and_odf_without_extension(tmp_path):
    from kb_search.ingest import detect_type

    make_epub(tmp_path / "book")
    odf(tmp_path / "sheet", "spreadsheet", ODS_BODY)
    assert detect_type(tmp_path / "book") == "epub"
    assert detect_type(tmp_path / "sheet") == "ods"
    assert parse_file(tmp_path / "book", TIGHT).title == "The Garden Book"


def bomb(path: Path, member: str, mimetype: str, size: int) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("mimetype", mimetype, compress_type=zipfile.ZIP_STORED)
        archive.writestr("META-INF/container.xml", CONTAINER)
        with archive.open(member, "w", force_zip64=True) as handle:
            block = b"<p>" + b" " * (1 << 20)
            for _ in range(size // len(block)):
                handle.write(block)
    return path


@pytest.mark.parametrize(
    ("name", "member", "mimetype"),
    [
        ("bomb.odt", "content.xml", "application/vnd.oasis.opendocument.text"),
        ("bomb.epub", "OEBPS/content.opf", "application/epub+zip"),
    ],
)
def test_zip_bombs_stop_at_the_uncompressed_budget(tmp_path, name, member, mimetype):
    path = bomb(tmp_path / name, member, mimetype, 60 << 20)  # 60 MB of spaces, ~60 KB zipped
    assert path.stat().st_size < 1_000_000
    with pytest.raises(IngestError, match=r"expands past 10 MB when unpacked") as caught:
        parse_file(path, ChunkSettings(), max_bytes=1_000_000)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("name", ["broken.epub", "broken.odt", "broken.ods"])
def test_broken_archives_are_one_line_errors(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"PK\x03\x04 this is not really a zip file" * 10)
    with pytest.raises(IngestError, match="not a readable zip archive") as caught:
        parse_file(path, ChunkSettings())
    assert "\n" not in str(caught.value)
    truncated = tmp_path / f"truncated-{name}"
    make_epub(truncated)
    truncated.write_bytes(truncated.read_bytes()[:300])
    with pytest.raises(IngestError):
        parse_file(truncated, ChunkSettings())


def test_an_archive_missing_its_content_says_which_member(tmp_path):
    path = write_zip(tmp_path / "empty.odt", "application/vnd.oasis.opendocument.text", {})
    with pytest.raises(IngestError, match="content.xml is missing"):
        parse_file(path, ChunkSettings())
    path = write_zip(tmp_path / "bad.odt", "application/vnd.oasis.opendocument.text",
                     {"content.xml": "<office:document-content"})  # fmt: skip
    with pytest.raises(IngestError, match="content.xml is not valid XML"):
        parse_file(path, ChunkSettings())


def test_odt_text_boxes_are_read_once(tmp_path):
    inner = "<draw:frame><draw:text-box><text:p>Inner box</text:p></draw:text-box></draw:frame>"
    body = (
        "<office:text><text:p>Figure: <draw:frame><draw:text-box><text:p>Boxed note</text:p>"
        f"<text:p>{inner}</text:p></draw:text-box></draw:frame></text:p></office:text>"
    )
    document = parse_file(odf(tmp_path / "boxes.odt", "text", body), ChunkSettings())
    assert document.chunks[0].text == "Figure:\n\nBoxed note\n\nInner box"
