"""The one lazy registry (`kb_search.registry.Registry`) and the kinds that use it: executors
and vector index backends, each with one signature."""

from __future__ import annotations

import inspect
import sys

import pytest

from kb_search.errors import ConfigError, UserInputError
from kb_search.registry import Registry


def test_an_entry_is_imported_only_when_loaded(tmp_path, monkeypatch):
    probe = "class Thing:\n    def make():\n        return 7\n"
    (tmp_path / "kb_registry_probe.py").write_text(probe)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "kb_registry_probe", raising=False)
    things = Registry("thing", {"probe": "kb_registry_probe:Thing.make"}, UserInputError)
    assert "probe" in things and list(things) == ["probe"]
    assert "kb_registry_probe" not in sys.modules
    assert things.load("probe")() == 7
    assert "kb_registry_probe" in sys.modules


def test_an_unknown_name_is_the_kinds_error_listing_the_names():
    things = Registry("thing", {"b": "json:dumps", "a": "json:loads"}, ConfigError)
    with pytest.raises(ConfigError, match=r"^unknown thing 'c': use one of a, b$"):
        things.load("c")


def test_an_entry_must_name_module_and_attribute():
    with pytest.raises(ValueError, match="module:attribute"):
        Registry("thing", {"x": "json"}, ConfigError)


def test_an_unknown_executor_lists_the_executors():
    from kb_search.ingest.executor import AddOptions, make_executor

    with pytest.raises(UserInputError, match=r"^unknown executor 'dask': use one of local, ray$"):
        make_executor("dask", None, AddOptions(), lambda: None)


def test_the_local_executor_loads_without_ray():
    from kb_search.ingest.executor import EXECUTORS, AddOptions, LocalExecutor

    assert isinstance(EXECUTORS.load("local")(None, AddOptions(), lambda: None), LocalExecutor)


def test_an_unknown_vector_index_lists_the_backends():
    from kb_search.vectors import open_index

    with pytest.raises(ConfigError, match=r"unknown vector index 'faiss': use one of ann, live-"):
        open_index(None, None, "faiss")  # type: ignore[arg-type]


def test_every_vector_backend_opens_with_one_signature():
    from kb_search.vectors import BACKENDS

    for name in BACKENDS:  # usearch is imported when an ann index opens, not with its module
        parameters = list(inspect.signature(BACKENDS.load(name)).parameters)
        assert parameters == ["conn", "table", "note"], name
