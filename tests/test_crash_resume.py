"""SIGKILL `kb add` in the middle of a batch; the rerun must leave every file indexed once."""

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


def kb_cmd(data_dir, *args):
    cache = os.environ["KB_TEST_MODEL_CACHE"]
    env = dict(os.environ, KB_DATA_DIR=str(data_dir), KB_MODEL_CACHE=cache)
    return [sys.executable, "-m", "kb_search", *args], env


def test_sigkill_mid_batch_then_resume(tmp_path, model_cache, monkeypatch):
    monkeypatch.setenv("KB_TEST_MODEL_CACHE", str(model_cache))
    corpus = tmp_path / "corpus"
    make_corpus(corpus)
    data_dir = tmp_path / "data"
    db_path = data_dir / "kb.db"
    cmd, env = kb_cmd(data_dir, "add", str(corpus), "--format", "json")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    killed_at = None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if db_path.exists():
            n = document_count(db_path)
            if n >= 20:
                proc.send_signal(signal.SIGKILL)
                killed_at = n
                break
        time.sleep(0.01)
    proc.wait()
    assert killed_at is not None and proc.returncode == -signal.SIGKILL, "ingest ended before kill"
    assert document_count(db_path) < N_FILES

    cmd, env = kb_cmd(data_dir, "add", str(corpus), "--format", "json")
    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    summary = json.loads(rerun.stdout)
    assert summary["failed"] == []
    assert summary["skipped"] >= killed_at
    assert summary["added"] + summary["skipped"] == N_FILES

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
