"""Break 1 of issue 25: `kb hook install` wrote the data-dir path into a `#` comment of the
hook; a newline in it (set by a cloned repository's .kb.yaml) ended the comment and the next
line ran as shell on every commit. Now an untrusted project file cannot set data_dir, and a
path with a control character is refused even when the user chose it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def env(tmp_path: Path, model_cache: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    src = str(Path(__file__).resolve().parents[2] / "src")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("KB_", "GIT_", "XDG_"))}
    return dict(
        base,
        HOME=str(home),
        PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]),
        KB_MODEL_CACHE=str(model_cache),
        KB_NO_WARM="1",
        HF_HUB_OFFLINE="1",
        GIT_AUTHOR_NAME="Test",
        GIT_AUTHOR_EMAIL="test@example.com",
        GIT_COMMITTER_NAME="Test",
        GIT_COMMITTER_EMAIL="test@example.com",
        GIT_CONFIG_NOSYSTEM="1",
    )


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "pwned"


@pytest.fixture
def cloned(tmp_path: Path, env: dict[str, str], marker: Path) -> Path:
    """A repository as cloned: its .kb.yaml names a data dir that breaks out of a comment."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    hostile = json.dumps(f"kbdata\ntouch {marker}\n#")
    (repo / ".kb.yaml").write_text(f"data_dir: {hostile}\n", encoding="utf-8")
    (repo / "note.md").write_text("# A note\n\nSome text.\n", encoding="utf-8")
    return repo


def kb(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kb_search", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def commit(repo: Path, env: dict[str, str]) -> None:
    subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)
    done = subprocess.run(
        ["git", "commit", "-q", "-m", "first"], cwd=repo, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def wait_for_hook_log(log: Path, timeout: float = 90) -> str:
    """The hook's background `kb hook run` has finished once it logged its line."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and log.read_text().strip():
            return log.read_text()
        time.sleep(0.2)
    raise AssertionError(f"the hook never logged to {log}")


def test_an_untrusted_project_file_cannot_inject_into_the_hook(cloned, env, marker):
    installed = kb(cloned, env, "hook", "install", "--format", "json")
    assert installed.returncode == 0, installed.stderr
    warning = installed.stderr.strip().splitlines()
    assert len(warning) == 1 and "ignored data_dir" in warning[0]
    assert "kb config trust" in warning[0]
    hook = Path(json.loads(installed.stdout)["hook"])
    assert str(marker) not in hook.read_text()
    commit(cloned, env)
    wait_for_hook_log(Path(env["HOME"]) / ".kb" / "hook.log")
    assert not marker.exists(), "the injected command ran on commit"


def test_a_trusted_data_dir_with_a_newline_is_refused(cloned, env, marker):
    assert kb(cloned, env, "config", "trust").returncode == 0
    refused = kb(cloned, env, "hook", "install")
    assert refused.returncode == 1
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "control character" in lines[0], refused.stderr
    assert "Traceback" not in refused.stderr
    assert not (cloned / ".git" / "hooks" / "post-commit").exists()
    commit(cloned, env)
    assert not marker.exists()


def test_a_data_dir_flag_with_a_newline_is_refused(cloned, env, marker, tmp_path):
    (cloned / ".kb.yaml").unlink()
    bad = f"{tmp_path}/data\ntouch {marker}\n#"
    refused = kb(cloned, env, "--data-dir", bad, "hook", "install")
    assert refused.returncode == 1 and "control character" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert not (cloned / ".git" / "hooks" / "post-commit").exists()
