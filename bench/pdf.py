"""Benchmark the PDF ingester on a folder of PDFs, against pdftotext as a baseline.

    python -m bench pdf /work/shared/data/pdfs [--ocr auto] [--timeout 120]

Each PDF is parsed in its own worker subprocess with a time limit, so a hang or a crash in one
file is measured as a failure instead of stopping the run. A MANIFEST.tsv in the folder (columns
file, status, ...) is used to compare outcomes with the expected status of each file.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import resource
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from bench import harness

SMALL_WORDS = 8  # a chunk under 8 words is too small to answer anything
EMAIL_RE = re.compile(r"\S+@\S+\.\w+|\}@")
AFFILIATION_RE = re.compile(
    r"\b(university|universit[éaà]|institute|department|dept\.|laborator(y|ies)|college"
    r"|school of|inc\.|ltd\.|gmbh|corporation)\b",
    re.I,
)
DATE_RE = re.compile(
    r"^\W*(\d{1,2}\s+)?(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2},?\s+)?"
    r"\d{4}\W*$|^\W*\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}\W*$",
    re.I,
)
# A title cut at its line break: it ends on a colon or on a word that leads into more.
UNFINISHED_RE = re.compile(r"(:|\s(a|an|and|for|in|of|on|or|the|to|with|von|und|de|du))\s*$", re.I)
MOJIBAKE_RE = re.compile("[\u00c2\u00c3][\u0080-\u00bf\u2018-\u2022\u20ac\u0152\u0153]")
TEX_SOURCE_RE = re.compile(r"\[-?\d*\.?\d+\s?(pt|ex|em|mm|cm)\]|\\[A-Za-z]{2,}")
FOOTNOTE_END_RE = re.compile(r"[*\u2217\u2020\u2021\u21e4]\s*$")


def title_flag(title: str) -> str:
    """Why a title looks wrong (e-mail, affiliation, date, no words, too long, cut at a colon
    or an open word, mojibake, TeX source, a footnote mark), or ''."""
    # an ideograph is a word's worth of letters ('声明', a statement)
    letters = sum(3 if "\u4e00" <= ch <= "\u9fff" else ch.isalpha() for ch in title)
    checks = (
        ("e-mail", EMAIL_RE.search(title)),
        ("affiliation", AFFILIATION_RE.search(title)),
        ("date", DATE_RE.match(title)),
        ("no words", letters < 3),
        ("too long", len(title.split()) > 30),
        ("cut short", UNFINISHED_RE.search(title)),
        ("mojibake", MOJIBAKE_RE.search(title)),
        ("TeX source", TEX_SOURCE_RE.search(title)),
        ("footnote mark", FOOTNOTE_END_RE.search(title)),
    )
    return next((why for why, hit in checks if hit), "")


def worker(path: str, ocr: str) -> None:
    """Parse one file and print one JSON line describing the outcome."""
    from kb_search.formats.pdf.parse import parse_pdf
    from kb_search.parsed import ChunkSettings, IngestError

    started = time.perf_counter()
    out: dict = {"file": path}
    try:
        doc = parse_pdf(Path(path), ChunkSettings(), ocr=ocr)
    except IngestError as exc:
        out["error"] = str(exc)
    else:
        covered = {p for c in doc.chunks for p in range(c.page_start, c.page_end + 1)}
        ocr_pages = doc.metadata.get("ocr_pages", [])
        out.update(
            pages=doc.page_count,
            chunks=len(doc.chunks),
            title=doc.title,
            ocr_pages=len(ocr_pages),
            ocr_searchable=sum(p in covered for p in ocr_pages),
            ocr_skipped=len(doc.metadata.get("ocr_skipped_pages", [])),
            small_chunks=sum(len(c.text.split()) < SMALL_WORDS for c in doc.chunks),
            title_flag=title_flag(doc.title),
        )
    out["seconds"] = time.perf_counter() - started
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def run_one(path: Path, ocr: str, timeout: float) -> dict:
    cmd = harness.again("pdf", "--worker", str(path), "--ocr", ocr)
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, env=harness.child_env()
        )
    except subprocess.TimeoutExpired:
        return {"file": str(path), "error": f"timeout after {timeout:.0f}s", "seconds": timeout}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"file": str(path), "error": f"crash: {last[:120]}", "seconds": 0.0}
    return json.loads(lines[-1])


def pdftotext(path: Path, timeout: float) -> tuple[bool, float, int]:
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            ["pdftotext", "-q", "-enc", "UTF-8", str(path), "-"],
            capture_output=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return False, timeout, 0
    words = len(proc.stdout.split())
    return proc.returncode == 0, time.perf_counter() - started, words


def reason(error: str) -> str:
    """Group error messages into a few reasons for the table."""
    for key in ("password", "not a PDF", "empty file", "no pages", "broken", "no text", "timeout"):
        if key in error:
            return key
    return error.split(":")[0][:40]


def read_manifest(folder: Path) -> dict[str, str]:
    manifest = folder / "MANIFEST.tsv"
    if not manifest.exists():
        return {}
    with manifest.open(newline="") as fh:
        return {row["file"]: row["status"] for row in csv.DictReader(fh, delimiter="\t")}


def summarize(results: list[dict], wall: float) -> None:
    ok = [r for r in results if "error" not in r]
    failed = Counter(reason(r["error"]) for r in results if "error" in r)
    pages = sum(r["pages"] for r in ok)
    parse_s = sum(r["seconds"] for r in ok)
    no_text = sum(r["ocr_pages"] + r["ocr_skipped"] for r in ok)
    searchable = sum(r["ocr_searchable"] for r in ok)
    print("\n== kb_search.formats.pdf ==")
    print(f"files            {len(results)}  ok {len(ok)}  failed {len(results) - len(ok)}")
    for why, n in failed.most_common():
        print(f"  failed: {why:<22} {n}")
    print(f"pages (ok files) {pages}")
    print(f"parse time       {parse_s:.1f}s in workers, {wall:.1f}s wall incl. process start")
    print(f"pages/s          {pages / parse_s:.1f}" if parse_s else "pages/s          -")
    text_only = [r for r in ok if not r["ocr_pages"]]
    t_pages, t_s = sum(r["pages"] for r in text_only), sum(r["seconds"] for r in text_only)
    if t_s:
        print(f"  text layer only {t_pages} pages in {t_s:.1f}s = {t_pages / t_s:.1f} pages/s")
    print(f"chunks           {sum(r['chunks'] for r in ok)}")
    small = sum(r.get("small_chunks", 0) for r in ok)
    print(f"chunks < {SMALL_WORDS} words {small}")
    flagged = [r for r in ok if r.get("title_flag")]
    by_why = Counter(r["title_flag"] for r in flagged)
    print(f"titles flagged   {len(flagged)} {dict(by_why)}")
    for r in flagged[:8]:
        print(f"  {r['title_flag']:<12} {r['title'][:70]!r}  ({Path(r['file']).name[:40]})")
    print(f"peak RSS         {max((r.get('rss_mb', 0) for r in results), default=0):.0f} MB")
    share = f"{searchable}/{no_text} = {searchable / no_text:.0%}" if no_text else "no such pages"
    print(f"no-text pages made searchable by OCR: {share}")
    ocr_s = sum(r["seconds"] for r in ok if r["ocr_pages"])
    ocr_pages = sum(r["ocr_pages"] for r in ok)
    if ocr_pages:
        print(
            f"OCR files: {ocr_pages} OCR pages, {ocr_s / ocr_pages:.2f}s per OCR page (incl. load)"
        )


def summarize_baseline(base: list[tuple[bool, float, int]], results: list[dict]) -> None:
    good = sum(ok for ok, _t, _w in base)
    # pages/s over the files both tools read, pages as counted by pdfium
    both = [
        (t, r["pages"]) for (ok, t, _w), r in zip(base, results, strict=True) if ok and "pages" in r
    ]
    total = sum(t for t, _p in both)
    print("\n== pdftotext (poppler) baseline ==")
    print(f"files ok         {good}/{len(base)}")
    print(f"time             {sum(t for _ok, t, _w in base):.1f}s (a process per file)")
    if total:
        print(f"pages/s          {sum(p for _t, p in both) / total:.1f} (files both read)")
    print(f"words            {sum(w for _ok, _t, w in base)}")


def compare_manifest(results: list[dict], folder: Path) -> None:
    expected = read_manifest(folder)
    if not expected:
        return
    table: Counter[tuple[str, str]] = Counter()
    for r in results:
        key = str(Path(r["file"]).relative_to(folder))
        outcome = "ok" if "error" not in r else reason(r["error"])
        table[(expected.get(key, "(not in manifest)"), outcome)] += 1
    print("\n== outcome by MANIFEST status ==")
    for (status, outcome), n in sorted(table.items()):
        print(f"  {status:<36} -> {outcome:<14} {n}")


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("folder", type=Path, nargs="?")
    parser.add_argument("--ocr", default="auto", choices=["auto", "always", "never"])
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path, help="write per-file results here")
    parser.add_argument("--no-baseline", action="store_true", help="skip pdftotext")
    parser.add_argument(
        "--files-from", type=Path, help="parse only the files listed here (one path a line)"
    )
    parser.add_argument(
        "--rest-from",
        type=Path,
        help="with --files-from: the other files' results from this --json of an earlier run "
        "(e.g. re-run with OCR only the files that need it)",
    )
    args = harness.parse(parser, argv)
    if args.worker:
        worker(args.worker, args.ocr)
        return
    if args.folder is None:
        parser.error("folder is required")
    files = sorted(args.folder.rglob("*.pdf"))
    if args.files_from:
        wanted = set(args.files_from.read_text().split("\n"))
        files = [f for f in files if str(f) in wanted]
    started = time.perf_counter()
    results = []
    for i, path in enumerate(files, 1):
        results.append(run_one(path, args.ocr, args.timeout))
        print(f"\r{i}/{len(files)} {path.name[:50]:<50}", end="", file=sys.stderr, flush=True)
    wall = time.perf_counter() - started
    print(file=sys.stderr)
    if args.rest_from:
        done = {r["file"] for r in results}
        results += [r for r in json.loads(args.rest_from.read_text()) if r["file"] not in done]
        results.sort(key=lambda r: r["file"])
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    summarize(results, wall)
    compare_manifest(results, args.folder)
    if args.no_baseline:
        return
    if shutil.which("pdftotext"):
        summarize_baseline([pdftotext(p, args.timeout) for p in files], results)
    else:
        print("\npdftotext not found (apt-get install -y poppler-utils): no baseline")
