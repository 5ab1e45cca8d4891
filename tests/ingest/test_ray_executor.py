"""`kb add/sync/reindex --executor ray` against a real Ray cluster on loopback: a lost worker
and a killed driver end with the same documents, chunks and vectors as a local run."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kb_testing import compare_dbs, document_count
from ray_cluster import RAY_ENV, LocalRayCluster

pytestmark = [
    pytest.mark.ray,
    pytest.mark.model,
    pytest.mark.skipif(
        importlib.util.find_spec("ray") is None,
        reason="ray is not installed: pip install 'kb-search[ray]' (`make install` does)",
    ),
]

N_FILES = 36
VOCABULARY = (
    "cluster actor object store raylet driver worker schedule replica shard index vector"
    " chunk token parser layout page table figure backup restore snapshot archive ledger"
    " kernel thread socket buffer queue stream packet window latency budget quota"
)
WORDS = VOCABULARY.split()


def make_corpus(root: Path) -> None:
    """Markdown notes of a few sections each (3-6 chunks), and a little Python."""
    rng = random.Random(14)
    for i in range(N_FILES):
        folder = root / f"part {i % 4}"
        folder.mkdir(parents=True, exist_ok=True)
        if i % 9 == 8:
            body = "\n\n".join(
                f"def step_{i}_{j}(queue):\n    "
                f'"""Move {" ".join(rng.choices(WORDS, k=12))}."""\n    return queue[{j}:]'
                for j in range(6)
            )
            (folder / f"tool_{i}.py").write_text(body + "\n")
            continue
        sections = "\n\n".join(
            f"## Section {j}\n\n"
            + " ".join(rng.choices(WORDS, k=90))
            + f" marker{i}x{j}.\n\n"
            + " ".join(rng.choices(WORDS, k=60))
            for j in range(rng.randint(2, 4))
        )
        (folder / f"note {i}.md").write_text(f"# Note {i}\n\n{sections}\n")


def kb(data_dir: Path, model_cache: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    env = dict(
        os.environ,
        KB_DATA_DIR=str(data_dir),
        KB_MODEL_CACHE=str(model_cache),
        HF_HUB_OFFLINE="1",
        **RAY_ENV,
    )
    env.pop("KB_MODEL", None)
    return [sys.executable, "-m", "kb_search", *args, "--format", "json"], env


def run_kb(data_dir: Path, model_cache: Path, *args: str) -> dict:
    cmd, env = kb(data_dir, model_cache, *args)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def cluster():
    with LocalRayCluster(head_cpus=2) as running:
        yield running


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ray") / "corpus"
    make_corpus(root)
    return root


@pytest.fixture(scope="module")
def local_db(tmp_path_factory, corpus: Path, model_cache: Path) -> Path:
    """The reference: the same corpus through the local process pool."""
    data_dir = tmp_path_factory.mktemp("local") / "data"
    summary = run_kb(data_dir, model_cache, "add", str(corpus), "--workers", "1")
    assert summary["added"] == N_FILES and summary["failed"] == []
    return data_dir / "kb.db"


def busy_actor(cluster, proc: subprocess.Popen) -> int:
    """The pid of an actor inside a call of the run `proc` (its title names the method);
    fails the test when none gets busy."""
    actors: list[int] = []
    deadline = time.monotonic() + 240
    while not actors and time.monotonic() < deadline and proc.poll() is None:
        actors = cluster.processes("ray::RemoteWorker.process")
        time.sleep(0.02)
    if not actors:
        proc.kill()
        pytest.fail(f"no RemoteWorker busy in a call: {proc.communicate()[1].decode()[-2000:]}")
    return actors[0]


def test_lost_worker_mid_run_same_index_as_local(cluster, corpus, local_db, model_cache, tmp_path):
    data_dir = tmp_path / "data"
    cmd, env = kb(data_dir, model_cache, "add", str(corpus), "--executor", "ray",
                  "--address", cluster.address)  # fmt: skip
    # Kill an actor while it is inside a call (its title names the method): on a quiet machine
    # the actors may be done before the writer has stored many documents.
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    actor = busy_actor(cluster, proc)
    db_path = data_dir / "kb.db"
    written = document_count(db_path) if db_path.exists() else 0
    os.kill(actor, signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode()[-3000:]
    assert written < N_FILES, "the run ended before the worker was killed"
    summary = json.loads(out)
    assert summary["failed"] == [] and summary["added"] == N_FILES

    assert compare_dbs(data_dir / "kb.db", local_db) == []
    assert run_kb(data_dir, model_cache, "doctor")["ok"]


def test_frozen_worker_is_killed_and_its_files_sent_again(
    cluster, corpus, local_db, model_cache, tmp_path
):
    """A worker that stops answering (SIGSTOP: a frozen node, a call stuck in native code)
    is killed after `ingestion.ray_stall_s` and its files go to the other workers: the run
    ends with the same index as a local one instead of waiting forever."""
    data_dir = tmp_path / "data"
    cmd, env = kb(data_dir, model_cache, "add", str(corpus), "--executor", "ray",
                  "--address", cluster.address)  # fmt: skip
    env["KB_RAY_STALL_S"] = "6"
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    frozen = busy_actor(cluster, proc)
    os.kill(frozen, signal.SIGSTOP)
    try:
        out, err = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    finally:
        try:
            os.kill(frozen, signal.SIGCONT)  # if it is still there, let it be killed normally
        except ProcessLookupError:
            pass
    assert proc.returncode == 0, err.decode()[-3000:]
    summary = json.loads(out)
    assert summary["failed"] == [] and summary["added"] == N_FILES
    assert "silent for" in err.decode()  # the driver said what it did
    assert frozen not in cluster.processes("ray::RemoteWorker")
    assert compare_dbs(data_dir / "kb.db", local_db) == []


def test_killed_driver_leaves_consistent_db_and_rerun_resumes(
    cluster, corpus, local_db, model_cache, tmp_path
):
    data_dir = tmp_path / "data"
    cmd, env = kb(data_dir, model_cache, "add", str(corpus), "--executor", "ray",
                  "--address", cluster.address)  # fmt: skip
    # Kill the driver while an actor is inside a call: on a quiet machine one batch flush can
    # write every document, so waiting for documents first may find the run already done.
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if cluster.processes("ray::RemoteWorker.process"):
            break
        time.sleep(0.02)
    assert proc.poll() is None, f"kb add ended before any actor worked: {proc.communicate()[1]}"
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    killed_at = document_count(data_dir / "kb.db")
    assert killed_at < N_FILES, "the run ended before the driver was killed"
    assert run_kb(data_dir, model_cache, "doctor")["ok"]  # every written document is whole

    # `kb add` remembered the folder before it was killed: `kb sync` finds the rest.
    summary = run_kb(data_dir, model_cache, "sync", "--executor", "ray",
                     "--address", cluster.address)  # fmt: skip
    assert summary["failed"] == []
    assert summary["added"] == N_FILES - killed_at
    assert compare_dbs(data_dir / "kb.db", local_db) == []
    # The dead driver's actors went with it, the rerun's with the rerun.
    deadline = time.monotonic() + 60
    while cluster.processes("ray::RemoteWorker") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert cluster.processes("ray::RemoteWorker") == []


def test_ray_client_address_matches_local(cluster, corpus, local_db, model_cache, tmp_path):
    """`--address ray://host:port` (Ray Client, a driver outside the cluster): the same index."""
    data_dir = tmp_path / "data"
    summary = run_kb(data_dir, model_cache, "add", str(corpus), "--executor", "ray",
                     "--address", f"ray://127.0.0.1:{cluster.client_port}")  # fmt: skip
    assert summary["added"] == N_FILES and summary["failed"] == []
    assert compare_dbs(data_dir / "kb.db", local_db) == []


def test_reindex_on_ray_matches_local(cluster, local_db, model_cache, tmp_path):
    """Every vector re-embedded in batches on the cluster: the same vectors as local."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    shutil.copy(local_db, data_dir / "kb.db")
    summary = run_kb(data_dir, model_cache, "reindex", "--full", "--executor", "ray",
                     "--address", cluster.address)  # fmt: skip
    assert summary["embedded"] == summary["total_chunks"] > 0
    assert compare_dbs(data_dir / "kb.db", local_db) == []
    assert run_kb(data_dir, model_cache, "doctor")["ok"]


def test_a_run_with_nothing_to_parse_never_imports_ray(tmp_path, model_cache, sample):
    """A no-op `kb sync --executor ray` joins no cluster; the local path never imports ray."""
    script = (
        "import sys\n"
        "from kb_search.cli import cli\n"
        "for args in (['add', sys.argv[1], '--workers', '0'], ['sync', '--executor', 'ray']):\n"
        "    cli.main(args=args, prog_name='kb', standalone_mode=False)\n"
        "print('ray' in sys.modules)\n"
    )
    cmd, env = kb(tmp_path / "data", model_cache, "version")
    done = subprocess.run(
        [sys.executable, "-c", script, str(sample)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"
