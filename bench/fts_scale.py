"""The lexical side at scale: up to 1M generated chunks in kb's own schema, searched by kb.

    python -m bench fts_scale --sizes 100k,300k,1m \\
        --corpus /work/shared/data/scifact/corpus.jsonl --corpus /work/shared/data/md_argocd_docs \\
        --corpus /work/shared/data/code_scrapy_py --corpus /work/shared/data/medline/corpus.jsonl

Text: the words of the given real corpora in their order form one token stream; a generated
chunk is a run of 6-20 word windows cut from random places of that stream (~120 words, about
kb's chunk size). Word frequencies stay those of real text (Zipfian), real phrases survive
inside windows, and no chunk is a copy of another. Ten chunks make a document (title and
heading are short windows too; paths are synthetic).

The database is created by kb (`db.connect(create=True)`: the real migrations, FTS5 with
`porter unicode61 remove_diacritics 2`, external content) and filled in the way kb's store
does it (documents, chunks, then the FTS rows selected from the `fts_source` view), but in
batches of 1,000 documents per transaction, because a per-document commit at this size would
measure SQLite's commit overhead, not FTS5; that overhead is measured separately on 2,000
documents. Queries go through `kb_search.search.search` in lexical mode (what `kb search
--mode lexical` runs, snippets included), warm page cache, one at a time.

Times are CPU seconds of this process, the wall-clock median next to them (a shared machine
inflates wall time, not CPU time; SQLite here is single-threaded, so on an idle machine wall
~ CPU plus I/O waits). Checkpoints at each size: ingest rate, file size, p50/p95 per query
shape; at the largest size also after FTS5 'optimize' (one b-tree per term instead of many
segments).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench import harness
from kb_search.search import SearchOptions, search
from kb_search.search.legs import BM25_WEIGHTS
from kb_search.search.query import STOPWORDS, parse_query
from kb_search.store import db

WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{1,30}")
CHUNKS_PER_DOC = 10
SHAPES = ["common OR", "mixed", "rare term", "phrase", "prefix"]


def corpus_words(paths: list[Path]) -> list[str]:
    words: list[str] = []
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            text = file.read_text(errors="replace")
            if file.suffix == ".jsonl":
                text = "\n".join(
                    (d.get("title", "") + " " + d.get("text", ""))
                    for d in map(json.loads, filter(None, text.splitlines()))
                )
            words.extend(WORD.findall(text))
    return words


class TextMaker:
    def __init__(self, words: list[str], seed: int = 5) -> None:
        vocab, self.stream = np.unique(np.array(words), return_inverse=True)
        self.vocab = vocab.tolist()
        self.rng = np.random.default_rng(seed)

    def window_text(self, n_words: int) -> str:
        start = int(self.rng.integers(0, len(self.stream) - n_words))
        return " ".join(self.vocab[i] for i in self.stream[start : start + n_words])

    def chunk(self) -> str:
        parts, total = [], 0
        while total < 120:
            size = int(self.rng.integers(6, 21))
            parts.append(self.window_text(size))
            total += size
        return " ".join(parts)


def fill(conn: db.Connection, maker: TextMaker, first_doc: int, docs: int, per_commit: int) -> None:
    """Documents first_doc .. first_doc+docs-1 with CHUNKS_PER_DOC chunks each."""
    now = time.time()
    for start in range(first_doc, first_doc + docs, per_commit):
        stop = min(first_doc + docs, start + per_commit)
        doc_rows, chunk_rows = [], []
        for d in range(start, stop):
            rel = f"gen/{d // 1000:04d}/{d}.md"
            doc_rows.append(
                (
                    d,
                    f"/kb/{rel}",
                    rel,
                    maker.window_text(5),
                    "markdown",
                    f"{d:032x}",
                    now,
                    CHUNKS_PER_DOC,
                )
            )
            for c in range(CHUNKS_PER_DOC):
                text = maker.chunk()
                chunk_rows.append(
                    (
                        d * CHUNKS_PER_DOC + c,
                        d,
                        c,
                        text,
                        maker.window_text(3),
                        len(text.split()),
                        f"{d:024x}{c:08x}",
                    )
                )
        with db.transaction(conn):
            conn.executemany(
                "INSERT INTO documents(id, path, rel_path, title, doc_type, content_hash,"
                " indexed_at, chunk_count) VALUES (?,?,?,?,?,?,?,?)",
                doc_rows,
            )
            conn.executemany(
                "INSERT INTO chunks(id, document_id, chunk_index, text, heading, token_count,"
                " content_hash) VALUES (?,?,?,?,?,?,?)",
                chunk_rows,
            )
            conn.execute(
                "INSERT INTO chunks_fts(rowid, title, path, heading, body)"
                " SELECT id, title, path, heading, body FROM fts_source"
                " WHERE document_id BETWEEN ? AND ?",
                (start, stop - 1),
            )


def make_queries(maker: TextMaker, per_shape: int) -> dict[str, list[str]]:
    counts = np.bincount(maker.stream)
    order = np.argsort(-counts)
    words = [maker.vocab[i] for i in order]
    content = [w for w in words if w.lower() not in STOPWORDS and len(w) > 3]
    lower = {w.lower() for w in content}
    common = content[20:300]
    middle = content[2_000:10_000]
    rare = [maker.vocab[i] for i in order if counts[i] == 3 and maker.vocab[i].lower() in lower]
    rng = np.random.default_rng(9)

    def pick(pool: list[str], n: int) -> list[str]:
        return [pool[i] for i in rng.choice(len(pool), n, replace=False)]

    phrases = []
    while len(phrases) < per_shape:
        start = int(rng.integers(0, len(maker.stream) - 2))
        a, b = (maker.vocab[i] for i in maker.stream[start : start + 2])
        if a.lower() not in STOPWORDS and b.lower() not in STOPWORDS and len(a) > 3 < len(b):
            phrases.append(f'"{a} {b}"')
    return {
        "common OR": [" ".join(pick(common, int(rng.integers(2, 4)))) for _ in range(per_shape)],
        "mixed": [
            " ".join([*pick(common, 1), *pick(middle, 1), *pick(rare, 1)]) for _ in range(per_shape)
        ],
        "rare term": pick(rare, per_shape),
        "phrase": phrases,
        "prefix": [w[:4] + "*" for w in pick(middle, per_shape)],
    }


def file_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 2**20


def kb_search(conn: db.Connection, text: str) -> int:
    return search(conn, text, SearchOptions(mode="lexical", top=10)).total_matches


def raw_top30(conn: db.Connection, text: str) -> int:
    """The same FTS5 expression and weights, top 30 only: no match count, no join, no snippets
    (what a leaner lexical leg would cost)."""
    expr = parse_query(text).fts_expression()
    weights = ",".join(str(w) for w in BM25_WEIGHTS)
    rows = conn.execute(
        f"SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts,"
        f" {weights}) LIMIT 30",
        (expr,),
    ).fetchall()
    return len(rows)


def time_queries(
    conn: db.Connection, queries: dict[str, list[str]], run: Callable[[db.Connection, str], int]
) -> dict[str, dict]:
    out = {}
    for shape, texts in queries.items():
        run(conn, texts[0])  # warm-up
        millis, cpu, matches = [], [], []
        for text in texts:
            t0, c0 = time.perf_counter(), time.process_time()
            matches.append(run(conn, text))
            millis.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
        out[shape] = {
            "p50": float(np.percentile(cpu, 50)),
            "p95": float(np.percentile(cpu, 95)),
            "wall_p50": float(np.percentile(millis, 50)),
            "matches": float(np.median(matches)),
        }
    return out


def measure_row(
    conn: db.Connection,
    queries: dict[str, list[str]],
    size: int,
    label: str,
    rate: float | None,
    mb: float | None,
    run: Callable[[db.Connection, str], int],
) -> dict:
    shapes = time_queries(conn, queries, run)
    return {"size": size, "label": label, "rate": rate, "mb": mb, "shapes": shapes}


def per_document_rate(maker: TextMaker, folder: Path, docs: int = 2_000) -> float:
    """Chunks/s when every document is its own transaction, as `kb add` writes."""
    path = folder / "per-doc.db"
    for p in folder.glob("per-doc.db*"):
        p.unlink()
    conn = db.connect(path, create=True)
    c0 = time.process_time()
    fill(conn, maker, 0, docs, per_commit=1)
    rate = docs * CHUNKS_PER_DOC / (time.process_time() - c0)
    conn.close()
    return rate


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--sizes", default="100k,300k,1m", help="chunk counts")
    parser.add_argument("--corpus", type=Path, action="append", required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/h-ann/fts"))
    parser.add_argument("--per-shape", type=int, default=30)
    args = harness.parse(parser, argv)
    sizes = sorted(
        int(float(s.lower().rstrip("km")) * {"k": 1_000, "m": 1_000_000}.get(s.lower()[-1], 1))
        for s in args.sizes.split(",")
    )
    args.work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    words = corpus_words(args.corpus)
    maker = TextMaker(words)
    print(
        f"stream: {len(words):,} words, vocabulary {len(maker.vocab):,} "
        f"({time.perf_counter() - t0:.0f} s)",
        flush=True,
    )
    queries = make_queries(maker, args.per_shape)
    per_doc = per_document_rate(maker, args.work)
    path = args.work / "fts.db"
    for p in args.work.glob("fts.db*"):
        p.unlink()
    conn = db.connect(path, create=True)
    rows = []
    done_docs = 0
    for size in sizes:
        docs = size // CHUNKS_PER_DOC - done_docs
        t0, c0 = time.perf_counter(), time.process_time()
        fill(conn, maker, done_docs, docs, per_commit=1_000)
        seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - c0
        done_docs += docs
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        rate = docs * CHUNKS_PER_DOC / cpu_seconds
        rows.append(measure_row(conn, queries, size, "kb search", rate, file_mb(path), kb_search))
        rows.append(measure_row(conn, queries, size, "raw FTS5 top 30", None, None, raw_top30))
        print(f"  {size:,}: {seconds:.0f} s wall, {cpu_seconds:.0f} s CPU", flush=True)
    c0 = time.process_time()
    with db.transaction(conn):
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('optimize')")
    optimize_s = time.process_time() - c0
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    label = f"after optimize ({optimize_s:.0f} s)"
    rows.append(
        measure_row(conn, queries, sizes[-1], f"kb search, {label}", None, file_mb(path), kb_search)
    )
    rows.append(
        measure_row(conn, queries, sizes[-1], f"raw FTS5 top 30, {label}", None, None, raw_top30)
    )
    fts_mb = conn.execute(
        "SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'chunks_fts%'"
    ).fetchone()[0]
    conn.close()

    print(
        "\nTimes are CPU time of this process (the machine is shared): query ms p50 / p95"
        " (wall p50); ingest chunks per CPU second; optimize in CPU seconds."
    )
    print(f"per-document transactions (as kb add writes): {per_doc:,.0f} chunks/s")
    print(f"FTS5 index pages at {sizes[-1]:,}: {fts_mb / 2**20:,.0f} MB of the file\n")
    print(
        "| chunks | query path | ingest chunks/s | DB MB | "
        + " | ".join(f"{s} p50/p95 ms" for s in SHAPES)
        + " |"
    )
    print("|---:|---|---:|---:|" + "---:|" * len(SHAPES))
    for r in rows:
        rate = f"{r['rate']:,.0f}" if r["rate"] else "-"
        size_mb = f"{r['mb']:,.0f}" if r["mb"] else "-"
        cells = " | ".join(
            f"{r['shapes'][s]['p50']:.1f} / {r['shapes'][s]['p95']:.1f}"
            f" ({r['shapes'][s]['wall_p50']:.0f})"
            for s in SHAPES
        )
        print(f"| {r['size']:,} | {r['label']} | {rate} | {size_mb} | {cells} |")
    print(
        "\nmedian matching chunks per query shape (kb's total_matches): "
        + ", ".join(f"{s}: {rows[-2]['shapes'][s]['matches']:,.0f}" for s in SHAPES)
    )
    print("\nexample queries: " + "; ".join(f"{s}: {queries[s][0]}" for s in SHAPES))
