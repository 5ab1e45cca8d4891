"""Reading order of PDF pages: kb's layout against other extractors, scored against a reference.

    python -m bench pdf_order PAGES.tsv [--root DIR] [--reference pdftotext] [--tools kb,pdfminer]
    python -m bench pdf_order --scan DIR_OR_PDF... [--worst 40]  # where kb and poppler differ

PAGES.tsv: one `path<TAB>page` a line (1-based page; path relative to --root). A page's score is
the share of the reference's word 6-grams that the tool's text of that page holds (order-
sensitive: text read across two columns breaks most 6-grams, a different line wrap breaks none).
The reference is poppler's `pdftotext` (reading-order mode) unless a `<pdf>.p<N>.txt` file next
to PAGES.tsv's folder holds a hand-checked text. pdfminer.six, pdfplumber, docling-parse and
PyMuPDF are scored when they import (install them in a scratch environment: they are not kb's
dependencies; PyMuPDF is AGPL and a reference only).
"""

from __future__ import annotations

import argparse
import functools
import inspect
import re
import shutil
import statistics
import subprocess
import sys
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path

N = 6
MIN_GRAMS = 20  # pages with fewer reference 6-grams say little about order


def words(text: str) -> list[str]:
    text = unicodedata.normalize("NFKC", text).lower()
    return re.findall(r"[^\W_]+", text)


def grams(text: str, n: int = N) -> set[tuple[str, ...]]:
    """Word n-grams, less those of numbers alone: a draft's line numbers or a table's figures
    say nothing about the order of the text."""
    w = words(text)
    out = {tuple(w[i : i + n]) for i in range(len(w) - n + 1)}
    return {g for g in out if not all(x.isdigit() for x in g)}


LINE_END_HYPHEN_RE = re.compile(r"(\w)[-\u00ad\u2010]\n\s*(\w)")


def join_hyphens(text: str) -> str:
    """Words hyphenated at a line end joined ('ac-\ncepts' -> 'accepts'), as poppler writes
    them and as kb's chunks (structure.py) join them after layout."""
    return LINE_END_HYPHEN_RE.sub(r"\1\2", text)


def order_score(
    reference: str, text: str, common: bool = False, dehyphenate: bool = False
) -> float | None:
    """Share of the reference's word 6-grams found in `text`; None when the reference is short.

    With `dehyphenate`, both texts first join words hyphenated at a line end (a reading that
    keeps the hyphen a line ends with is not out of order).

    With `common`, both texts keep only the words the other one has: a word one tool spells
    differently (a ligature it cannot map, a hyphen) then breaks no 6-gram, and what is left
    measures the order alone."""
    if dehyphenate:
        reference, text = join_hyphens(reference), join_hyphens(text)
    if common:
        ref_words, text_words = words(reference), words(text)
        ref_vocab, text_vocab = set(ref_words), set(text_words)
        reference = " ".join(w for w in ref_words if w in text_vocab)
        text = " ".join(w for w in text_words if w in ref_vocab)
    ref = grams(reference)
    if len(ref) < MIN_GRAMS:
        return None
    return len(ref & grams(text)) / len(ref)


# --------------------------------------------------------------------------- extractors


def kb_text(path: Path, page: int) -> str:
    """kb's layout of one page: its lines in reading order (what chunking reads)."""
    import pypdfium2 as pdfium

    from kb_search.formats.pdf.layout import page_fragments

    try:
        from kb_search.formats.pdf.reading_order import layout
    except ImportError:  # kb before the reading order had its own module
        from kb_search.formats.pdf.layout import layout

    try:
        from kb_search.formats.pdf.furniture import drop_line_numbers
    except ImportError:  # kb before line numbers were dropped

        def drop_line_numbers(frags: list) -> list:
            return frags

    doc = pdfium.PdfDocument(str(path))
    try:
        p = doc[page - 1]
        width, height = p.get_size()
        # kb before pages were read as shown took the page height
        takes_height = "height" in inspect.signature(page_fragments).parameters
        frags = page_fragments(p, height) if takes_height else page_fragments(p)
        lines = layout(drop_line_numbers(frags), page, width)
        return "\n".join(ln.text for ln in lines)
    finally:
        doc.close()


@functools.lru_cache(maxsize=4)
def _kb_chunks(path: Path) -> list:
    from kb_search.formats.pdf.parse import parse_pdf
    from kb_search.parsed import ChunkSettings

    return parse_pdf(path, ChunkSettings(), ocr="never").chunks


def _covering(path: Path, page: int) -> list:
    return [c for c in _kb_chunks(path) if (c.page_start or 0) <= page <= (c.page_end or 0)]


def kb_chunks_text(path: Path, page: int) -> str:
    """The text of the chunks that cover the page, after furniture, headings and joining
    hyphenated words (a chunk that runs over from the page before or on to the next brings
    that text too; a chunk that starts inside a section repeats its heading line)."""
    return "\n".join(c.text for c in _covering(path, page))


def kb_get_text(path: Path, page: int) -> str:
    """What `kb get FILE#page=N` prints: the same chunks joined as `kb get` joins them, each
    heading line once."""
    from kb_search.reading import joined

    return joined(_covering(path, page))


def pdftotext_text(path: Path, page: int) -> str:
    out = subprocess.run(
        ["pdftotext", "-q", "-f", str(page), "-l", str(page), str(path), "-"],
        capture_output=True,
        timeout=120,
        check=False,
    )
    return out.stdout.decode("utf-8", "replace")


def pdfminer_text(path: Path, page: int) -> str:
    from pdfminer.high_level import extract_text

    return extract_text(str(path), page_numbers=[page - 1])


def pdfplumber_text(path: Path, page: int) -> str:
    import pdfplumber

    with pdfplumber.open(str(path), pages=[page]) as pdf:
        return pdf.pages[0].extract_text() or ""


def docling_parse_text(path: Path, page: int) -> str:
    """docling-parse's text lines in the order it gives them (its reading order needs docling's
    layout model on top; this is the parser alone)."""
    from docling_parse.pdf_parser import DoclingPdfParser

    doc = DoclingPdfParser(loglevel="fatal").load(path_or_stream=str(path))
    try:
        return "\n".join(c.text for c in doc.get_page(page).textline_cells)
    finally:
        doc.unload()


def pymupdf_text(path: Path, page: int) -> str:
    import pymupdf

    with pymupdf.open(str(path)) as doc:
        return doc[page - 1].get_text(sort=False)


TOOLS: dict[str, Callable[[Path, int], str]] = {
    "kb": kb_text,
    "kb-chunks": kb_chunks_text,
    "kb-get": kb_get_text,
    "pdftotext": pdftotext_text,
    "pdfminer": pdfminer_text,
    "pdfplumber": pdfplumber_text,
    "docling-parse": docling_parse_text,
    "pymupdf": pymupdf_text,
}
IMPORTS = {
    "pdfminer": "pdfminer",
    "pdfplumber": "pdfplumber",
    "docling-parse": "docling_parse",
    "pymupdf": "pymupdf",
}


def available(name: str) -> bool:
    if name == "pdftotext":
        return shutil.which("pdftotext") is not None
    module = IMPORTS.get(name)
    if module is None:
        return True
    try:
        __import__(module)
    except ImportError:
        return False
    return True


# --------------------------------------------------------------------------- runs


def read_pages(tsv: Path, root: Path) -> list[tuple[Path, int]]:
    out = []
    for line in tsv.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            rel, page = line.split("\t")[:2]
            out.append((root / rel, int(page)))
    return out


def reference_text(path: Path, page: int, refs: Path | None, tool: str) -> str:
    if refs is not None:
        hand = refs / f"{path.stem}.p{page}.txt"
        if hand.is_file():
            return hand.read_text(encoding="utf-8")
    return TOOLS[tool](path, page)


def compare(
    pages: list[tuple[Path, int]],
    tools: list[str],
    reference: str,
    refs: Path | None,
    common: bool = False,
    dehyphenate: bool = False,
) -> None:
    scores: dict[str, list[float]] = {t: [] for t in tools}
    seconds: dict[str, float] = dict.fromkeys(tools, 0.0)
    for path, page in pages:
        ref = reference_text(path, page, refs, reference)
        row = []
        for tool in tools:
            t0 = time.perf_counter()
            try:
                text = TOOLS[tool](path, page)
            except Exception as exc:  # a tool that fails on a page scores 0 there
                text = ""
                print(f"  {tool} failed on {path.name} p{page}: {exc}", file=sys.stderr)
            seconds[tool] += time.perf_counter() - t0
            score = order_score(ref, text, common, dehyphenate)
            if score is not None:
                scores[tool].append(score)
            row.append("-" if score is None else f"{score:.2f}")
        print(f"{path.name[:40]:40} p{page:<4}", *(f"{s:>6}" for s in row))
    print(f"\n{'tool':14} {'pages':>5} {'mean':>6} {'min':>6} {'>=0.8':>6} {'s/page':>7}")
    for tool in tools:
        s = scores[tool]
        if not s:
            continue
        good = sum(v >= 0.8 for v in s) / len(s)
        per_page = seconds[tool] / max(len(pages), 1)
        print(
            f"{tool:14} {len(s):5} {statistics.mean(s):6.3f} {min(s):6.2f} {good:6.2f}"
            f" {per_page:7.3f}"
        )


def scan(paths: list[Path], worst: int, max_pages: int) -> None:
    """Pages where kb's order and poppler's differ most: candidates for a mixed-layout set."""
    import pypdfium2 as pdfium

    found = []
    pdfs = [p for r in paths for p in ([r] if r.is_file() else sorted(r.rglob("*.pdf")))]
    for path in pdfs:
        try:
            count = len(pdfium.PdfDocument(str(path)))
        except Exception:
            continue
        for page in range(1, min(count, max_pages) + 1):
            score = order_score(pdftotext_text(path, page), kb_text(path, page))
            if score is not None:
                found.append((score, str(path), page))
    found.sort()
    for score, path, page in found[:worst]:
        print(f"{score:.2f}\t{path}\t{page}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench pdf_order", description=__doc__)
    ap.add_argument("pages", nargs="*", type=Path)
    ap.add_argument("--root", type=Path, default=Path("/"))
    ap.add_argument("--reference", default="pdftotext", choices=sorted(TOOLS))
    ap.add_argument("--refs", type=Path, help="folder of hand-checked <pdf>.p<N>.txt references")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument(
        "--common-words",
        action="store_true",
        help="score the order of the words both texts hold (ligatures, hyphens aside)",
    )
    ap.add_argument(
        "--dehyphenate",
        action="store_true",
        help="join words hyphenated at line ends in both texts before scoring",
    )
    ap.add_argument("--scan", action="store_true")
    ap.add_argument("--worst", type=int, default=40)
    ap.add_argument("--max-pages", type=int, default=12)
    args = ap.parse_args(argv)
    if args.scan:
        scan(args.pages, args.worst, args.max_pages)
        return
    tools = [t for t in args.tools.split(",") if t in TOOLS and available(t)]
    pages = [p for tsv in args.pages for p in read_pages(tsv, args.root)]
    compare(pages, tools, args.reference, args.refs, args.common_words, args.dehyphenate)


if __name__ == "__main__":
    main()
