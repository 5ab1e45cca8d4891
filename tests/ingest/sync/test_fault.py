"""The fault test: SIGKILL `kb add` and `kb sync` at random points, at least 20 times, and
`kb reindex` 3 times, resume each time; the result must equal a clean single run chunk for
chunk (titles, hashes, texts, locations, vectors).

Runs in CI (about a minute). The seed is printed; KB_FAULT_SEED=<seed> replays a run.
A JSON report (kills, documents at each kill, timings) is written next to the test's
tmp dir and printed (`pytest -s`).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kb_search.store import db
from kb_testing import compare_dbs, db_signature

pytestmark = pytest.mark.slow

N_FILES = 300
KILLS_WHILE_ADDING = 12
KILLS_WHILE_SYNCING = 8
KILLS_WHILE_REINDEXING = 3


def write_file(path: Path, i: int, version: int = 0) -> None:
    """A one-chunk Markdown note, or a Python file of three chunks (so that an embedding
    batch holds few documents and kills land between and inside many batches)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".py":
        body = "".join(
            f'\n\ndef {name}_{i}(value):\n    """{name} {i} v{version} for token{i}x."""\n'
            f"    return value + {i + k}\n"
            for k, name in enumerate(("parse", "render", "check"))
        )
        path.write_text(f'"""Module {i}."""{body}')
        return
    extra = f" Revised v{version}." if version else ""
    path.write_text(f"# Note {i}\n\nNote {i} is about token{i}x and shared words.{extra}\n")


def make_corpus(root: Path) -> None:
    for i in range(N_FILES):
        suffix = ".py" if i % 2 else ".md"
        write_file(root / f"dir{i % 9}" / f"file{i:03d}{suffix}", i)


def mutate(root: Path, rng: random.Random, round_: int) -> dict[str, int]:
    """Rename, modify, delete and create some files, as a day of editing would."""
    files = sorted(root.rglob("*.*"))
    rng.shuffle(files)
    renamed, modified, deleted = files[:25], files[25:45], files[45:60]
    for k, path in enumerate(renamed):
        target = root / f"moved{round_}" / f"r{k}-{path.name}"
        target.parent.mkdir(exist_ok=True)
        os.replace(path, target)
    for path in modified:
        write_file(path, int(path.stem[-3:]), version=round_ + 1)
    for path in deleted:
        path.unlink()
    for k in range(20):
        i = 900 + 20 * round_ + k
        write_file(root / f"new{round_}" / f"file{i}{'.py' if k % 2 else '.md'}", i)
    return {"renamed": 25, "modified": 20, "deleted": 15, "created": 20}


class Counter:
    """Documents in the DB, read over one connection (polled every few ms)."""

    def __init__(self, db_path: Path):
        self.db_path, self.conn = db_path, None

    def __call__(self) -> int:
        try:
            if self.conn is None:
                self.conn = db.connect(self.db_path, readonly=True)
            return self.conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        except (db.DBError, db.DatabaseError):
            self.close()
            return 0

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class Killer:
    """Starts a kb command and SIGKILLs it at a random point: after a random delay (up to
    the length of the last full run), or as soon as the document count passes a random
    target, which lands between or inside the per-document writes of a batch."""

    def __init__(self, cmd: list[str], env: dict, db_path: Path, rng: random.Random):
        self.cmd, self.env, self.rng = cmd, env, rng
        self.count = Counter(db_path)
        self.kills: list[dict] = []
        self.full_run_s = 4.0

    def run_and_kill(self, args: list[str], by_time: bool = False) -> bool:
        """True when the process was killed, False when it finished first."""
        before = self.count()
        by_count = self.rng.random() < 0.6 and not by_time
        target = before + self.rng.randint(1, 40)
        delay = self.rng.uniform(0.05, self.full_run_s)
        proc = subprocess.Popen(
            self.cmd + args, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        started = time.monotonic()
        while proc.poll() is None:
            elapsed = time.monotonic() - started
            if (by_count and self.count() >= target) or (not by_count and elapsed >= delay):
                break
            assert elapsed < 120, "a run hung"
            time.sleep(0.002)
        if proc.poll() is not None:
            assert proc.returncode == 0, proc.stderr.read().decode()
            self.full_run_s = max(0.3, time.monotonic() - started)
            return False
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        self.kills.append(
            {
                "command": args[0],
                "how": "count" if by_count else "time",
                "after_s": round(time.monotonic() - started, 3),
                "documents_before": before,
                "documents_at_kill": self.count(),
            }
        )
        return True


def test_sigkill_at_random_points_then_resume(tmp_path, kb_script, kb_env, run_kb, check_db):
    seed = int(os.environ.get("KB_FAULT_SEED") or time.time_ns() % 1_000_000)
    rng = random.Random(seed)
    print(f"\nfault test seed: {seed} (KB_FAULT_SEED={seed} replays it)")
    started = time.monotonic()
    corpus = tmp_path / "corpus"
    make_corpus(corpus)
    clean_env = dict(kb_env, KB_DATA_DIR=str(tmp_path / "clean"))
    run_kb("init", KB_DATA_DIR=str(tmp_path / "clean"))  # the model is converted before any kill

    data_dir = tmp_path / "faulty"
    db_path = data_dir / "kb.db"
    env = dict(kb_env, KB_DATA_DIR=str(data_dir))
    killer = Killer([sys.executable, str(kb_script)], env, db_path, rng)
    add, sync = ["add", str(corpus)], ["sync"]
    runs = 0
    while len(killer.kills) < KILLS_WHILE_ADDING:
        runs += 1
        killer.run_and_kill(add)
    mutations = [mutate(corpus, rng, 0)]
    while len(killer.kills) < KILLS_WHILE_ADDING + KILLS_WHILE_SYNCING:
        if (
            len(killer.kills) == KILLS_WHILE_ADDING + KILLS_WHILE_SYNCING // 2
            and len(mutations) < 2
        ):
            mutations.append(mutate(corpus, rng, 1))
        runs += 1
        killer.run_and_kill(sync)
    # an unkilled sync finishes the job (the root must have been remembered by then)
    final = json.loads(run_kb("sync", "--format", "json", KB_DATA_DIR=str(data_dir)).stdout)
    again = json.loads(
        run_kb("add", str(corpus), "--format", "json", KB_DATA_DIR=str(data_dir)).stdout
    )
    assert final["failed"] == [] and again["failed"] == []
    assert again["added"] + again["updated"] == 0  # nothing left over for `add` to do
    faulty_s = time.monotonic() - started

    clean_started = time.monotonic()
    clean = subprocess.run(
        [sys.executable, str(kb_script), "add", str(corpus), "--format", "json"],
        env=clean_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert clean.returncode == 0, clean.stderr
    clean_s = time.monotonic() - clean_started

    # kill `kb reindex --full` a few times too; an unkilled run finishes it
    reindex_kills = 0
    while reindex_kills < KILLS_WHILE_REINDEXING:
        runs += 1
        reindex_kills += killer.run_and_kill(["reindex", "--full"], by_time=True)
    killer.count.close()
    run_kb("reindex", KB_DATA_DIR=str(data_dir))

    check_db(db_path)
    want_docs, _ = db_signature(tmp_path / "clean" / "kb.db")
    expected_paths = {f"corpus/{p.relative_to(corpus).as_posix()}" for p in corpus.rglob("*.*")}
    assert set(want_docs) == expected_paths
    # Chunk for chunk the same as a clean run: titles (a renamed code file's title is its new
    # name), hashes, texts, locations and vectors.
    differences = compare_dbs(db_path, tmp_path / "clean" / "kb.db")
    assert differences == [], differences[:10]
    got_docs, got_chunks = db_signature(db_path)
    doctor = run_kb("doctor", "--format", "json", KB_DATA_DIR=str(data_dir), check=False)
    assert json.loads(doctor.stdout)["ok"], doctor.stdout

    report = {
        "seed": seed,
        "files": N_FILES,
        "final_documents": len(got_docs),
        "final_chunks": len(got_chunks),
        "chunk_differences_vs_clean": len(differences),
        "kills": len(killer.kills),
        "runs": runs,
        "kills_detail": killer.kills,
        "mutations": mutations,
        "final_sync": final["summary"],
        "faulty_total_s": round(faulty_s, 1),
        "clean_single_run_s": round(clean_s, 1),
    }
    (tmp_path / "fault-report.json").write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "kills_detail"}))
    print("documents at each kill:", [k["documents_at_kill"] for k in killer.kills])
    assert len(killer.kills) >= 20 + KILLS_WHILE_REINDEXING
