"""How clean the chunks of a corpus are, by parsing only (no embedding, no database).

    PYTHONPATH=src python -m bench clean_text /usr/share/doc/postgresql-doc-15/html \
        ../shared/data/md_argocd_docs ../shared/data/pdfs ../shared/data/code_scrapy_py

Per corpus: files parsed (and failed), chunks, nav/boilerplate chunks (a Prev/Up/Next/Home
row or a chunk that is more than half link lines), the share of characters that are markup
(link targets and link brackets, images, HTML tags, undecoded entities), chunks more than half
markup, chunks under 8 words (doctor's junk rule, code excluded as doctor does) and chunks
with no location (no line range and no page). Run it with PYTHONPATH at another checkout to
compare before and after; the chunk settings are kb's defaults, tokens are estimated.
`--dump FILE` writes a digest of each file's chunks, to show which files' chunks changed.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TextIO

from kb_search.ingest import detect_type
from kb_search.ingest.parse import parse_file

try:
    from kb_search.parsed import ChunkSettings, IngestError
except ImportError:  # a checkout from before the re-cut (the "before" column)
    from kb_search.models import ChunkSettings, IngestError  # type: ignore[no-redef]

# `[text](target)` or `![alt](src)`: everything but the text is markup.
_LINK = re.compile(r"!?\[([^\]\n]*)\]\(([^)\n]*)\)")
_REF_LINK = re.compile(r"\[([^\]\n]+)\]\[[^\]\n]*\]")
_AUTOLINK = re.compile(r"<(?:https?|mailto|ftp):[^>\s]+>")
_TAG = re.compile(r"</?[a-zA-Z][a-zA-Z0-9-]*(?:\s[^<>\n]*)?/?>")
_ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-fA-F]+|[a-zA-Z]{2,8});")
_NAV_WORDS = re.compile(r"\b(Prev|Next|Up|Home)\b")
_WORD = re.compile(r"\w+")
JUNK_MIN_WORDS = 8


@dataclass
class Tally:
    files: int = 0
    failed: int = 0
    chunks: int = 0
    nav: int = 0
    chars: int = 0
    markup_chars: int = 0
    mostly_markup: int = 0
    few_words: int = 0
    no_location: int = 0


def markup_chars(text: str) -> int:
    """Characters of link syntax, images, tags and undecoded entities in a chunk."""
    total = sum(len(m.group(0)) - len(m.group(1)) for m in _LINK.finditer(text))
    total += sum(len(m.group(0)) - len(m.group(1)) for m in _REF_LINK.finditer(text))
    total += sum(len(m.group(0)) for m in _AUTOLINK.finditer(text))
    total += sum(len(m.group(0)) for m in _TAG.finditer(_outside_fences(text)))
    total += sum(len(m.group(0)) for m in _ENTITY.finditer(text))
    return total


def _outside_fences(text: str) -> str:
    """Code shows tags as code (`<div>` in an HTML example is not markup of the page)."""
    kept, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced:
            kept.append(line)
    return "\n".join(kept)


def is_nav(text: str) -> bool:
    """A navigation row (two of Prev/Up/Next/Home on one short line) or a chunk whose
    non-blank lines are mostly bare links (a table of contents, a link list)."""
    lines = [line for line in text.split("\n") if line.strip()]
    for line in lines:
        if len(line) < 200 and len(set(_NAV_WORDS.findall(line))) >= 2 and "|" in line:
            return True
    linky = sum(1 for line in lines if _is_link_line(line))
    return bool(lines) and 2 * linky > len(lines) and len(lines) >= 3


def _is_link_line(line: str) -> bool:
    rest = _LINK.sub("", line)
    rest = re.sub(r"^[\s\-*+|#>\d.]*", "", rest).strip(" |")
    return bool(_LINK.search(line)) and len(rest) < 3


def few_words(text: str) -> bool:
    return next(islice(_WORD.finditer(text), JUNK_MIN_WORDS - 1, None), None) is None


def measure(
    folder: Path, settings: ChunkSettings, limit: int | None, dump: TextIO | None = None
) -> Tally:
    tally = Tally()
    paths = sorted(p for p in folder.rglob("*") if p.is_file() and detect_type(p) is not None)
    for path in paths[:limit]:
        tally.files += 1
        try:
            document = parse_file(path, settings)
        except IngestError:
            tally.failed += 1
            continue
        if dump is not None:
            dump.write(f"{path}\t{_signature(document.chunks)}\n")
        many = len(document.chunks) > 1
        for chunk in document.chunks:
            tally.chunks += 1
            markup = markup_chars(chunk.text)
            tally.chars += len(chunk.text)
            tally.markup_chars += markup
            tally.mostly_markup += 2 * markup > len(chunk.text)
            tally.nav += is_nav(chunk.text)
            tally.few_words += many and document.doc_type != "code" and few_words(chunk.text)
            anchor = getattr(chunk, "anchor", None)
            located = chunk.line_start is not None or chunk.page_start is not None or anchor
            tally.no_location += not located
    return tally


def _signature(chunks: list) -> str:
    """One digest of what search sees of a file: chunk texts, headings, lines and pages."""
    digest = hashlib.sha256()
    for c in chunks:
        fields = (c.text, c.heading, c.line_start, c.line_end, c.page_start, c.page_end)
        digest.update(repr(fields).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--limit", type=int, default=None, help="files per folder")
    parser.add_argument(
        "--dump", type=Path, help="write one line per file: path, digest of its chunks"
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    settings = ChunkSettings()
    header = (
        "corpus | files (failed) | chunks | nav | markup % | >half markup | <8 words | no location"
    )
    print(header)
    print("|".join(["---"] * 8))
    dump = args.dump.open("w", encoding="utf-8") if args.dump else None
    for folder in args.folders:
        t = measure(folder, settings, args.limit, dump)
        share = 100 * t.markup_chars / max(1, t.chars)
        print(
            f"{folder.name} | {t.files} ({t.failed}) | {t.chunks} | {t.nav} | {share:.2f} |"
            f" {t.mostly_markup} | {t.few_words} | {t.no_location}",
            flush=True,
        )
    if dump is not None:
        dump.close()


if __name__ == "__main__":
    main()
