"""Breaks 12 and 13 of issue 25: `kb export --force /dev/full` replaced the device node with a
regular file (FIFOs likewise); on a damaged DB, stats said "`kb export` saves what is readable"
and export failed with the same message. Export now writes only regular files, atomically,
and salvages the readable rows of a damaged database."""

from __future__ import annotations

import os
import random
import stat
from pathlib import Path

import pytest

from kb_search.doctor import storage_checks
from kb_search.store import db


def test_export_never_replaces_a_fifo_even_with_force(kb, sample, tmp_path):
    kb("add", str(sample))
    fifo = tmp_path / "pipe.db"
    os.mkfifo(fifo)
    result = kb("export", "--force", str(fifo), ok=False)
    assert result.exit_code == 1 and "FIFO" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_export_never_replaces_a_device_or_a_link_to_one(kb, sample, tmp_path):
    kb("add", str(sample))
    link = tmp_path / "null.db"
    link.symlink_to("/dev/null")
    result = kb("export", "--force", str(link), ok=False)
    assert result.exit_code == 1 and "device" in result.stderr
    assert link.is_symlink() and stat.S_ISCHR(os.stat("/dev/null").st_mode)
    node = tmp_path / "device.db"
    try:
        os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # what /dev/null is
    except PermissionError:
        return  # making a device node needs root; the link above covered the rule
    result = kb("export", "--force", str(node), ok=False)
    assert result.exit_code == 1 and "device" in result.stderr
    assert stat.S_ISCHR(os.lstat(node).st_mode)


def test_export_leaves_only_the_copy_behind(kb, sample, tmp_path):
    kb("add", str(sample))
    out = tmp_path / "out"
    out.mkdir()
    (out / "kb.db").write_text("old copy")
    kb("export", "--force", str(out / "kb.db"))
    assert os.listdir(out) == ["kb.db"]
    assert stat.S_ISREG(os.lstat(out / "kb.db").st_mode)


def make_corpus(root: Path, count: int) -> None:
    root.mkdir()
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "omega"]
    rng = random.Random(7)
    for i in range(count):
        body = "\n\n".join(
            " ".join(rng.choice(words) for _ in range(60)) + f" marker{i}x" for _ in range(4)
        )
        (root / f"n{i:04d}.md").write_text(f"# Note {i}\n\n{body}\n")


def corrupt(path: Path) -> None:
    """Overwrite whole pages in the middle of a real DB file with random bytes."""
    conn = db.sqlite.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    pages = path.stat().st_size // page
    rng = random.Random(25)
    with path.open("r+b") as fh:
        for fraction in (0.35, 0.5, 0.65):
            fh.seek(int(pages * fraction) * page)
            fh.write(rng.randbytes(page * 2))


def intact(path: Path) -> bool:
    check = db.sqlite.connect(str(path))
    try:
        return [r[0] for r in check.execute("PRAGMA integrity_check")] == ["ok"]
    except db.DatabaseError:
        return False
    finally:
        check.close()


def test_export_salvages_a_damaged_database(kb, environment, tmp_path):
    corpus = tmp_path / "corpus"
    make_corpus(corpus, 300)
    kb("add", str(corpus))
    live = Path(environment.env["KB_DATA_DIR"]) / "kb.db"
    before = kb.json("stats")["documents"]
    corrupt(live)
    assert not intact(live)
    for command in ("stats", "list"):  # whatever advice a damaged read gives, export follows it
        said = kb(command, ok=False)
        assert said.exit_code == 0 or "kb export" in said.stderr, said.stderr

    target = tmp_path / "saved.db"
    result = kb("export", str(target), "--format", "json", ok=False)
    assert result.exit_code == 0, result.stderr
    out = __import__("json").loads(result.stdout)
    assert out["salvage"] is not None and out["salvage"]["unreadable_ranges"] > 0
    assert 0 < out["documents"] <= before
    copy = db.connect(target)
    try:
        problems = [f"{c.name}: {c.detail}" for c in storage_checks(copy) if not c.ok]
        assert problems == []
        kept = copy.execute("SELECT count(*) FROM documents").fetchone()[0]
    finally:
        copy.close()
    assert kept == out["documents"]
    hits = kb.json("--db", str(target), "search", "alpha", "--mode", "hybrid")
    assert hits["results"]
    human = kb("export", str(tmp_path / "again.db"), "--format", "human").stdout
    assert "damaged" in human and "kb sync" in human


@pytest.fixture
def environment(environment):
    environment.env["KB_WORKERS"] = "0"
    return environment


def test_export_into_a_read_only_folder_is_one_line(kb, sample, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    kb("add", str(sample))
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    result = kb("export", str(locked / "kb.db"), ok=False)
    assert result.exit_code == 1 and "cannot write in" in result.stderr
    assert os.listdir(locked) == []
