"""SIGKILL `kb add` in its keyword phase (files being written) and in its embedding phase
(every file written, vectors being added); the rerun must leave every file indexed once and
every chunk with its vector."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from kb_search.store import db
from kb_testing import document_count

pytestmark = pytest.mark.slow

N_FILES = 240


def make_corpus(root):
    root.mkdir()
    for i in range(N_FILES):
        sub = root / f"dir {i % 7}"
        sub.mkdir(exist_ok=True)
        paras = "\n\n".join(
            f"## Part {j}\n\nNote {i} paragraph {j} mentions token{i}x{j} and shared words." * 4
            for j in range(2)
        )
        (sub / f"note {i}.md").write_text(f"# Note {i}\n\n{paras}\n")


def make_long_corpus(root, files=N_FILES):
    """Three sections of ~150 words per note: ~3 chunks each, several embedding batches."""
    root.mkdir()
    for i in range(files):
        sections = "\n\n".join(
            f"## Part {j}\n\n"
            + " ".join(f"note{i} part{j} word{k} token{i}x{j}" for k in range(12))
            for j in range(3)
        )
        (root / f"note {i}.md").write_text(f"# Note {i}\n\n{sections}\n")


def kb_cmd(data_dir, *args):
    cache = os.environ["KB_TEST_MODEL_CACHE"]
    env = dict(os.environ, KB_DATA_DIR=str(data_dir), KB_MODEL_CACHE=cache)
    return [sys.executable, "-m", "kb_search", *args], env


def vector_state(db_path) -> tuple[int, int]:
    """(chunks, chunks with a vector) of a DB another process is writing; (0, 0) until ready."""
    try:
        conn = db.connect(db_path, readonly=True)
    except db.DBError:
        return 0, 0
    try:
        row = conn.execute("SELECT table_name FROM vector_tables").fetchone()
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        if row is None:
            return chunks, 0
        return chunks, conn.execute(f"SELECT count(*) FROM {row[0]}_rowids").fetchone()[0]
    except db.DatabaseError:
        return 0, 0
    finally:
        conn.close()


def add_killed_when(data_dir, corpus, probe, timeout: float, what: str):
    """Start `kb add CORPUS` and poll `probe()` until it returns something (not None); SIGKILL
    the run then and return what it returned. Fails with `what` if the run ends first."""
    cmd, env = kb_cmd(data_dir, "add", str(corpus), "--format", "json")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    state = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        state = probe()
        if state is not None:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.01)
    proc.wait()
    assert state is not None and proc.returncode == -signal.SIGKILL, what
    return state


def run_json(data_dir, *args):
    cmd, env = kb_cmd(data_dir, *args, "--format", "json")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    return done, json.loads(done.stdout) if done.stdout.strip() else None


def test_sigkill_in_the_embedding_phase_then_resume(tmp_path, model_cache, monkeypatch):
    """Every file is written (keyword-searchable) before the first vector; killed while the
    vectors are added, the DB is consistent (doctor: chunks await embedding, hybrid search
    says how many are embedded) and the next `kb add` of the same, unchanged folder embeds
    the rest."""
    monkeypatch.setenv("KB_TEST_MODEL_CACHE", str(model_cache))
    corpus = tmp_path / "corpus"
    make_long_corpus(corpus)
    data_dir = tmp_path / "data"
    db_path = data_dir / "kb.db"

    def embedding_begun():
        chunks, vectors = vector_state(db_path)
        if vectors:
            # the first vectors: every document was written before them
            assert document_count(db_path) == N_FILES
        return (chunks, vectors) if 0 < vectors < chunks // 2 else None

    add_killed_when(data_dir, corpus, embedding_begun, 180, "not killed while embedding")
    chunks, vectors = vector_state(db_path)
    assert document_count(db_path) == N_FILES and 0 < vectors < chunks

    _, doctor = run_json(data_dir, "doctor")
    check = {c["name"]: c for c in doctor["checks"]}["vectors_in_sync"]
    assert doctor["ok"] and check["warning"], check
    assert check["detail"].startswith(f"{chunks - vectors} chunks await embedding")
    _, hit = run_json(data_dir, "search", "token239x1", "--mode", "lexical")
    assert hit["results"][0]["source"]["title"] == "Note 239"  # by keyword, not embedded yet
    assert "embedding" not in hit  # no vector leg ran
    _, hit = run_json(data_dir, "search", "token239x1")
    assert hit["embedding"] == {"chunks": chunks, "embedded": vectors}
    assert f"vector leg: {vectors:,} of {chunks:,} chunks embedded" in hit["notes"][-1]

    rerun, summary = run_json(data_dir, "add", str(corpus))
    assert rerun.returncode == 0, rerun.stderr
    assert summary["skipped"] == N_FILES and summary["added"] == 0
    assert summary["embedded"] == chunks - vectors and summary["model_loaded"]
    left = chunks - vectors  # said, not only "Added 0 documents" after minutes of embedding
    assert f"{left} chunks embedded that an earlier run left without a vector" in summary["summary"]
    assert vector_state(db_path) == (chunks, chunks)
    _, doctor = run_json(data_dir, "doctor")
    check = {c["name"]: c for c in doctor["checks"]}["vectors_in_sync"]
    assert doctor["ok"] and check["detail"] == "every chunk has one vector"
    _, hit = run_json(data_dir, "search", "token239x1")
    assert "embedding" not in hit  # every chunk has its vector
    assert not any(note.startswith("vector leg") for note in hit["notes"])
    _, again = run_json(data_dir, "add", str(corpus))
    assert again["embedded"] == 0 and not again["model_loaded"]  # nothing left: no model


def test_sigkill_mid_batch_then_resume(tmp_path, model_cache, monkeypatch):
    monkeypatch.setenv("KB_TEST_MODEL_CACHE", str(model_cache))
    corpus = tmp_path / "corpus"
    make_corpus(corpus)
    data_dir = tmp_path / "data"
    db_path = data_dir / "kb.db"

    def twenty_written():
        n = document_count(db_path) if db_path.exists() else 0
        return n if n >= 20 else None

    killed_at = add_killed_when(data_dir, corpus, twenty_written, 120, "ingest ended before kill")
    assert document_count(db_path) < N_FILES
    # the keyword phase: what was written is whole and keyword-searchable, without vectors
    _, doctor = run_json(data_dir, "doctor")
    assert doctor["ok"], doctor

    cmd, env = kb_cmd(data_dir, "add", str(corpus), "--format", "json")
    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    summary = json.loads(rerun.stdout)
    assert summary["failed"] == []
    assert summary["skipped"] >= killed_at
    assert summary["added"] + summary["skipped"] == N_FILES
    chunks, vectors = vector_state(db_path)
    assert summary["embedded"] == chunks == vectors > 0  # the earlier run's chunks too

    conn = db.connect(db_path, readonly=True)
    paths = [r[0] for r in conn.execute("SELECT path FROM documents")]
    assert len(paths) == len(set(paths)) == N_FILES
    expected = {str(p.resolve()) for p in corpus.rglob("*.md")}
    assert set(paths) == expected
    conn.close()
    cmd, env = kb_cmd(data_dir, "doctor", "--format", "json")
    doctor = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert json.loads(doctor.stdout)["ok"], doctor.stdout
    # every note is findable by its unique token
    cmd, env = kb_cmd(data_dir, "search", "token239x1", "--mode", "lexical", "--format", "json")
    hit = json.loads(subprocess.run(cmd, env=env, capture_output=True, text=True).stdout)
    assert hit["results"][0]["source"]["title"] == "Note 239"


SAVED_PART = 64  # vectors/writer.SAVE_CHUNKS: what waits for a commit at most


def add_stopped_after_saves(data_dir, corpus, sig, saves: int = 3):
    """Start `kb add CORPUS`, watch the vectors it saves (every count the DB shows), and send
    `sig` once `saves` parts were saved. Returns (the counts seen, the process's stdout and
    stderr, its exit status)."""
    cmd, env = kb_cmd(data_dir, "add", str(corpus), "--format", "json")
    proc = subprocess.Popen(
        cmd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as at a terminal: SIGINT raises KeyboardInterrupt (a runner in the background may
        # have handed it down ignored)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    seen = [0]
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        _, vectors = vector_state(data_dir / "kb.db")
        if vectors != seen[-1]:
            seen.append(vectors)
        if len(seen) > saves:
            proc.send_signal(sig)
            break
        time.sleep(0.01)
    out, err = proc.communicate(timeout=120)
    assert len(seen) > saves, f"ended before {saves} saves: {seen} {err[-2000:]}"
    return seen, out, err, proc.returncode


def saved_in_small_parts(seen: list[int]) -> None:
    """The vectors reached the DB a small part at a time: the first part and (nearly) every
    step between two counts seen are at most `SAVED_PART` (the old code saved 256 at once)."""
    steps = [b - a for a, b in zip(seen, seen[1:])]
    assert 0 < seen[1] <= SAVED_PART, seen
    assert sorted(steps)[len(steps) // 2] <= SAVED_PART, seen


def test_kill_9_while_embedding_loses_at_most_the_part_not_saved(
    tmp_path, model_cache, monkeypatch
):
    monkeypatch.setenv("KB_TEST_MODEL_CACHE", str(model_cache))
    corpus = tmp_path / "corpus"
    make_long_corpus(corpus)
    data_dir = tmp_path / "data"
    seen, _, _, status = add_stopped_after_saves(data_dir, corpus, signal.SIGKILL)
    assert status == -signal.SIGKILL
    saved_in_small_parts(seen)
    chunks, kept = vector_state(data_dir / "kb.db")
    assert seen[-1] <= kept < chunks  # every part seen saved is kept

    rerun, summary = run_json(data_dir, "add", str(corpus))
    assert rerun.returncode == 0, rerun.stderr
    assert summary["embedded"] == chunks - kept and summary["skipped"] == N_FILES
    assert vector_state(data_dir / "kb.db") == (chunks, chunks)


def test_ctrl_c_while_embedding_keeps_what_was_saved_and_says_so(
    tmp_path, model_cache, monkeypatch
):
    monkeypatch.setenv("KB_TEST_MODEL_CACHE", str(model_cache))
    corpus = tmp_path / "corpus"
    make_long_corpus(corpus)
    data_dir = tmp_path / "data"
    seen, out, err, status = add_stopped_after_saves(data_dir, corpus, signal.SIGINT)
    assert status == 130 and "Traceback" not in err, err
    saved_in_small_parts(seen)
    chunks, kept = vector_state(data_dir / "kb.db")
    assert seen[-1] <= kept < chunks
    assert err.strip().splitlines()[-1] == (
        f"Interrupted: {N_FILES} of {N_FILES} files read, {kept} of {chunks} chunks embedded;"
        " rerun to resume."
    )
    done = json.loads(out)
    assert done["interrupted"] and done["added"] == N_FILES and done["embedded"] == kept

    rerun, summary = run_json(data_dir, "add", str(corpus))
    assert rerun.returncode == 0, rerun.stderr
    assert summary["embedded"] == chunks - kept
    assert vector_state(data_dir / "kb.db") == (chunks, chunks)
