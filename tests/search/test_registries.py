"""The kinds that share `kb_search.registry.Registry`: file parsers, rerankers and embedding
models, each imported when chosen and each with one signature (executors and vector index
backends: tests/test_registry.py)."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from kb_search.config import load_config
from kb_search.errors import ConfigError, UserInputError
from kb_search.registry import Registry
from kb_testing import HashEmbedder

# --- the helper: entries made in process -----------------------------------------------------


def test_an_entry_made_in_process_is_registered_as_the_object_itself():
    def make() -> int:
        return 7

    things = Registry("thing", {"json": "json:dumps"}, ConfigError)
    things["made"] = make
    assert things.load("made") is make and things.get("made") is make
    del things["made"]
    with pytest.raises(ConfigError, match=r"^unknown thing 'made': use one of json$"):
        things.load("made")


def test_a_patched_entry_is_undone_after_the_test(monkeypatch):
    things = Registry("thing", {"json": "json:dumps"}, ConfigError)
    with monkeypatch.context() as patch:
        patch.setitem(things, "made", len)
        assert things.load("made") is len
    assert list(things) == ["json"]


def test_a_string_entry_still_names_module_and_attribute():
    things = Registry("thing", {}, ConfigError)
    with pytest.raises(ValueError, match="module:attribute"):
        things["x"] = "json"


# --- parsers ---------------------------------------------------------------------------------


def test_every_format_names_a_parser_of_one_signature():
    from kb_search.formats.registry import FORMATS, PARSERS

    assert {fmt.parser for fmt in FORMATS} == set(PARSERS)  # none missing, none unused
    for name in PARSERS:
        assert list(inspect.signature(PARSERS.load(name)).parameters) == ["source"], name


def test_an_unknown_parser_is_a_one_line_error_listing_the_parsers():
    from kb_search.formats.registry import Format

    with pytest.raises(UserInputError, match=r"^unknown parser 'nope': use one of asciidoc, "):
        Format("text", "nope").load_parser()


def test_a_parser_is_imported_only_when_a_file_needs_it():
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from kb_search.formats.registry import format_for\n"
        "fmt = format_for(Path('a.rtf'), sniff=False)\n"
        "assert 'kb_search.formats.rtf' not in sys.modules\n"
        "assert fmt.load_parser().__module__ == 'kb_search.formats.rtf'\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)


# --- rerankers -------------------------------------------------------------------------------


def test_every_reranker_is_built_with_one_signature():
    from kb_search.models.rerankers import RERANKERS

    assert set(RERANKERS) == {"tei:", "openai:", "jina:", "cohere:", "cross-encoder"}
    for name in RERANKERS:
        parameters = list(inspect.signature(RERANKERS.load(name)).parameters)
        assert parameters == ["name", "cache_dir", "settings"], name


def test_the_rerank_servers_are_the_endpoint_schemes():
    from kb_search.models.rerank_endpoint import SCHEMES
    from kb_search.models.rerankers import RERANKERS

    assert {name[:-1] for name in RERANKERS if name.endswith(":")} == set(SCHEMES)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("tei:bge-reranker-base", "tei:"),
        ("openai:BAAI/bge-reranker-v2-m3", "openai:"),
        ("jina:jina-reranker-v2", "jina:"),
        ("cohere:rerank-english-v3.0", "cohere:"),
        ("tei:", "tei:"),
        ("cross-encoder/ms-marco-MiniLM-L-6-v2", "cross-encoder"),
        ("/models/ce@int8", "cross-encoder"),
        ("other:thing", "cross-encoder"),
    ],
)
def test_a_reranker_name_chooses_a_server_scheme_else_a_cross_encoder(name, kind):
    from kb_search.models.rerankers import reranker_kind

    assert reranker_kind(name) == kind


class _Named:
    def __init__(self, name: str, cache_dir: Path, settings: object):
        self.name, self.cache_dir, self.settings = name, cache_dir, settings

    def rerank(self, query, candidates, deadline=None):
        return candidates


def test_a_registered_reranker_is_built_like_every_other(monkeypatch, tmp_path):
    from kb_search.models import rerankers as rerank

    monkeypatch.setitem(rerank.RERANKERS, "mine", _Named)
    monkeypatch.setitem(rerank.RERANKERS, "lab:", _Named)  # a scheme of one's own
    settings = {"rerank.endpoint": "x"}
    built = rerank.reranker_named("mine", tmp_path, settings)
    assert (built.name, built.cache_dir, built.settings) == ("mine", tmp_path, settings)
    assert rerank.reranker_named("lab:big", tmp_path).name == "lab:big"
    assert rerank.reranker_named("none", tmp_path) is None


def test_a_rerank_server_without_settings_is_a_config_error(tmp_path):
    from kb_search.models.rerankers import reranker_named

    with pytest.raises(ConfigError, match=r"^reranker 'jina:x' needs rerank.endpoint settings$"):
        reranker_named("jina:x", tmp_path)


# --- embedding models ------------------------------------------------------------------------


def test_every_embedder_is_made_with_one_signature():
    from kb_search.models.embedders import EMBEDDERS

    assert {"local", "openai:", "ollama:", HashEmbedder.name} <= set(EMBEDDERS)
    for name in EMBEDDERS:  # the test embedder (registered by conftest) included
        parameters = list(inspect.signature(EMBEDDERS.load(name)).parameters)
        assert parameters == ["config", "name", "one_shot", "recorded"], name


def test_the_remote_embedder_kinds_are_the_remote_schemes():
    from kb_search.embedding import REMOTE_SCHEMES
    from kb_search.models.embedders import EMBEDDERS

    assert {name[:-1] for name in EMBEDDERS if name.endswith(":")} == set(REMOTE_SCHEMES)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        (HashEmbedder.name, HashEmbedder.name),
        ("openai:text-embedding-3-small", "openai:"),
        ("ollama:nomic-embed-text", "ollama:"),
        ("openai:", "local"),  # no model after the scheme: not a remote model
        ("sentence-transformers/all-MiniLM-L6-v2", "local"),
        ("local", "local"),
    ],
)
def test_a_model_name_chooses_registered_then_remote_then_local(name, kind):
    from kb_search.models.embedders import embedder_kind

    assert embedder_kind(name) == kind


def test_each_embedder_kind_is_made_by_name(tmp_path):
    from kb_search.embedding.remote import RemoteEmbedder
    from kb_search.models.embedders import load_embedder, provisioned_info, provisioned_tokenizer

    config = load_config(env={"KB_DATA_DIR": str(tmp_path / "data")}, cwd=tmp_path, home=tmp_path)
    assert isinstance(load_embedder(config, HashEmbedder.name), HashEmbedder)
    assert provisioned_info(config, HashEmbedder.name) is None  # only this process can run it
    assert provisioned_tokenizer(config, HashEmbedder.name) == (True, None)
    remote = load_embedder(config, "ollama:nomic-embed-text")  # nothing is sent yet
    assert isinstance(remote, RemoteEmbedder) and remote.name == "ollama:nomic-embed-text"
    assert provisioned_info(config, "ollama:nomic-embed-text") is None
