"""The approximate index (usearch HNSW) behind the VectorIndex protocol: recall measured
against exact search, its file stamped, caught up incrementally, and never half-written."""

from __future__ import annotations

import importlib
import importlib.util
import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

if importlib.util.find_spec("usearch") is None:
    pytest.skip("usearch is not installed (the `ann` extra)", allow_module_level=True)
# usearch after onnxruntime, as kb loads it (ann._usearch_index): the other order crashes an
# ONNX Runtime session created later in the same test process.
importlib.import_module("kb_search.vectors.ann")._usearch_index()

from kb_search.profile import Profile  # noqa: E402
from kb_search.store import db  # noqa: E402
from kb_search.store.vectors import ensure_table, insert_vectors, to_blob  # noqa: E402
from kb_search.vectors import ann, choose_backend  # noqa: E402
from kb_search.vectors.ann import AnnIndex, ann_folder, ann_state  # noqa: E402
from kb_search.vectors.matrix import MatrixIndex  # noqa: E402

DIM = 384
MODEL = "test/generated-384"


def clustered(rng: np.random.Generator, n: int) -> np.ndarray:
    """Unit vectors in clusters spread along a 24-dimensional subspace: text embeddings have
    a low local dimension (13-23 measured on SciFact); isotropic 384-d noise would not."""
    centres = rng.standard_normal((n // 25 + 1, DIM)).astype(np.float32)
    basis = np.linalg.qr(rng.standard_normal((DIM, 24)))[0].T.astype(np.float32)
    spread = rng.standard_normal((n, 24), np.float32) @ basis * 6.0
    data = centres[rng.integers(0, len(centres), n)] + spread
    return (data / np.linalg.norm(data, axis=1, keepdims=True)).astype(np.float32)


class Corpus:
    """A kb database whose chunks carry generated vectors (no model, no parsing)."""

    def __init__(self, path: Path, vectors: np.ndarray | None = None) -> None:
        self.path = path
        self.writer = db.connect(path, create=True)
        self.table = ensure_table(self.writer, MODEL, DIM)
        with db.transaction(self.writer):
            db.set_meta(self.writer, "model_name", MODEL)
        self.next_doc = 1 + self.writer.execute("SELECT count(*) FROM documents").fetchone()[0]
        if vectors is not None:
            self.add(vectors)

    def add(self, vectors: np.ndarray, hashes: list[str] | None = None) -> list[int]:
        """One document holding these chunks; returns their ids."""
        conn, doc = self.writer, self.next_doc
        self.next_doc += 1
        with db.transaction(conn):
            conn.execute(
                "INSERT INTO documents(id, path, rel_path, title, doc_type, content_hash,"
                " chunk_count, indexed_at) VALUES (?, ?, ?, ?, 'note', ?, ?, ?)",
                (doc, f"/kb/{doc}.md", f"{doc}.md", str(doc), str(doc), len(vectors), time.time()),
            )
            ids = []
            for i in range(len(vectors)):
                digest = hashes[i] if hashes else f"{doc:08x}{i:08x}"
                cur = conn.execute(
                    "INSERT INTO chunks(document_id, chunk_index, text, token_count, content_hash)"
                    " VALUES (?, ?, 'x', 1, ?)",
                    (doc, i, digest),
                )
                ids.append(cur.lastrowid)
            insert_vectors(conn, self.table.name, ids, [to_blob(v) for v in vectors])
        return ids

    def delete(self, chunk_ids: list[int]) -> None:
        marks = ",".join("?" * len(chunk_ids))
        with db.transaction(self.writer):
            vec = self.table.name
            self.writer.execute(f"DELETE FROM {vec} WHERE rowid IN ({marks})", chunk_ids)
            self.writer.execute(f"DELETE FROM chunks WHERE id IN ({marks})", chunk_ids)
            self.writer.execute("UPDATE documents SET indexed_at = ?", (time.time(),))

    def replace(self, chunk_id: int, vector: np.ndarray, digest: str) -> None:
        """The chunk id stays, its text (content hash) and vector change: a reused id."""
        with db.transaction(self.writer):
            self.writer.execute(
                "UPDATE chunks SET content_hash = ? WHERE id = ?", (digest, chunk_id)
            )
            self.writer.execute(f"DELETE FROM {self.table.name} WHERE rowid = ?", (chunk_id,))
            insert_vectors(self.writer, self.table.name, [chunk_id], [to_blob(vector)])
            self.writer.execute("UPDATE documents SET indexed_at = ?", (time.time(),))

    def reader(self) -> db.Connection:
        conn = db.connect(self.path, readonly=True)
        db.load_vec_extension(conn)
        return conn


def ids_of(hits: list[tuple[int, float]]) -> list[int]:
    return [cid for cid, _ in hits]


def same(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> bool:
    """The same ids in the same order, scores equal to float32 precision."""
    return ids_of(got) == ids_of(want) and all(abs(a[1] - b[1]) < 1e-5 for a, b in zip(got, want))


def recall(got: list[list[int]], want: list[list[int]]) -> float:
    return sum(len(set(g) & set(w)) for g, w in zip(got, want)) / sum(len(w) for w in want)


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    base = clustered(rng, 4_000)
    noise = 0.05 * rng.standard_normal((100, DIM)).astype(np.float32)
    queries = base[rng.integers(0, len(base), 100)] + noise
    return base, queries / np.linalg.norm(queries, axis=1, keepdims=True)  # as the model's are


@pytest.fixture(scope="module")
def template(tmp_path_factory, data) -> tuple[Path, ann.Changes]:
    """3,000 chunks and their saved graph, built once and copied for each test."""
    folder = tmp_path_factory.mktemp("ann-template")
    corpus = Corpus(folder / "kb.db", data[0][:3_000])
    first = AnnIndex.open(corpus.reader(), corpus.table)
    corpus.writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    corpus.writer.close()
    return folder, first.last_changes


@pytest.fixture
def corpus(tmp_path: Path, template) -> Corpus:
    shutil.copytree(template[0], tmp_path / "kb", dirs_exist_ok=True)
    return Corpus(tmp_path / "kb" / "kb.db")


def test_recall_at_10_against_exact_search(corpus: Corpus, data) -> None:
    conn = corpus.reader()
    index = AnnIndex.open(conn, corpus.table)
    exact = MatrixIndex.open(conn, corpus.table)
    queries = data[1]
    got = [ids_of(index.nearest(conn, q, 10, None)) for q in queries]
    want = [ids_of(exact.nearest(conn, q, 10, None)) for q in queries]
    assert recall(got, want) >= 0.95
    # scores are the exact cosine similarities of the ids found
    hit = index.nearest(conn, queries[0], 10, None)
    truth = dict(exact.nearest(conn, queries[0], 3_000, None))
    assert all(abs(score - truth[cid]) < 1e-5 for cid, score in hit)


def test_search_breadth_grows_with_the_index(corpus: Corpus, data, monkeypatch) -> None:
    """ef doubles with every doubling of the index past EXPANSION_FROM: a fixed ef loses
    recall as the graph grows (docs/scale.md: 0.975 at 300k, 0.937 at 1M for ef 512)."""
    sizes = (1_000, 300_000, 600_000, 1_000_000, 10**8)
    assert [ann.search_expansion(n) for n in sizes] == [512, 512, 1024, 2048, 4096]
    conn = corpus.reader()
    index = AnnIndex.open(conn, corpus.table)
    index.nearest(conn, data[1][0], 10, None)
    assert index.graph.expansion_search == 512
    monkeypatch.setattr(ann, "EXPANSION_FROM", len(index) // 3)  # 3x past it: two doublings
    index.nearest(conn, data[1][0], 10, None)
    assert index.graph.expansion_search == 2048


def test_filters_selective_exact_broad_overfetched(corpus: Corpus, data) -> None:
    conn = corpus.reader()
    index = AnnIndex.open(conn, corpus.table)
    exact = MatrixIndex.open(conn, corpus.table)
    rng = np.random.default_rng(1)
    all_ids = exact.ids
    narrow = set(rng.choice(all_ids, 30, replace=False).tolist())  # 1%: exact
    broad = set(rng.choice(all_ids, 1_200, replace=False).tolist())  # 40%: graph + filter
    for q in data[1][:30]:
        assert same(index.nearest(conn, q, 10, narrow), exact.nearest(conn, q, 10, narrow))
    got, want = [], []
    for q in data[1]:
        hits = index.nearest(conn, q, 10, broad)
        assert len(hits) == 10 and set(ids_of(hits)) <= broad
        got.append(ids_of(hits))
        want.append(ids_of(exact.nearest(conn, q, 10, broad)))
    assert recall(got, want) >= 0.95
    # a filter too narrow for the graph to satisfy: widening falls back to exact
    index.exact_share = 0.0
    few = set(all_ids[:5].tolist())
    assert same(index.nearest(conn, data[1][0], 10, few), exact.nearest(conn, data[1][0], 10, few))
    assert index.nearest(conn, data[1][0], 10, set()) == []


def test_saved_stamped_and_reopened_without_rebuilding(corpus: Corpus, template) -> None:
    built = template[1]
    assert built.rebuilt and built.saved and built.added == 3_000
    conn = corpus.reader()
    state = ann_state(conn, corpus.table)
    assert (state.state, state.count) == ("fresh", 3_000)
    stamp = json.loads(Path(state.path).read_text())
    assert stamp["table"] == corpus.table.name and stamp["model"] == MODEL
    reopened = AnnIndex.open(corpus.reader(), corpus.table)
    assert not reopened.last_changes.rebuilt and reopened.last_changes.added == 0
    assert reopened.graph._kb_view  # memory-mapped, not read into memory
    exact = MatrixIndex.open(conn, corpus.table)
    q = np.asarray(exact.matrix[5])
    # the saved graph answers (HNSW is approximate: a stored vector is among its top few, not
    # always first; the recall test measures quality)
    assert exact.ids[5] in ids_of(reopened.nearest(conn, q, 5, None))


def test_stale_file_caught_up_incrementally(corpus: Corpus, data) -> None:
    conn = corpus.reader()
    AnnIndex.open(conn, corpus.table)
    base = data[0]
    gone = list(range(1, 101))  # 100 chunks deleted
    corpus.delete(gone)
    new_ids = corpus.add(base[3_000:3_050])  # 50 new chunks
    corpus.replace(200, base[3_999], "changed-hash")  # a kept id with a new vector
    assert ann_state(conn, corpus.table).state == "stale"

    index = AnnIndex.open(corpus.reader(), corpus.table)
    changes = index.last_changes
    assert not changes.rebuilt
    assert (changes.added, changes.removed) == (51, 101)
    assert len(index) == 3_000 - 100 + 50
    assert ann_state(conn, corpus.table).state == "fresh"
    found = index.nearest(conn, base[3_010], 1, None)
    assert found[0][0] == new_ids[10] and found[0][1] > 0.999
    assert index.nearest(conn, base[3_999], 1, None)[0][0] == 200
    assert index.nearest(conn, base[199], 1, None)[0][0] != 200  # the old vector is gone
    nearest_all = {cid for q in data[1] for cid in ids_of(index.nearest(conn, q, 50, None))}
    assert not nearest_all & set(gone)
    again = AnnIndex.open(corpus.reader(), corpus.table)  # the caught-up file is used as is
    assert not again.last_changes.rebuilt and again.last_changes.added == 0
    assert len(again) == len(index)


def test_long_lived_index_follows_writes(corpus: Corpus, data) -> None:
    conn = corpus.reader()
    index = AnnIndex.open(conn, corpus.table)
    (new_id,) = corpus.add(data[0][3_500:3_501])
    found = index.nearest(conn, data[0][3_500], 1, None)
    assert found[0][0] == new_id
    assert index.last_changes.added == 1 and not index.last_changes.saved


def test_crash_while_writing_keeps_the_old_file(corpus: Corpus, data, monkeypatch) -> None:
    conn = corpus.reader()
    AnnIndex.open(conn, corpus.table)
    folder = ann_folder(corpus.path)
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.suffix == ".json"}
    corpus.add(data[0][3_000:3_100])

    def die(*_args, **_kwargs):
        raise KeyboardInterrupt  # the process is killed between the data files and the stamp

    monkeypatch.setattr(ann.os, "replace", die)
    with pytest.raises(KeyboardInterrupt):
        AnnIndex.open(corpus.reader(), corpus.table)
    monkeypatch.undo()
    after = {p.name: p.read_bytes() for p in folder.iterdir() if p.suffix == ".json"}
    assert after == before  # the stamp still names the old, complete files
    assert ann_state(conn, corpus.table).state == "stale"
    index = AnnIndex.open(corpus.reader(), corpus.table)
    assert not index.last_changes.rebuilt and index.last_changes.added == 100
    graphs = sorted(p.name for p in folder.glob("*.usearch"))
    assert len(graphs) == 1  # the orphaned generation was cleaned up by the next save


def test_unreadable_file_is_rebuilt(corpus: Corpus) -> None:
    for path in ann_folder(corpus.path).glob("*.usearch"):
        path.write_bytes(b"not a graph")
    index = AnnIndex.open(corpus.reader(), corpus.table)
    assert index.last_changes.rebuilt and len(index) == 3_000


def test_read_only_folder_serves_from_memory(corpus: Corpus, monkeypatch) -> None:
    def refuse(*_args, **_kwargs):
        raise PermissionError("read-only")

    shutil.rmtree(ann_folder(corpus.path))
    monkeypatch.setattr(ann.Path, "mkdir", refuse)
    index = AnnIndex.open(corpus.reader(), corpus.table)
    assert index.last_changes.rebuilt and not index.last_changes.saved
    assert len(index) == 3_000


def test_auto_uses_ann_from_the_configured_size(corpus: Corpus) -> None:
    conn = corpus.reader()
    assert choose_backend(conn, "auto", Profile.ONE_SHOT, 3_000) == "ann"
    assert choose_backend(conn, "auto", Profile.ONE_SHOT, 3_001) == "sqlite-vec"
    assert choose_backend(conn, "auto", Profile.SERVE, 3_001) == "live-matrix"
    assert choose_backend(conn, "auto", Profile.SERVE, 0) == "live-matrix"
    assert choose_backend(conn, "matrix", Profile.ONE_SHOT, 1) == "matrix"
    # the warm server answers as a one-shot call would: sqlite-vec's answers, from memory
    assert choose_backend(conn, "auto", Profile.WARM, 3_001) == "sqlite-vec-shortlist"
    assert choose_backend(conn, "sqlite-vec", Profile.WARM, 1) == "sqlite-vec-shortlist"
    assert choose_backend(conn, "auto", Profile.WARM, 3_000) == "ann"


def test_kb_search_and_doctor_with_the_ann_backend(kb, environment, sample) -> None:
    environment.env["KB_VECTOR_INDEX"] = "auto"
    environment.env["KB_ANN_MIN_CHUNKS"] = "1"
    kb("add", str(sample))
    doctor = {c["name"]: c for c in kb.json("doctor")["checks"]}
    assert doctor["ann_index"]["detail"].startswith("not built yet: the next vector search")
    hits = kb.json("search", "--mode", "vector", "retry", "with", "backoff")["results"]
    assert hits
    environment.env["KB_VECTOR_INDEX"] = "sqlite-vec"
    exact = kb.json("search", "--mode", "vector", "retry", "with", "backoff")["results"]
    assert [h["chunk_id"] for h in hits] == [h["chunk_id"] for h in exact]
    doctor = {c["name"]: c for c in kb.json("doctor")["checks"]}
    assert doctor["ann_index"]["detail"].startswith("fresh")


def test_a_vector_written_later_is_picked_up(corpus: Corpus, data) -> None:
    """`kb reindex` fills in a chunk's missing vector: no chunk changes, only the vec table."""
    conn = corpus.reader()
    index = AnnIndex.open(conn, corpus.table)
    with db.transaction(corpus.writer):
        corpus.writer.execute(f"DELETE FROM {corpus.table.name} WHERE rowid = 7")
    assert 7 not in ids_of(index.nearest(conn, data[0][6], 5, None))
    with db.transaction(corpus.writer):
        insert_vectors(corpus.writer, corpus.table.name, [7], [to_blob(data[0][6])])
    assert index.nearest(conn, data[0][6], 1, None)[0][0] == 7


@pytest.mark.model
def test_the_model_runs_in_a_process_that_opened_the_ann_index_first(tmp_path, model_cache):
    """usearch loaded before ONNX Runtime crashed the first session (a segfault): kb loads
    usearch through ann._usearch_index, which imports onnxruntime first."""
    import os
    import subprocess
    import sys

    code = (
        "import os\n"
        "from kb_search.vectors.ann import ann_available\n"
        "assert ann_available() is None\n"
        "from kb_search.config import load_config\n"
        "from kb_search.knowledge_base import KnowledgeBase\n"
        "kb = KnowledgeBase(load_config(env=dict(os.environ)))\n"
        "print(kb.models.embedder('sentence-transformers/all-MiniLM-L6-v2').embed_query('x').shape)\n"
    )
    env = {**os.environ, "KB_DATA_DIR": str(tmp_path), "KB_MODEL_CACHE": str(model_cache)}
    env["HF_HUB_OFFLINE"] = "1"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "(384,)", done.stderr[-2000:]
