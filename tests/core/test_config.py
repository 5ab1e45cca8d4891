from pathlib import Path

import pytest

from kb_search.config import ConfigError, load_config


def test_zero_config_defaults(tmp_path: Path):
    cfg = load_config(env={}, cwd=tmp_path, home=tmp_path)
    assert cfg.data_dir == tmp_path / ".kb"
    assert cfg.db_path == tmp_path / ".kb" / "kb.db"
    assert cfg["search.default_top"] == 10
    assert cfg.sources["search.default_top"] == "default"


def test_precedence_flag_env_project_user(tmp_path: Path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.yaml").write_text("search:\n  default_top: 7\n  rrf_k: 50\nmodel: m-user\n")
    project = tmp_path / "proj" / "sub"
    project.mkdir(parents=True)
    (tmp_path / "proj" / ".kb.yaml").write_text("search:\n  rrf_k: 40\nmodel: m-project\n")
    env = {"KB_DATA_DIR": str(data), "KB_MODEL": "m-env"}
    cfg = load_config(env=env, cwd=project, home=tmp_path, flags={"search.rrf_k": 30})
    assert cfg["search.default_top"] == 7
    assert cfg.sources["search.default_top"] == str(data / "config.yaml")
    assert cfg["model"] == "m-env"
    assert cfg.sources["model"] == "env KB_MODEL"
    assert cfg["search.rrf_k"] == 30
    assert cfg.sources["search.rrf_k"] == "flag"
    cfg = load_config(env=env, cwd=project, home=tmp_path)
    assert cfg["search.rrf_k"] == 40
    assert cfg.sources["search.rrf_k"].endswith(".kb.yaml")
    assert cfg.sources["data_dir"] == "env KB_DATA_DIR"


def test_env_values_are_converted_and_checked(tmp_path: Path):
    cfg = load_config(env={"KB_DEFAULT_TOP": "25"}, cwd=tmp_path, home=tmp_path)
    assert cfg["search.default_top"] == 25
    with pytest.raises(ConfigError, match="search.default_top"):
        load_config(env={"KB_DEFAULT_TOP": "many"}, cwd=tmp_path, home=tmp_path)
    with pytest.raises(ConfigError, match="one of"):
        load_config(env={"KB_DEFAULT_MODE": "fuzzy"}, cwd=tmp_path, home=tmp_path)


def test_broken_and_unknown_config_files(tmp_path: Path):
    data = tmp_path / ".kb"
    data.mkdir()
    (data / "config.yaml").write_text("search: [unclosed\n")
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(env={}, cwd=tmp_path, home=tmp_path)
    (data / "config.yaml").write_text("serch:\n  top: 3\n")
    with pytest.raises(ConfigError, match="unknown setting"):
        load_config(env={}, cwd=tmp_path, home=tmp_path)


def test_explicit_config_path_must_exist(tmp_path: Path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(env={}, cwd=tmp_path, home=tmp_path, config_path=tmp_path / "nope.yaml")
