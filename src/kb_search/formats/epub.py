"""EPUB 2/3 with `zipfile` and our HTML converter: the OPF package gives the metadata
(title, authors, language, subjects as tags) and the reading order (spine); each XHTML
document of the spine is converted to Markdown and chunked by its headings. Chunks cite the
spine position as their page (`page_unit` "chapter"). The archive is read under a size budget
(`archive.SafeZip`); `ebooklib` would add lxml for what these few lines of XML do."""

from __future__ import annotations

import posixpath
import re
from urllib.parse import unquote
from xml.etree import ElementTree

from kb_search.formats.archive import SafeZip
from kb_search.formats.converted import MarkdownBuilder, Origin
from kb_search.formats.html import html_to_markdown
from kb_search.formats.reader import decode_bytes
from kb_search.formats.registry import Source
from kb_search.parsed import IngestError, ParsedDocument

_CONTAINER = "META-INF/container.xml"
_DC = "{http://purl.org/dc/elements/1.1/}"
_CONTENT_TYPES = {"application/xhtml+xml", "text/html", "application/x-dtbook+xml"}
_HEADING_LINE = re.compile(r"^#{1,6}\s")
MAX_SPINE_ITEMS = 5_000


def parse_epub(source: Source) -> ParsedDocument:
    with SafeZip(source.path, source.max_bytes, "EPUB") as archive:
        package_path = _package_path(archive)
        package = archive.xml(package_path)
        metadata = _metadata(package)
        builder = MarkdownBuilder()
        chapters = 0
        for href in _spine(package, posixpath.dirname(package_path))[:MAX_SPINE_ITEMS]:
            if not archive.has(href):
                continue  # a spine entry without its file: skip it, as readers do
            converted = html_to_markdown(decode_bytes(archive.read(href)))
            if not converted.markdown.strip():
                continue
            chapters += 1
            origin = Origin(page=chapters)
            if not any(_HEADING_LINE.match(line) for line in converted.markdown.split("\n")):
                builder.heading(1, converted.title or f"Chapter {chapters}", origin)
            builder.block(converted.markdown, origin)
    document = builder.parse(source.path, source.settings, source.count)
    document.title = metadata.pop("title", "") or document.title
    document.doc_type = "epub"
    document.language = metadata.pop("language", None) or None
    subjects = metadata.pop("subjects", [])
    document.tags = [str(s) for s in subjects] if isinstance(subjects, list) else []
    document.page_count = chapters or None
    document.metadata = {**metadata, "page_unit": "chapter"}
    return document


def _package_path(archive: SafeZip) -> str:
    if archive.has(_CONTAINER):
        container = archive.xml(_CONTAINER)
        for element in container.iter():
            if element.tag.endswith("rootfile") and element.get("full-path"):
                return element.get("full-path", "")
    candidates = sorted(name for name in archive.names if name.lower().endswith(".opf"))
    if not candidates:
        raise IngestError("broken EPUB file: no OPF package document")
    return candidates[0]


def _metadata(package: ElementTree.Element) -> dict[str, object]:
    found: dict[str, object] = {}
    authors = [_text(e) for e in package.iter(f"{_DC}creator") if _text(e)]
    subjects = [_text(e) for e in package.iter(f"{_DC}subject") if _text(e)]
    for name in ("title", "language", "publisher", "date", "identifier", "description"):
        element = package.find(f".//{_DC}{name}")
        if element is not None and _text(element):
            found[name] = _text(element)
    if "description" in found:
        found["description"] = html_to_markdown(str(found["description"])).markdown.strip()
    if authors:
        found["authors"] = authors
    found["subjects"] = subjects
    return found


def _spine(package: ElementTree.Element, base: str) -> list[str]:
    """Archive paths of the content documents, in reading order (the nav document left out)."""
    manifest: dict[str, tuple[str, str, str]] = {}
    for item in package.iter():
        if item.tag.endswith("}item") or item.tag == "item":
            manifest[item.get("id", "")] = (
                item.get("href", ""),
                item.get("media-type", ""),
                item.get("properties", ""),
            )
    paths: list[str] = []
    for ref in package.iter():
        if not (ref.tag.endswith("}itemref") or ref.tag == "itemref"):
            continue
        href, media_type, properties = manifest.get(ref.get("idref", ""), ("", "", ""))
        if href and media_type in _CONTENT_TYPES and "nav" not in properties.split():
            paths.append(posixpath.normpath(posixpath.join(base, unquote(href.split("#")[0]))))
    return paths


def _text(element: ElementTree.Element) -> str:
    return " ".join("".join(element.itertext()).split())


def parse_epub_source(source: Source) -> ParsedDocument:
    return parse_epub(source)
