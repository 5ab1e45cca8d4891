"""Parse time per format, for files of realistic size written from the same real prose.

    python -m bench formats ../shared/data/md_argocd_docs [--docs 60] [--repeat 5]

The first `--docs` Markdown files of the folder (sections, paragraphs, code blocks) are
written out as each supported format (EPUB, ODT/ODS/ODP, RTF, notebook, e-mail, Org,
LaTeX, AsciiDoc, CSV, JSON/YAML/TOML), then each file is parsed `--repeat` times by
`parse_file`, as `kb add` does in a worker. The baseline is the same text as one Markdown
file: the table gives each format's parse time per MB of source and its ratio to Markdown.
"""

from __future__ import annotations

import html
import json
import mailbox
import re
import statistics
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path

import yaml

from bench import harness
from kb_search.ingest.parse import parse_file
from kb_search.parsed import ChunkSettings

LIBRARIES = {
    "markdown": "kb (baseline)", "org": "kb converter", "asciidoc": "kb converter",
    "latex": "pylatexenc", "rtf": "striprtf", "epub": "zipfile + kb HTML converter",
    "odt": "zipfile + ElementTree", "ods": "zipfile + ElementTree",
    "odp": "zipfile + ElementTree", "ipynb": "json", "eml": "email",
    "mbox": "mailbox + email", "csv": "csv", "json": "json (scanner)",
    "yaml": "PyYAML composer", "toml": "tomllib + line scan",
}  # fmt: skip


@dataclass
class Section:
    title: str
    paragraphs: list[str] = field(default_factory=list)
    code: list[str] = field(default_factory=list)


@dataclass
class Doc:
    name: str
    sections: list[Section]


def read_corpus(folder: Path, limit: int) -> list[Doc]:
    docs = []
    for path in sorted(folder.rglob("*.md"))[:limit]:
        sections = [Section(path.stem)]
        block: list[str] = []
        fence: list[str] | None = None
        for line in path.read_text(encoding="utf-8", errors="replace").split("\n"):
            if fence is not None:
                if line.strip().startswith("```"):
                    sections[-1].code.append("\n".join(fence))
                    fence = None
                else:
                    fence.append(line)
            elif line.strip().startswith("```"):
                fence = []
            elif line.startswith("#"):
                flush(sections, block)
                sections.append(Section(line.lstrip("#").strip() or path.stem))
            elif not line.strip():
                flush(sections, block)
            else:
                block.append(line.strip())
        flush(sections, block)
        docs.append(Doc(path.stem, [s for s in sections if s.paragraphs or s.code]))
    return docs


def flush(sections: list[Section], block: list[str]) -> None:
    if block:
        sections[-1].paragraphs.append(" ".join(block))
        block.clear()


# -- writers: one file per format, all from the same sections
def write_markdown(docs: list[Doc], path: Path) -> None:
    out = []
    for doc in docs:
        out.append(f"# {doc.name}\n")
        for s in doc.sections:
            out.append(f"## {s.title}\n")
            out += [f"{p}\n" for p in s.paragraphs] + [f"```\n{c}\n```\n" for c in s.code]
    path.write_text("\n".join(out), encoding="utf-8")


def write_org(docs: list[Doc], path: Path) -> None:
    out = ["#+TITLE: Corpus"]
    for doc in docs:
        out.append(f"* {doc.name}")
        for s in doc.sections:
            # A line that starts with "*" is an Org heading: list-like paragraphs become items.
            paragraphs = [re.sub(r"^[*+]\s", "- ", p) for p in s.paragraphs]
            out += [f"** {s.title}", ":PROPERTIES:", ":ID: x", ":END:", *paragraphs]
            out += [f"#+BEGIN_SRC\n{c}\n#+END_SRC" for c in s.code]
    path.write_text("\n".join(out), encoding="utf-8")


def write_asciidoc(docs: list[Doc], path: Path) -> None:
    out = ["= Corpus", ":author: bench", ""]
    for doc in docs:
        out.append(f"== {doc.name}\n")
        for s in doc.sections:
            out += [f"=== {s.title}\n", *(f"{p}\n" for p in s.paragraphs)]
            out += [f"[source,yaml]\n----\n{c}\n----\n" for c in s.code]
    path.write_text("\n".join(out), encoding="utf-8")


def tex(text: str) -> str:
    return re.sub(r"([#$%&_{}])", r"\\\1", text.replace("\\", "/"))


def write_latex(docs: list[Doc], path: Path) -> None:
    out = ["\\documentclass{report}", "\\title{Corpus}", "\\begin{document}", "\\maketitle"]
    for doc in docs:
        out.append(f"\\chapter{{{tex(doc.name)}}}")
        for s in doc.sections:
            out += [f"\\section{{{tex(s.title)}}}\\label{{x}}", ""]
            out += [f"{tex(p)} \\cite{{ref}}\n" for p in s.paragraphs]
            out += [f"\\begin{{verbatim}}\n{c}\n\\end{{verbatim}}" for c in s.code]
    path.write_text("\n".join([*out, "\\end{document}"]), encoding="utf-8")


def rtf(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("{", "\\{").replace("}", "\\}")
    return "".join(c if ord(c) < 128 else f"\\u{ord(c)}?" for c in escaped)


def write_rtf(docs: list[Doc], path: Path) -> None:
    out = ["{\\rtf1\\ansi{\\fonttbl{\\f0 Arial;}}{\\info{\\title Corpus}}"]
    for doc in docs:
        for s in doc.sections:
            out.append(f"{{\\pard\\b {rtf(s.title)}\\b0\\par}}")
            out += [f"{{\\pard {rtf(p)}\\par}}" for p in s.paragraphs + s.code]
    path.write_text("\n".join([*out, "}"]), encoding="ascii")


def xhtml_body(doc: Doc) -> str:
    parts = [f"<h1>{html.escape(doc.name)}</h1>"]
    for s in doc.sections:
        parts.append(f"<h2>{html.escape(s.title)}</h2>")
        parts += [f"<p>{html.escape(p)}</p>" for p in s.paragraphs]
        parts += [f"<pre><code>{html.escape(c)}</code></pre>" for c in s.code]
    return "".join(parts)


def write_epub(docs: list[Doc], path: Path) -> None:
    items = "".join(
        f'<item id="c{i}" href="c{i}.xhtml" media-type="application/xhtml+xml"/>'
        for i in range(len(docs))
    )
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(docs)))
    opf = (
        '<package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata '
        'xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Corpus</dc:title></metadata>'
        f"<manifest>{items}</manifest><spine>{spine}</spine></package>"
    )
    container = (
        '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
        '<rootfile full-path="content.opf"/></rootfiles></container>'
    )
    members = {"META-INF/container.xml": container, "content.opf": opf}
    for i, doc in enumerate(docs):
        members[f"c{i}.xhtml"] = (
            f'<html xmlns="http://www.w3.org/1999/xhtml"><body>{xhtml_body(doc)}</body></html>'
        )
    write_zip(path, "application/epub+zip", members)


ODF_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"'
)


def write_odf(path: Path, kind: str, body: str) -> None:
    content = f"<office:document-content {ODF_NS}><office:body>{body}</office:body></office:document-content>"  # noqa: E501
    write_zip(path, f"application/vnd.oasis.opendocument.{kind}", {"content.xml": content})


def write_odt(docs: list[Doc], path: Path) -> None:
    parts = []
    for doc in docs:
        parts.append(f'<text:h text:outline-level="1">{html.escape(doc.name)}</text:h>')
        for s in doc.sections:
            parts.append(f'<text:h text:outline-level="2">{html.escape(s.title)}</text:h>')
            parts += [f"<text:p>{html.escape(p)}</text:p>" for p in s.paragraphs + s.code]
    write_odf(path, "text", f"<office:text>{''.join(parts)}</office:text>")


def cell(text: str) -> str:
    return f"<table:table-cell><text:p>{html.escape(text)}</text:p></table:table-cell>"


def write_ods(docs: list[Doc], path: Path) -> None:
    sheets = []
    for doc in docs:
        rows = [f"<table:table-row>{cell('section')}{cell('paragraph')}</table:table-row>"]
        rows += [
            f"<table:table-row>{cell(s.title)}{cell(p)}</table:table-row>"
            for s in doc.sections
            for p in s.paragraphs
        ]
        name = html.escape(doc.name, quote=True)
        sheets.append(f'<table:table table:name="{name}">{"".join(rows)}</table:table>')
    write_odf(path, "spreadsheet", f"<office:spreadsheet>{''.join(sheets)}</office:spreadsheet>")


def write_odp(docs: list[Doc], path: Path) -> None:
    slides = []
    for doc in docs:
        for s in doc.sections:
            title = f'<draw:frame presentation:class="title"><draw:text-box><text:p>{html.escape(s.title)}</text:p></draw:text-box></draw:frame>'  # noqa: E501
            text = "".join(f"<text:p>{html.escape(p)}</text:p>" for p in s.paragraphs)
            slides.append(
                f"<draw:page>{title}<draw:frame><draw:text-box>{text}</draw:text-box></draw:frame>"
                "</draw:page>"
            )
    write_odf(path, "presentation", f"<office:presentation>{''.join(slides)}</office:presentation>")


def write_zip(path: Path, mimetype: str, members: dict[str, str]) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("mimetype", mimetype, compress_type=zipfile.ZIP_STORED)
        for name, data in members.items():
            archive.writestr(name, data)


def write_notebook(docs: list[Doc], path: Path) -> None:
    cells = []
    for doc in docs:
        for s in doc.sections:
            text = f"## {s.title}\n\n" + "\n\n".join(s.paragraphs)
            cells.append({"cell_type": "markdown", "metadata": {}, "source": text})
            for code in s.code:
                output = {"output_type": "stream", "name": "stdout", "text": code * 3}
                image = {"output_type": "display_data", "data": {"image/png": "iVBOR" * 2000}}
                cells.append({"cell_type": "code", "metadata": {}, "source": code,
                              "outputs": [output, image], "execution_count": 1})  # fmt: skip
    notebook = {"nbformat": 4, "nbformat_minor": 5, "cells": cells,
                "metadata": {"language_info": {"name": "python"}}}  # fmt: skip
    path.write_text(json.dumps(notebook, indent=1), encoding="utf-8")


def mail(doc: Doc, attach: bool) -> EmailMessage:
    message = EmailMessage()
    message["From"], message["To"] = "Ann <ann@example.org>", "team@example.org"
    message["Subject"], message["Date"] = doc.name, "Tue, 05 Mar 2024 10:15:00 +0100"
    first, *rest = doc.sections
    message.set_content("\n\n".join(first.paragraphs + first.code))
    if attach and rest:
        notes = Doc(doc.name, rest)
        target = Path(tempfile.mkdtemp()) / "notes.md"
        write_markdown([notes], target)
        message.add_attachment(target.read_bytes(), maintype="text", subtype="markdown",
                               filename="notes.md")  # fmt: skip
        message.add_attachment(b"\x89PNG" + bytes(20000), maintype="image", subtype="png",
                               filename="chart.png")  # fmt: skip
    return message


def write_eml(docs: list[Doc], path: Path) -> None:
    merged = Doc("Corpus", [s for d in docs for s in d.sections])
    path.write_bytes(mail(merged, attach=True).as_bytes())


def write_mbox(docs: list[Doc], path: Path) -> None:
    box = mailbox.mbox(path)
    for doc in docs:
        box.add(mail(doc, attach=True))
    box.flush()
    box.close()


def write_csv(docs: list[Doc], path: Path) -> None:
    import csv

    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["document", "section", "paragraph"])
        for doc in docs:
            for s in doc.sections:
                writer.writerows([doc.name, s.title, p] for p in s.paragraphs)


def config_tree(docs: list[Doc]) -> dict:
    return {
        re.sub(r"\W+", "_", d.name): {
            re.sub(r"\W+", "_", s.title)[:40] or "section": {"text": s.paragraphs, "code": s.code}
            for s in d.sections
        }
        for d in docs
    }


def write_json(docs: list[Doc], path: Path) -> None:
    path.write_text(json.dumps(config_tree(docs), indent=2), encoding="utf-8")


def write_yaml(docs: list[Doc], path: Path) -> None:
    path.write_text(yaml.safe_dump(config_tree(docs), sort_keys=False), encoding="utf-8")


def write_toml(docs: list[Doc], path: Path) -> None:
    out = []
    for name, sections in config_tree(docs).items():
        for title, body in sections.items():
            out.append(f"[{name}.{title}]")
            out.append(f"text = {json.dumps(body['text'])}")
            out.append(f"code = {json.dumps(body['code'])}\n")
    path.write_text("\n".join(out), encoding="utf-8")


WRITERS = {
    "markdown": (write_markdown, "md"), "org": (write_org, "org"),
    "asciidoc": (write_asciidoc, "adoc"), "latex": (write_latex, "tex"),
    "rtf": (write_rtf, "rtf"), "epub": (write_epub, "epub"), "odt": (write_odt, "odt"),
    "ods": (write_ods, "ods"), "odp": (write_odp, "odp"), "ipynb": (write_notebook, "ipynb"),
    "eml": (write_eml, "eml"), "mbox": (write_mbox, "mbox"), "csv": (write_csv, "csv"),
    "json": (write_json, "json"), "yaml": (write_yaml, "yaml"), "toml": (write_toml, "toml"),
}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("corpus", type=Path, help="a folder of Markdown files")
    parser.add_argument("--docs", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=5)
    args = harness.parse(parser, argv)
    docs = read_corpus(args.corpus, args.docs)
    settings = ChunkSettings()
    rows = []
    with tempfile.TemporaryDirectory(prefix="kb-bench-formats-") as folder:
        for name, (writer, ext) in WRITERS.items():
            path = Path(folder) / f"corpus.{ext}"
            writer(docs, path)
            times, document = [], None
            for _ in range(args.repeat):
                start = time.perf_counter()
                document = parse_file(path, settings)
                times.append(time.perf_counter() - start)
            assert document is not None
            rows.append((name, path.stat().st_size, len(document.chunks), statistics.median(times)))
    base_seconds = next(r[3] for r in rows if r[0] == "markdown")
    print(f"{len(docs)} documents of {args.corpus}, median of {args.repeat} parses each;")
    print("every file holds the same text, so the last column is the cost of the format\n")
    print("| format | library | file KB | chunks | parse ms | ms per MB of file | vs Markdown |")
    print("|---|---|---|---|---|---|---|")
    for name, size, chunks, seconds in rows:
        print(
            f"| {name} | {LIBRARIES[name]} | {size / 1e3:,.0f} | {chunks:,} | "
            f"{seconds * 1e3:,.1f} | {seconds * 1e3 / (size / 1e6):,.0f} | "
            f"{seconds / base_seconds:.2f}x |"
        )
