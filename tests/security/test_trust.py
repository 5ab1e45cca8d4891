"""Break 2 of issue 25: a repository's .kb.yaml could send your files to a cluster it names
(`ingestion.executor: ray`, `ray_address`), move the data dir, pick the model... and nothing
said where the setting came from. A project file now sets only harmless settings until the
user trusts it (`kb config trust`, by path and content hash); the rest is ignored with one
line saying which and how to trust."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kb_search.config import (
    PROJECT_SAFE,
    SENSITIVE_WORDS,
    SETTINGS_BY_KEY,
    load_config,
    needs_trust,
    trust_project_file,
)
from kb_search.trust import store_path

HOSTILE = """\
data_dir: elsewhere
db: elsewhere/kb.db
model: evil/model
model_source: weights
model_cache: cache
ingestion:
  executor: ray
  ray_address: ray://127.0.0.1:1
  follow_symlinks: true
search:
  reranker: evil/reranker
  default_top: 3
chunking:
  max_tokens: 150
"""
SENSITIVE = [
    "data_dir",
    "db",
    "ingestion.executor",
    "ingestion.follow_symlinks",
    "ingestion.ray_address",
    "model",
    "model_cache",
    "model_source",
    "search.reranker",
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    (repo / ".kb.yaml").write_text(HOSTILE, encoding="utf-8")
    return repo


def load(project: Path, home: Path, **env: str):
    return load_config(env=env, cwd=project / "sub", home=home)


def test_an_untrusted_project_file_sets_only_harmless_settings(project, tmp_path):
    cfg = load(project, tmp_path)
    assert cfg.ignored == SENSITIVE
    assert cfg.data_dir == tmp_path / ".kb" and cfg.sources["data_dir"] == "default"
    assert cfg.db_path == tmp_path / ".kb" / "kb.db"
    assert cfg["ingestion.executor"] == "local" and cfg["ingestion.ray_address"] is None
    assert cfg["model_source"] is None and cfg["search.reranker"] == "none"
    assert cfg["ingestion.follow_symlinks"] is False
    assert cfg["search.default_top"] == 3 and cfg["chunking.max_tokens"] == 150
    assert "kb config trust" in cfg.ignored_line() and "\n" not in cfg.ignored_line()


def test_trust_is_by_content_and_recorded_outside_the_data_dir(project, tmp_path):
    config_home = tmp_path / "xdg"
    env = {"XDG_CONFIG_HOME": str(config_home)}
    done = trust_project_file(project / ".kb.yaml", env, tmp_path)
    assert Path(done["store"]) == store_path(env, tmp_path) == config_home / "kb" / "trusted.json"
    cfg = load(project, tmp_path, **env)
    assert cfg.ignored == [] and cfg.project_trusted is True
    assert cfg.data_dir == project / "elsewhere" and cfg["ingestion.executor"] == "ray"
    # an edit takes the trust away
    with (project / ".kb.yaml").open("a") as fh:
        fh.write("# one more line\n")
    cfg = load(project, tmp_path, **env)
    assert cfg.ignored == SENSITIVE and cfg.project_trusted is False
    assert "changed since you trusted it" in cfg.ignored_line()
    # a project file cannot point kb at another trust store (the data dir is not it)
    records = json.loads((config_home / "kb" / "trusted.json").read_text())["files"]
    assert list(records) == [os.path.realpath(project / ".kb.yaml")]


def test_new_settings_need_trust_unless_listed_safe():
    for key in ("embedding.endpoint", "embedding.api_key", "search.some_new_knob", "hook_path"):
        assert needs_trust(key)
    for key in PROJECT_SAFE:
        assert key in SETTINGS_BY_KEY, key
        words = set(key.replace(".", "_").split("_"))
        assert not words & SENSITIVE_WORDS, key
        assert not needs_trust(key)
    for key in SENSITIVE:
        assert needs_trust(key)


def kb(cwd: Path, env: dict[str, str], *args: str, timeout: float = 120):
    return subprocess.run(
        [sys.executable, "-m", "kb_search", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def listener():
    """A real TCP server standing in for the cluster a hostile file names: records whether
    anything connected."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    connected = threading.Event()
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            connected.set()
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], connected
    stop.set()
    thread.join()
    server.close()


def test_kb_add_in_a_cloned_repo_never_connects_to_the_cluster_it_names(
    tmp_path, model_cache, listener
):
    port, connected = listener
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".kb.yaml").write_text(
        f"ingestion:\n  executor: ray\n  ray_address: ray://127.0.0.1:{port}\n", encoding="utf-8"
    )
    (repo / "note.md").write_text("# Note\n\nThe launch code is swordfish.\n", encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KB_", "XDG_", "RAY_"))}
    env.update(
        HOME=str(home),
        PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]),
        KB_MODEL_CACHE=str(model_cache),
        KB_NO_WARM="1",
        KB_WORKERS="0",
        HF_HUB_OFFLINE="1",
    )
    try:
        added = kb(repo, env, "add", ".", "--format", "json", timeout=90)
    except subprocess.TimeoutExpired:
        added = None
    assert not connected.is_set(), "kb add connected to the cluster an untrusted file named"
    assert added is not None and added.returncode == 0, added and added.stderr
    warning = [line for line in added.stderr.splitlines() if "ignored" in line]
    assert len(warning) == 1, added.stderr
    assert "ingestion.executor, ingestion.ray_address" in warning[0]
    assert f"kb config trust {repo / '.kb.yaml'}" in warning[0]
    assert json.loads(added.stdout)["added"] == 2  # note.md and .kb.yaml
    shown = json.loads(kb(repo, env, "config", "show", "--format", "json").stdout)
    assert shown["ingestion.executor"] == {
        "value": "local",
        "source": "default",
        "ignored_from": str(repo / ".kb.yaml"),
    }
    (project_entry,) = [f for f in shown["files"] if f["kind"] == "project"]
    assert project_entry["trust"] == "not trusted"
    assert kb(repo, env, "config", "trust").returncode == 0
    shown = json.loads(kb(repo, env, "config", "show", "--format", "json").stdout)
    assert shown["ingestion.ray_address"]["value"] == f"ray://127.0.0.1:{port}"
    assert shown["files"][-1]["trust"] == "trusted"
    assert kb(repo, env, "config", "untrust").returncode == 0
    shown = json.loads(kb(repo, env, "config", "show", "--format", "json").stdout)
    assert shown["ingestion.ray_address"]["value"] is None


def test_trust_without_a_project_file_is_one_line(kb):
    result = kb("config", "trust", ok=False)
    assert result.exit_code == 1 and "no .kb.yaml" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_config_show_names_the_files_and_the_project_trust(kb, environment, project):
    environment.cwd = project / "sub"
    shown = kb("config", "--format", "human").stdout
    assert f"{project / '.kb.yaml'} (project file, not trusted)" in shown
    assert "ignored data_dir, db" in shown and "kb config trust" in shown
    assert "Trust records: " in shown
