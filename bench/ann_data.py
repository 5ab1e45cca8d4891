"""Data for the ANN benchmark: real seed embeddings, a generator around them, exact ground truth.

Seeds are real all-MiniLM-L6-v2 embeddings made by kb itself: the chunks of a `kb eval` index
(SciFact) and of any other kb database given (e.g. the Argo CD Markdown docs after `kb add`).
The generator then draws points around them (see `Generator`), so that the synthetic vectors keep
the clustered, anisotropic shape of real sentence embeddings instead of being uniform on the
sphere (on which every ANN library looks bad, and which no text corpus resembles).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DIM = 384


def normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.maximum(norms, 1e-12)).astype(np.float32)


def read_vectors(db_path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(rowids, matrix) of the vec0 table of a kb database, read with kb's own connection."""
    from kb_search.store import db

    conn = db.connect(db_path, readonly=True)
    problem = db.load_vec_extension(conn)
    if problem is not None:
        raise RuntimeError(f"sqlite-vec does not load: {problem}")
    (table,) = conn.execute("SELECT table_name FROM vector_tables").fetchone()
    rows = conn.execute(f"SELECT rowid, embedding FROM {table} ORDER BY rowid").fetchall()
    conn.close()
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    return ids, matrix.copy()


def embed_queries(kb_data_dir: Path, texts: list[str]) -> np.ndarray:
    """Queries embedded the way `kb search` embeds them (same model, same query prefix)."""
    from kb_search.config import load_config
    from kb_search.models.embedders import configured_model, load_embedder

    config = load_config(flags={"data_dir": str(kb_data_dir)})
    embedder = load_embedder(config, configured_model(config).name)
    return normalise(np.stack([embedder.embed_query(t) for t in texts]))


def prepare_seeds(
    kb_data_dir: Path, scifact_dir: Path, extra_dbs: list[Path], out_dir: Path
) -> None:
    """Write seeds.npy (all real passage vectors) and the SciFact sanity-check set."""
    evals = sorted((kb_data_dir / "eval").glob("scifact-*.db"))
    if not evals:
        raise SystemExit(f"no SciFact index under {kb_data_dir}/eval: run `kb eval` on it first")
    _, scifact = read_vectors(evals[0])
    parts = [scifact] + [read_vectors(p)[1] for p in extra_dbs]
    queries = [
        json.loads(line)["text"]
        for line in (scifact_dir / "queries.jsonl").read_text().splitlines()
        if line.strip()
    ]
    qrels = {
        line.split("\t")[0]
        for line in (scifact_dir / "qrels" / "test.tsv").read_text().splitlines()[1:]
    }
    ids = [
        json.loads(line)["_id"]
        for line in (scifact_dir / "queries.jsonl").read_text().splitlines()
        if line.strip()
    ]
    test_queries = [q for q, i in zip(queries, ids) if i in qrels]
    out_dir.mkdir(parents=True, exist_ok=True)
    np.save(out_dir / "seeds.npy", normalise(np.concatenate(parts)))
    np.save(out_dir / "scifact_chunks.npy", normalise(scifact))
    np.save(out_dir / "scifact_queries.npy", embed_queries(kb_data_dir, test_queries))


@dataclass
class Generator:
    """Points drawn around real embeddings.

    A point is `normalise((1 - t) * s_a + t * s_b + noise)`: `s_a` a random seed, `s_b` one of
    its `neighbours` nearest seeds, `t ~ U(0, mix)` (so points fill the gaps between related
    passages, as a growing corpus does), and `noise` Gaussian in the seeds' top-`rank`
    principal subspace with each direction scaled by the seeds' own spread along it (so the
    noise is anisotropic like the data), plus a small isotropic part. `spread` scales the
    subspace noise; queries use a larger one than passages (real queries sit further from
    any one passage than passages sit from each other).
    """

    seeds: np.ndarray
    components: np.ndarray  # rank x DIM
    scales: np.ndarray  # rank: the seeds' standard deviation along each component
    neighbours: np.ndarray  # n_seeds x n_neighbours seed indices
    mix: float = 0.5
    isotropic: float = 0.01

    @classmethod
    def fit(cls, seeds: np.ndarray, rank: int = 64, n_neighbours: int = 10) -> Generator:
        centred = seeds - seeds.mean(axis=0)
        _, singular, vt = np.linalg.svd(centred, full_matrices=False)
        scales = singular[:rank] / np.sqrt(len(seeds) - 1)
        neighbours = exact_topk(seeds, seeds, n_neighbours + 1)[0][:, 1:]
        return cls(seeds, vt[:rank].astype(np.float32), scales.astype(np.float32), neighbours)

    def sample(self, n: int, spread: float, rng: np.random.Generator) -> np.ndarray:
        a = rng.integers(0, len(self.seeds), n)
        b = self.neighbours[a, rng.integers(0, self.neighbours.shape[1], n)]
        t = rng.uniform(0.0, self.mix, (n, 1)).astype(np.float32)
        points = (1 - t) * self.seeds[a] + t * self.seeds[b]
        z = rng.standard_normal((n, len(self.scales)), dtype=np.float32)
        points += (z * (self.scales * spread)) @ self.components
        points += rng.standard_normal((n, DIM), dtype=np.float32) * (self.isotropic / np.sqrt(DIM))
        return normalise(points)


# Calibrated on SciFact (`python -m bench ann real`): at these spreads the generated set's local
# intrinsic dimensionality and its queries' neighbour similarities match the real ones, slightly
# harder.
PASSAGE_SPREAD = 0.6
QUERY_SPREAD = 1.2


def generate(
    seed_file: Path, out_dir: Path, size: int, n_queries: int, extra: int = 10_000
) -> dict[str, Path]:
    """base.npy (size rows), queries.npy, extra.npy (vectors to append / update with).

    Everything comes from one generator with a fixed seed, so a smaller size is a prefix of a
    larger one and reruns reuse the files."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {name: out_dir / f"{name}.npy" for name in ("base", "queries", "extra")}
    if (
        all(p.exists() for p in files.values())
        and len(np.load(files["base"], mmap_mode="r")) >= size
    ):
        return files
    gen = Generator.fit(np.load(seed_file))
    rng = np.random.default_rng(20240614)
    queries = gen.sample(n_queries, QUERY_SPREAD, rng)
    extra_vectors = gen.sample(extra, PASSAGE_SPREAD, rng)
    base = np.lib.format.open_memmap(files["base"], mode="w+", dtype=np.float32, shape=(size, DIM))
    for start in range(0, size, 100_000):
        stop = min(size, start + 100_000)
        base[start:stop] = gen.sample(stop - start, PASSAGE_SPREAD, rng)
    base.flush()
    del base
    np.save(files["queries"], queries)
    np.save(files["extra"], extra_vectors)
    return files


def exact_topk(
    base: np.ndarray, queries: np.ndarray, k: int, block: int = 200_000
) -> tuple[np.ndarray, np.ndarray]:
    """Exact inner-product top-k (row ids, similarities) of each query, best first, ties by row."""
    n = len(base)
    best_ids = np.zeros((len(queries), 0), dtype=np.int64)
    best_sims = np.zeros((len(queries), 0), dtype=np.float32)
    for start in range(0, n, block):
        part = np.asarray(base[start : start + block], dtype=np.float32)
        sims = queries @ part.T
        take = min(k, sims.shape[1])
        top = np.argpartition(-sims, take - 1, axis=1)[:, :take]
        best_ids = np.concatenate([best_ids, top + start], axis=1)
        best_sims = np.concatenate([best_sims, np.take_along_axis(sims, top, axis=1)], axis=1)
        order = np.lexsort((best_ids, -best_sims), axis=1)[:, :k]
        best_ids = np.take_along_axis(best_ids, order, axis=1)
        best_sims = np.take_along_axis(best_sims, order, axis=1)
    return best_ids, best_sims


def ground_truth(
    base_file: Path, size: int, queries: np.ndarray, k: int, cache: Path
) -> np.ndarray:
    if cache.exists():
        return np.load(cache)
    t0 = time.perf_counter()
    truth, _ = exact_topk(np.load(base_file, mmap_mode="r")[:size], queries, k)
    partial = cache.with_name(f"{cache.stem}.{os.getpid()}.partial.npy")
    np.save(partial, truth)
    partial.replace(cache)  # atomic: parallel runs never read a half-written file
    print(f"  ground truth for {size:,} rows: {time.perf_counter() - t0:.1f} s", flush=True)
    return truth


def recall(found: list[np.ndarray], truth: np.ndarray, k: int) -> float:
    hits = sum(len(np.intersect1d(f[:k], t[:k])) for f, t in zip(found, truth))
    return hits / (k * len(truth))


def local_dimension(base: np.ndarray, queries: np.ndarray, k: int = 20) -> float:
    """Mean maximum-likelihood local intrinsic dimensionality (Levina-Bickel) from the k nearest
    neighbours: what makes a nearest-neighbour search hard, whatever the nominal dimension.
    A query that is itself in `base` skips its own entry."""
    _, sims = exact_topk(base, queries, k + 1)
    dists = np.sqrt(np.maximum(2 - 2 * sims, 1e-12))
    dists = np.where((sims[:, :1] > 0.9999), dists[:, 1:], dists[:, :k])
    ratios = np.log(dists / dists[:, -1:] + 1e-12)
    return float(np.mean(-1 / np.mean(ratios, axis=1)))


def neighbour_profile(base: np.ndarray, queries: np.ndarray) -> dict[str, float]:
    """How far neighbours are: mean cosine of the 1st/10th/100th neighbour of each query, and
    the local intrinsic dimensionality around the queries and around the indexed points.
    Used to check that generated data is as hard as real data."""
    _, sims = exact_topk(base, queries, 100)
    return {
        "sim@1": float(sims[:, 0].mean()),
        "sim@10": float(sims[:, 9].mean()),
        "sim@100": float(sims[:, 99].mean()),
        "lid_queries": local_dimension(base, queries),
        "lid_points": local_dimension(base, base[:1000]),
    }
