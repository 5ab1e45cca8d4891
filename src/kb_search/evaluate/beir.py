"""`kb eval DATASET_DIR`: retrieval quality on a BEIR-layout dataset (corpus.jsonl,
queries.jsonl, qrels/test.tsv): nDCG@10, Recall@100, MRR@10 per mode. The corpus is indexed
once into its own DB under the data dir and reused."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb_search.errors import EvalError
from kb_search.evaluate.metrics import DEPTH, hit_at, mrr_at, ndcg_at, percentile, recall_at
from kb_search.formats.reader import scrub
from kb_search.ingest.batch_writer import BatchWriter
from kb_search.ingest.changes import TEXT_CHUNKER_VERSION
from kb_search.ingest.executor import VectorSource
from kb_search.parsed import ChunkSettings
from kb_search.search.legs import VectorLeg
from kb_search.search.pipeline import SearchOptions, search
from kb_search.store import db
from kb_search.store.documents import DocumentRecord, content_hash
from kb_search.store.inventory import counts as index_counts
from kb_search.store.inventory import document_paths

EMBED_EVERY = 256  # chunks written between two embedding rounds (a crash loses at most these)

Qrels = dict[str, dict[str, int]]
EVAL_FORMAT = 1  # bump when the way a corpus is indexed changes
OptionsFor = Callable[[str], SearchOptions]  # mode -> the options a query runs with


def default_options(mode: str) -> SearchOptions:
    return SearchOptions(mode=mode, top=DEPTH, snippets=False)


# ---- dataset -------------------------------------------------------------------------------


@dataclass
class Dataset:
    root: Path
    name: str
    queries: dict[str, str]
    qrels: Qrels

    @property
    def corpus_path(self) -> Path:
        return self.root / "corpus.jsonl"

    def corpus(self) -> Iterator[dict]:
        with self.corpus_path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    yield json.loads(line)


def load_dataset(root: Path, split: str = "test") -> Dataset:
    root = Path(root)
    needed = [root / "corpus.jsonl", root / "queries.jsonl", root / "qrels" / f"{split}.tsv"]
    missing = [str(p) for p in needed if not p.is_file()]
    if missing:
        raise EvalError(f"not a BEIR dataset directory, missing: {', '.join(missing)}")
    qrels: Qrels = {}
    with needed[2].open(encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3 or (n == 0 and not parts[2].lstrip("-").isdigit()):
                continue
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    queries = {}
    with needed[1].open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                item = json.loads(line)
                if str(item["_id"]) in qrels:
                    queries[str(item["_id"])] = item["text"]
    return Dataset(root=root, name=root.resolve().name, queries=queries, qrels=qrels)


# ---- index ---------------------------------------------------------------------------------


def index_fingerprint(dataset: Dataset, settings: ChunkSettings, model: str | None) -> str:
    # The corpus by its content, not its mtime: a copy of the same file (a fresh checkout, a
    # synced data folder) keeps its index (hashing SciFact's 8 MB: ~15 ms; rebuilding: minutes).
    key = json.dumps(
        [
            EVAL_FORMAT,
            TEXT_CHUNKER_VERSION,
            str(dataset.corpus_path.resolve()),
            _file_digest(dataset.corpus_path),
            settings.max_tokens,
            settings.min_tokens,
            model,
        ]
    )
    return content_hash(key)[:12]


def _file_digest(path: Path) -> str:
    import hashlib

    digest = hashlib.blake2b(digest_size=16)
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build_index(
    conn: db.Connection,
    dataset: Dataset,
    settings: ChunkSettings,
    vectors: VectorSource | None = None,
    count: Callable[[str], int] | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Index the corpus once; a crash or Ctrl-C resumes at the first missing document."""
    from kb_search.chunking.tokens import count_tokens
    from kb_search.formats.text import parse_text

    done = set(document_paths(conn))
    writer = BatchWriter(conn, vectors)
    added = pending = chunks = 0
    for item in dataset.corpus():
        key = f"beir:{item['_id']}"
        if key in done:
            continue
        title = (item.get("title") or "").strip()
        body = (item.get("text") or "").strip() or title or str(item["_id"])
        parsed = parse_text(
            scrub(body), Path(f"{item['_id']}.txt"), settings, count or count_tokens
        )
        parsed.title = scrub(title) or str(item["_id"])
        record = DocumentRecord(
            path=key, rel_path=str(item["_id"]), content_hash=content_hash(body)
        )
        writer.add(record, parsed)
        added += 1
        pending += 1
        chunks += len(parsed.chunks)
        if chunks >= EMBED_EVERY:
            _embed(conn, vectors, progress, pending)
            pending = chunks = 0
    _embed(conn, vectors, progress, pending)
    db.set_meta(conn, "eval_complete", "1")
    return added


def _embed(
    conn: db.Connection,
    vectors: VectorSource | None,
    progress: Callable[[int], None] | None,
    documents: int,
) -> None:
    """Embed what the documents written since the last call lack, then count them done."""
    if vectors is not None:
        vectors.fill(conn)
    if progress is not None and documents:
        progress(documents)


# ---- run -----------------------------------------------------------------------------------


@dataclass
class ModeScores:
    mode: str
    ndcg_at_10: float
    recall_at_100: float
    mrr_at_10: float
    p50_ms: float
    p95_ms: float
    queries: int
    legs: dict[str, int] = field(default_factory=dict)  # leg status -> count, for honesty
    hit_at_1: float = 0.0
    hit_at_5: float = 0.0

    def to_dict(self) -> dict:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def rank_documents(
    conn: db.Connection, query: str, options: SearchOptions, vector: VectorLeg | None
) -> tuple[list[str], dict[str, str]]:
    """Document ids (the corpus `_id`s) best first: each document scores as its best chunk."""
    response = search(conn, query, options, vector=vector)
    ranking: list[str] = []
    seen: set[str] = set()
    for result in response.results:
        doc = result.source.rel_path
        if doc not in seen:
            seen.add(doc)
            ranking.append(doc)
    return ranking, response.legs


def evaluate(
    conn: db.Connection,
    dataset: Dataset,
    modes: list[str],
    vector: VectorLeg | None = None,
    options_for: OptionsFor = default_options,
) -> list[ModeScores]:
    scores = []
    for mode in modes:
        options = options_for(mode)
        ndcg, recall, mrr, latencies = [], [], [], []
        hit1, hit5 = [], []
        legs: dict[str, int] = {}
        for qid, text in dataset.queries.items():
            relevant = dataset.qrels[qid]
            t0 = time.perf_counter()
            ranking, status = rank_documents(conn, text, options, vector)
            latencies.append((time.perf_counter() - t0) * 1000)
            for leg, state in status.items():
                key = f"{leg}:{state}"
                legs[key] = legs.get(key, 0) + 1
            ndcg.append(ndcg_at(ranking, relevant, 10))
            recall.append(recall_at(ranking, relevant, 100))
            mrr.append(mrr_at(ranking, relevant, 10))
            hit1.append(hit_at(ranking, relevant, 1))
            hit5.append(hit_at(ranking, relevant, 5))
        n = max(1, len(ndcg))
        scores.append(
            ModeScores(
                mode=mode,
                ndcg_at_10=sum(ndcg) / n,
                recall_at_100=sum(recall) / n,
                mrr_at_10=sum(mrr) / n,
                p50_ms=percentile(latencies, 50),
                p95_ms=percentile(latencies, 95),
                queries=len(ndcg),
                legs=legs,
                hit_at_1=sum(hit1) / n,
                hit_at_5=sum(hit5) / n,
            )
        )
    return scores


def corpus_size(dataset_dir: Path) -> int:
    """How many documents the dataset's corpus holds (0 when it has none)."""
    corpus = dataset_dir / "corpus.jsonl"
    if not corpus.is_file():
        return 0
    with corpus.open(encoding="utf-8") as lines:
        return sum(1 for _ in lines)


def run_eval(
    dataset_dir: Path,
    index_dir: Path,
    settings: ChunkSettings,
    modes: list[str],
    embedder: Any | None = None,
    progress: Callable[[int], None] | None = None,
    options_for: OptionsFor = default_options,
) -> dict:
    """Index the dataset (or reuse its index) and score each mode.

    With an embedder the index also holds its vectors, and the vector leg searches an
    in-memory matrix, as a long-running process would.
    """
    from kb_search.vectors.binding import bind
    from kb_search.vectors.index import VectorSearch
    from kb_search.vectors.matrix import MatrixIndex
    from kb_search.vectors.writer import ChunkEmbedder

    dataset = load_dataset(dataset_dir)
    index_dir.mkdir(parents=True, exist_ok=True)
    model = embedder.name if embedder is not None else None
    path = index_dir / f"{dataset.name}-{index_fingerprint(dataset, settings, model)}.db"
    conn = db.connect(path, create=True)
    t0 = time.perf_counter()
    reused = db.get_meta(conn, "eval_complete") == "1"
    table = bind(conn, embedder) if embedder is not None else None
    if not reused:
        vectors = ChunkEmbedder(embedder, table.name) if table is not None else None
        count = getattr(embedder, "count_tokens", None)
        build_index(conn, dataset, settings, vectors=vectors, count=count, progress=progress)
    index_seconds = time.perf_counter() - t0
    conn.close()
    conn = db.connect(path, readonly=True)
    vector = None
    if embedder is not None and table is not None:
        vector = VectorSearch(embedder, MatrixIndex.open(conn, table))
    scores = evaluate(conn, dataset, modes, vector, options_for)
    counts = index_counts(conn)
    conn.close()
    return {
        "dataset": str(dataset.root),
        "index": str(path),
        "reused": reused,
        "index_seconds": round(index_seconds, 3),
        "documents": counts[0],
        "chunks": counts[1],
        "queries": len(dataset.queries),
        "model": model,
        "scores": scores,
    }
