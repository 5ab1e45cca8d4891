"""`models.loaded.Models` is the one owner of models: it hands ingest the writing model (lazy)
and its tokenizer, search its rerankers, ask its chat model; the options that cross the ingest
seam are frozen, and where ingestion runs is one `ExecutorChoice`."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kb_search.config import load_config
from kb_search.errors import ConfigError
from kb_search.executor_choice import ExecutorChoice
from kb_search.ingest.executor import AddOptions, add_options
from kb_search.knowledge_base import KnowledgeBase
from kb_testing import HashEmbedder


def config_in(tmp_path: Path, **env: str):
    return load_config(env={"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0", **env})


def test_add_options_cannot_be_changed_once_made():
    options = AddOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.tokenizer_path = "tokenizer.json"  # type: ignore[misc]
    assert dataclasses.replace(options, tokenizer_path="t.json").tokenizer_path == "t.json"


def test_an_executor_choice_carries_its_own_settings_and_the_flags_over_them(tmp_path):
    config = config_in(tmp_path, KB_RAY_STALL_S="6", KB_RAY_ADDRESS="ray://head:10001")
    ray = ExecutorChoice.configured(config, "ray", address=None)
    assert ray == ExecutorChoice("ray", {"address": "ray://head:10001", "stall_s": 6.0})
    flagged = ExecutorChoice.configured(config, "ray", address="auto")
    assert flagged.option("address") == "auto" and flagged.option("stall_s") == 6.0
    local = ExecutorChoice.configured(config)  # ingestion.executor: local, which has no settings
    assert local == ExecutorChoice() and dict(local.options) == {}
    with pytest.raises(TypeError):
        ray.options["stall_s"] = 1.0  # type: ignore[index]
    assert add_options(config, executor=ray).executor is ray
    assert add_options(config).executor == local


def test_the_writing_model_comes_lazily_with_its_tokenizer(tmp_path):
    hasher = HashEmbedder()
    with KnowledgeBase(config_in(tmp_path), embedder=hasher, cwd=tmp_path) as kb:
        conn = kb.writer(create=True)
        writing = kb.models.for_writing(conn)
        assert writing.vectors.model == hasher.name and not writing.vectors.loaded
        assert writing.tokenizer_path is None  # the in-process model has none: the estimate
        assert writing.vectors.load() is not None and writing.vectors.model_loaded


def test_rerankers_and_the_chat_model_are_built_once_by_the_models(tmp_path, monkeypatch):
    from kb_search.models import rerankers

    built: list[str] = []

    class Named:
        def __init__(self, name: str) -> None:
            self.name = name

        def rerank(self, query, candidates, deadline=None):
            return candidates

    def factory(name, cache_dir, settings):
        built.append(name)
        return Named(name)

    monkeypatch.setitem(rerankers.RERANKERS, "mine", factory)
    with KnowledgeBase(config_in(tmp_path, KB_RERANKER="mine"), embedder=HashEmbedder()) as kb:
        assert kb.models.reranker() is kb.models.reranker("mine")
        assert kb.models.reranker("none") is None
        assert built == ["mine"]
        with pytest.raises(ConfigError, match="no chat model is configured"):
            kb.models.chat()


def test_every_vector_index_a_user_can_name_is_a_real_choice():
    from kb_search.settings import SETTINGS_BY_KEY
    from kb_search.vectors import BACKENDS

    assert set(BACKENDS) == {"sqlite-vec", "live-matrix", "ann"}
    described = SETTINGS_BY_KEY["vectors.index"].help
    assert "matrix," not in described.replace("live-matrix", "")
    assert "shortlist" not in described  # the warm server's own form of sqlite-vec


def test_the_warm_servers_sqlite_vec_is_not_a_users_choice(tmp_path):
    from kb_search.profile import Profile
    from kb_search.store import db
    from kb_search.vectors import choose_backend

    conn = db.connect(tmp_path / "kb.db", create=True)
    assert choose_backend(conn, "sqlite-vec", Profile.WARM, 0) == "sqlite-vec-shortlist"
    with pytest.raises(ConfigError, match="sqlite-vec, live-matrix, ann|live-matrix"):
        choose_backend(conn, "sqlite-vec-shortlist", Profile.ONE_SHOT, 0)
