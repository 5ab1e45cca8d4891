"""Issue 33, breaks 3, 5, 6 and 11: what a project `.kb.yaml` from a cloned repository can do
through the settings it may set without trust, and through its shape.

The rules: every value from any config source is checked against the settings schema (type
and range) before use, an invalid one being one line naming the file, the key and what is
allowed; YAML aliases are refused and nesting bounded before anything is built; trust is keyed
to the file and the folder it governs, so a symlinked project file is never trusted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import kb_search  # noqa: E402
from kb_search.config import ConfigError, load_config, trust_project_file

SRC = str(Path(kb_search.__file__).resolve().parents[1])  # the code under test, for subprocesses


def load(cwd: Path, home: Path, **env: str):
    return load_config(env=env, cwd=cwd, home=home)


def repo_with(tmp_path: Path, text: str) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    (repo / ".kb.yaml").write_text(text, encoding="utf-8")
    return repo


def one_line_config_error(repo: Path, home: Path, key: str, allowed: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load(repo, home)
    message = str(caught.value)
    assert "\n" not in message
    assert str(repo / ".kb.yaml") in message and key in message and allowed in message, message
    return message


# ---- break 11: project-safe values are validated --------------------------------------------


@pytest.mark.parametrize(
    ("text", "key", "allowed"),
    [
        ("search: {fusion: rrf, rrf_k: -1}", "search.rrf_k", "an integer from 1 to 100,000"),
        ("search: {rrf_k: 0}", "search.rrf_k", "an integer from 1 to 100,000"),
        ("search: {warm_idle_s: .nan}", "search.warm_idle_s", "a number above 0"),
        ("search: {warm_idle_s: .inf}", "search.warm_idle_s", "a number above 0"),
        ("search: {warm_idle_s: -5}", "search.warm_idle_s", "a number above 0"),
        ("search: {default_top: [1, 2]}", "search.default_top", "an integer from 1 to 1,000"),
        ("search: {warm: maybe}", "search.warm", "true or false"),
        ("query_prefix: {a: 1}", "query_prefix", "text of at most 1,000 characters"),
        ("vectors: {ann_min_chunks: 1.5}", "vectors.ann_min_chunks", "an integer"),
        ("ingestion: {ray_stall_s: .nan}", "ingestion.ray_stall_s", "a number from 0"),
    ],
)
def test_a_value_out_of_its_range_is_one_line_naming_file_key_and_range(
    tmp_path, text, key, allowed
):
    repo = repo_with(tmp_path, text + "\n")
    one_line_config_error(repo, tmp_path, key, allowed)


def test_every_source_is_checked_the_same_way(tmp_path):
    with pytest.raises(ConfigError, match=r"env KB_RRF_K: search.rrf_k '-1' is not allowed"):
        load(tmp_path, tmp_path, KB_RRF_K="-1")
    with pytest.raises(ConfigError, match=r"env KB_WARM_IDLE_S: search.warm_idle_s 'nan'"):
        load(tmp_path, tmp_path, KB_WARM_IDLE_S="nan")
    data = tmp_path / ".kb"
    data.mkdir()
    (data / "config.yaml").write_text("embedding:\n  timeout_s: 0\n")
    with pytest.raises(ConfigError, match=r"config.yaml: embedding.timeout_s 0 is not allowed"):
        load(tmp_path, tmp_path)


def test_rrf_k_minus_one_no_longer_reaches_a_search(kb, environment, sample, tmp_path):
    """On the old code this searched with k = -1: ZeroDivisionError on every hybrid search."""
    kb("add", str(sample))
    repo = repo_with(tmp_path, "search: {fusion: rrf, rrf_k: -1}\n")
    environment.cwd = repo
    result = kb("search", "deploy", "--format", "json", ok=False)
    assert result.exit_code == 1, result.output
    (line,) = result.stderr.strip().splitlines()
    assert "search.rrf_k -1 is not allowed" in line and str(repo / ".kb.yaml") in line
    assert "Traceback" not in result.output + result.stderr


def test_secrets_are_never_repeated_in_the_error(tmp_path):
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, tmp_path, KB_API_KEY="sk-secret\nsecond line")
    assert "sk-secret" not in str(caught.value) and "embedding.api_key" in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, tmp_path, KB_EMBEDDING_ENDPOINT="ftp://user:hunter2@host/")
    assert "hunter2" not in str(caught.value) and "http:// or https://" in str(caught.value)


def test_every_setting_has_a_kind_that_says_what_is_allowed():
    from kb_search.settings import SETTINGS, Kind

    for setting in SETTINGS:
        assert isinstance(setting.convert, Kind), setting.key
        assert setting.convert.allowed, setting.key
        if setting.default is not None:
            assert setting.convert(setting.default) == setting.default, setting.key


# ---- break 5: chunking values that drop documents or multiply chunks --------------------------


@pytest.mark.parametrize("value", [0, 1, 31, -200, 10**9])
def test_chunk_sizes_that_empty_or_explode_documents_are_refused(tmp_path, value):
    repo = repo_with(tmp_path, f"chunking:\n  max_tokens: {value}\n")
    one_line_config_error(repo, tmp_path, "chunking.max_tokens", "an integer from 32 to 8,192")


def test_kb_sync_in_a_hostile_repo_drops_no_document_of_another_root(kb, environment, tmp_path):
    """On the old code `kb sync` in a repo whose .kb.yaml says max_tokens: 0 re-parsed the
    changed notes of a root outside the repo and dropped them: 2 documents -> 0."""
    notes = tmp_path / "notes"
    notes.mkdir()
    for name in ("a.md", "b.md"):
        (notes / name).write_text(f"# {name}\n\nsome text about deploys\n", encoding="utf-8")
    kb("add", str(notes))
    for name in ("a.md", "b.md"):
        (notes / name).write_text(f"# {name}\n\nchanged text about rollbacks\n", "utf-8")
    repo = repo_with(tmp_path, "chunking:\n  max_tokens: 0\n")
    environment.cwd = repo
    synced = kb("sync", ok=False)
    assert synced.exit_code == 1 and "chunking.max_tokens 0 is not allowed" in synced.stderr
    environment.cwd = tmp_path
    assert kb.json("stats")["documents"] == 2


# ---- break 6: YAML aliases, before any trust check --------------------------------------------


def alias_bomb(levels: int) -> str:
    """Nested aliases under a setting a project file may set without trust: each level nine
    references to the one before, so its text is 9**levels times the first."""
    items = ['&a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        items.append(f"&a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "query_prefix: [" + ", ".join(items) + "]\n"


def test_an_alias_bomb_is_refused_at_once_by_every_command(tmp_path):
    """621 bytes of nested aliases cost the old code 55 s and 2.7 GB, then MemoryError, in every
    command run in that tree; a separate process, so a regression cannot take the suite down."""
    repo = repo_with(tmp_path, alias_bomb(9))
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KB_", "XDG_"))}
    env.update(HOME=str(home), PYTHONPATH=SRC, KB_NO_WARM="1")
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-c", _LIMITED_CONFIG_SHOW],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=20,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the alias bomb was expanded (no answer in 20 s)")
    assert time.monotonic() - started < 20
    assert done.returncode == 1, done.stderr[-500:]
    (line,) = done.stderr.strip().splitlines()
    assert "YAML alias" in line and str(repo / ".kb.yaml") in line and len(line) < 300


# `kb config show` under a 1 GiB address-space cap: the old code's expansion fails fast (and
# fails this test) instead of eating the machine.
_LIMITED_CONFIG_SHOW = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from kb_search.cli import main
sys.argv = ["kb", "config", "show", "--format", "json"]
main()
"""


def test_any_alias_deep_nesting_or_huge_file_is_one_line(tmp_path):
    repo = repo_with(tmp_path, "search: &s {default_top: 3}\nchunking: *s\n")
    with pytest.raises(ConfigError, match=r"YAML alias \(\*s\)"):
        load(repo, tmp_path)
    repo = repo_with(tmp_path, "search: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError, match="nests deeper than 8 levels"):
        load(repo, tmp_path)
    repo = repo_with(tmp_path, "# padding\n" * 40_000)
    with pytest.raises(ConfigError, match="larger than 256 KiB"):
        load(repo, tmp_path)
    # an anchor alone is harmless and still reads
    repo = repo_with(tmp_path, "search: &s {default_top: 3}\n")
    assert load(repo, tmp_path)["search.default_top"] == 3


def test_a_fifo_project_file_does_not_hang(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    os.mkfifo(repo / ".kb.yaml")
    # not a regular file: walking up passes it by, as it always did; nothing waits on it
    assert load(repo, tmp_path).project_file is None


# ---- break 3: a symlinked project file ----------------------------------------------------


def test_a_symlinked_project_file_carries_no_trust(tmp_path):
    """On the old code `repo/.kb.yaml -> ../trusted/.kb.yaml` was trusted, with its relative
    paths resolved inside the untrusted repo (kb wrote repo/kbdata/kb.db)."""
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    trusted = tmp_path / "trusted"
    trusted.mkdir()
    (trusted / ".kb.yaml").write_text("data_dir: ./kbdata\nmodel_source: ./mymodel\n")
    trust_project_file(trusted / ".kb.yaml", env, tmp_path)
    cfg = load(trusted, tmp_path, **env)
    assert cfg.project_trusted is True and cfg.data_dir == trusted / "kbdata"

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".kb.yaml").symlink_to(Path("..") / "trusted" / ".kb.yaml")
    cfg = load(repo, tmp_path, **env)
    assert cfg.project_trusted is None
    assert cfg.ignored == ["data_dir", "model_source"]
    assert cfg.data_dir == tmp_path / ".kb" and cfg["model_source"] is None
    assert "symbolic link" in cfg.ignored_line() and "\n" not in cfg.ignored_line()
    with pytest.raises(ConfigError, match="is a symbolic link"):
        trust_project_file(repo / ".kb.yaml", env, tmp_path)


def test_config_show_and_add_in_a_symlinked_repo(kb, environment, tmp_path):
    environment.env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    trusted = tmp_path / "trusted"
    trusted.mkdir()
    (trusted / ".kb.yaml").write_text("data_dir: ./kbdata\n")
    environment.cwd = trusted
    kb("config", "trust")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".kb.yaml").symlink_to(trusted / ".kb.yaml")
    (repo / "note.md").write_text("# Note\n\nhello\n")
    environment.cwd = repo
    del environment.env["KB_DATA_DIR"]
    shown = json.loads(kb("config", "show", "--format", "json").stdout)
    (entry,) = [f for f in shown["files"] if f["kind"] == "project"]
    assert entry["trust"] == "not trusted (a symbolic link)"
    assert shown["data_dir"]["source"] == "default"
    added = kb("add", ".", "--format", "json")
    assert not (repo / "kbdata").exists()
    assert "symbolic link" in added.stderr


# ---- break 4: secrets in `kb config show` and the log ---------------------------------------


def test_config_show_and_the_log_never_show_url_userinfo(kb, environment, tmp_path, monkeypatch):
    environment.env["KB_EMBEDDING_ENDPOINT"] = "http://alice:pw-hunter2@127.0.0.1:8000/v1"
    environment.env["KB_API_KEY"] = "sk-live-0123456789abcdef"
    shown = kb("config", "show", "--format", "json").stdout
    assert "pw-hunter2" not in shown and "sk-live" not in shown
    assert json.loads(shown)["embedding.endpoint"]["value"] == "http://***@127.0.0.1:8000/v1"
    human = kb("config", "show", "--format", "human").stdout
    assert "pw-hunter2" not in human and "alice" not in human

    import logging

    from kb_search.logs import LOG_FILE_ENV, route_library_logs

    monkeypatch.setenv(LOG_FILE_ENV, "")  # restored after the test
    root_handlers = list(logging.getLogger().handlers)
    log = tmp_path / "kb.log"
    route_library_logs(log)
    logging.getLogger("some.library").warning(
        "retrying http://bob:s3cr3t-pw@host/x with Authorization: Bearer sk-abcdefgh12345678"
    )
    for handler in logging.getLogger().handlers:
        if handler not in root_handlers:
            logging.getLogger().removeHandler(handler)
            handler.close()
    text = log.read_text()
    assert "retrying http://***@host/x" in text and "s3cr3t" not in text and "sk-abc" not in text
