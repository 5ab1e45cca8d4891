"""`kb hook install`: a post-commit hook in a throwaway repo keeps the index in step."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kb_search import git_hook as hooks
from kb_search.store import db

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def git_env(kb_env, tmp_path):
    env = dict(
        kb_env,
        GIT_AUTHOR_NAME="Test",
        GIT_AUTHOR_EMAIL="test@example.com",
        GIT_COMMITTER_NAME="Test",
        GIT_COMMITTER_EMAIL="test@example.com",
        GIT_CONFIG_NOSYSTEM="1",
        KB_WORKERS="0",
    )
    env.pop("GIT_DIR", None)
    return env


@pytest.fixture
def repo(tmp_path, git_env):
    path = tmp_path / "repo"
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=git_env)
    return path


def git(repo: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=60
    )


def commit(repo: Path, env: dict, message: str) -> str:
    git(repo, env, "add", "-A")
    done = git(repo, env, "commit", "-q", "-m", message)
    assert done.returncode == 0, done.stderr
    return git(repo, env, "rev-parse", "HEAD").stdout.strip()


def wait_for_log(log: Path, sha: str, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text() if log.exists() else ""
        lines = [line for line in text.splitlines() if f"@{sha[:12]}:" in line]
        if lines:
            return lines[-1]
        time.sleep(0.1)
    raise AssertionError(f"the hook did not log commit {sha[:12]}:\n{text}")


def documents(db_path: Path) -> dict[str, int]:
    conn = db.connect(db_path, readonly=True)
    try:
        return dict(conn.execute("SELECT rel_path, id FROM documents").fetchall())
    finally:
        conn.close()


@pytest.mark.slow
def test_hook_syncs_what_each_commit_touched(
    repo, git_env, run_kb, kb_script, tmp_path, monkeypatch, check_db
):
    data_dir = tmp_path / "data"
    monkeypatch.setattr(hooks, "kb_command", lambda: [sys.executable, str(kb_script)])
    run_kb("add", str(repo))  # an empty repo: remembers the root
    # a hook that was there before keeps running
    previous = Path(hooks.hooks_dir(repo)) / "post-commit"
    previous.write_text(f"#!/bin/sh\necho ran >> '{tmp_path / 'previous-ran'}'\n")
    previous.chmod(0o755)
    from click.testing import CliRunner

    from kb_search.cli import cli
    from kb_search.environment import Environment

    result = CliRunner().invoke(
        cli,
        ["hook", "install", str(repo), "--format", "json"],
        obj=Environment(env=git_env, cwd=tmp_path, stdout_isatty=False, stderr_isatty=False),
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert (Path(hooks.hooks_dir(repo)) / hooks.CHAINED_NAME).exists()

    (repo / "a.md").write_text("# A\n\nAlpha note about aardvarks.\n")
    (repo / "b.md").write_text("# B\n\nBeta note about badgers.\n")
    (repo / "c.md").write_text("# C\n\nGamma note about cassowaries, long enough to move.\n")
    first = commit(repo, git_env, "first commit")
    line = wait_for_log(data_dir / "hook.log", first)
    assert "3 added" in line, line
    docs = documents(data_dir / "kb.db")
    assert set(docs) == {"repo/a.md", "repo/b.md", "repo/c.md"}
    assert (tmp_path / "previous-ran").read_text().strip() == "ran"

    (repo / "a.md").write_text("# A\n\nAlpha now talks about anteaters.\n")
    (repo / "b.md").unlink()
    (repo / "docs").mkdir()
    assert git(repo, git_env, "mv", "c.md", "docs/c.md").returncode == 0
    second = commit(repo, git_env, "modify, delete, rename")
    line = wait_for_log(data_dir / "hook.log", second)
    assert "1 updated, 1 renamed, 1 deleted" in line, line
    after = documents(data_dir / "kb.db")
    assert set(after) == {"repo/a.md", "repo/docs/c.md"}
    assert after["repo/docs/c.md"] == docs["repo/c.md"]
    search = run_kb("search", "anteaters", "--mode", "lexical", "--format", "json")
    assert '"repo/a.md"' in search.stdout or "a.md" in search.stdout
    check_db(data_dir / "kb.db")

    # reinstalling updates our hook in place and keeps the chained one
    result = CliRunner().invoke(
        cli,
        ["hook", "install", str(repo), "--format", "json"],
        obj=Environment(env=git_env, cwd=tmp_path, stdout_isatty=False, stderr_isatty=False),
    )
    assert json.loads(result.output)["updated"] is True
    assert (Path(hooks.hooks_dir(repo)) / hooks.CHAINED_NAME).exists()


@pytest.mark.parametrize(
    "kb",
    [
        ["/nonexistent/bin/kb"],
        [sys.executable, "-c", "import sys, time; time.sleep(8); sys.exit(3)"],
    ],
    ids=["missing-kb", "slow-failing-kb"],
)
def test_a_failing_kb_never_fails_or_blocks_a_commit(repo, git_env, tmp_path, kb):
    data_dir = tmp_path / "data"
    hooks.install_hook(repo, data_dir, kb)
    (repo / "x.md").write_text("# X\n\nSomething.\n")
    started = time.monotonic()
    git(repo, git_env, "add", "-A")
    done = git(repo, git_env, "commit", "-q", "-m", "commit with a broken kb")
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert elapsed < 5, f"the commit waited {elapsed:.1f} s for the hook"
    assert git(repo, git_env, "log", "--oneline").stdout.count("\n") == 1


def test_commit_paths_handles_first_commit_and_odd_names(repo, git_env):
    (repo / "with space.md").write_text("x\n")
    (repo / "ünïcode.md").write_text("y\n")
    sha = commit(repo, git_env, "root commit")
    paths = hooks.commit_paths(repo, sha)
    top = repo.resolve()
    assert sorted(paths) == sorted([top / "with space.md", top / "ünïcode.md"])
    os.replace(repo / "with space.md", repo / "renamed.md")
    sha = commit(repo, git_env, "rename")
    assert sorted(hooks.commit_paths(repo, sha)) == sorted(
        [top / "with space.md", top / "renamed.md"]
    )


def test_install_outside_a_repo_is_a_user_error(kb, tmp_path):
    result = kb("hook", "install", str(tmp_path), ok=False)
    assert result.exit_code == 1 and "not inside a git work tree" in result.stderr


def test_uninstall_restores_the_chained_hook(repo, tmp_path):
    directory = hooks.hooks_dir(repo)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "post-commit").write_text("#!/bin/sh\necho mine\n")
    hooks.install_hook(repo, tmp_path / "data", ["kb"])
    assert hooks.MARKER in (directory / "post-commit").read_text()
    assert hooks.uninstall_hook(repo)
    assert (directory / "post-commit").read_text() == "#!/bin/sh\necho mine\n"
    assert not (directory / hooks.CHAINED_NAME).exists()
