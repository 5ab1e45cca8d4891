"""Which embedding model, and making it: the model a DB or the config names, the registry of
how each kind is made (local ONNX, a remote endpoint, one registered in process), its tokenizer
(what sizes chunks) and what a remote executor ships to its workers. Binding a DB to the model
is `vectors/binding.py`; holding the loaded ones is `loaded.py`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kb_search.config import Config
from kb_search.embedding import TextEmbedder, is_remote
from kb_search.errors import ConfigError, ModelMismatch, ModelUnavailable
from kb_search.registry import Registry
from kb_search.store import db
from kb_search.store import vectors as tables
from kb_search.store.vectors import Binding

if TYPE_CHECKING:

    from kb_search.embedding.provision import ModelInfo

NO_MODEL = "no embedding model in this database: run `kb init` then `kb reindex`"


# How every embedding model is made: (config, model name, one_shot: the process embeds a query
# or two and exits, recorded: what the DB knows of the model or None).
EmbedderFactory = Callable[[Config, str, bool, Binding | None], TextEmbedder]

# Model name -> its factory, imported when chosen: a name registered here (an embedder made in
# process: the test suite's small deterministic one, a plugin's), else a remote model's scheme
# (`openai:NAME`, `ollama:NAME`: embedding.REMOTE_SCHEMES), else a local model.
EMBEDDERS: Registry[EmbedderFactory] = Registry(
    "embedding model",
    {
        "local": "kb_search.models.embedders:local_embedder",
        "openai:": "kb_search.models.embedders:remote_embedder",
        "ollama:": "kb_search.models.embedders:remote_embedder",
    },
    ConfigError,
)


def register_embedder(name: str, factory: Callable[[], TextEmbedder]) -> None:
    """Register an embedder made in process under its model name."""
    EMBEDDERS[name] = lambda config, name, one_shot, recorded: factory()


def embedder_kind(name: str) -> str:
    """The EMBEDDERS entry that makes the model `name`."""
    scheme = f"{name.partition(':')[0]}:"
    if name in EMBEDDERS and name != scheme:
        return name
    return scheme if is_remote(name) else "local"


def tokenizer_path(embedder: TextEmbedder) -> str | None:
    """The model's tokenizer.json, which parser workers use to size chunks exactly (a remote
    model's: the one its chunks are sized with, see `sizing_tokenizer`)."""
    if sizing := getattr(embedder, "sizing_tokenizer", None):
        return sizing
    info = getattr(embedder, "info", None)
    path = getattr(info, "tokenizer_path", None)
    return str(path) if path else None


def provisioned_tokenizer(config: Config, name: str) -> tuple[bool, str | None]:
    """(known, tokenizer.json) without loading the model: known is False when the model is
    not provisioned yet, so only loading it can tell."""
    kind = embedder_kind(name)
    if kind == "local":
        from kb_search.embedding.provision import canonical_name, safe_name

        path = model_cache_dir(config) / safe_name(canonical_name(name)) / "tokenizer.json"
        return (True, str(path)) if path.is_file() else (False, None)
    if kind == name:  # made in process: cheap to make
        return True, tokenizer_path(load_embedder(config, name))
    return True, sizing_tokenizer(config)


@dataclass
class ModelChoice:
    name: str  # canonical model id
    explicit: bool  # set by flag, environment or a config file (not the built-in default)


def canonical(name: str) -> str:
    from kb_search.embedding.provision import canonical_name

    return name if is_remote(name) else canonical_name(name)


def configured_model(config: Config, override: str | None = None) -> ModelChoice:
    if override:
        return ModelChoice(canonical(override), True)
    return ModelChoice(canonical(config["model"]), config.sources["model"] != "default")


def model_cache_dir(config: Config) -> Path:
    cache = config["model_cache"]
    return Path(cache).expanduser() if cache else config.data_dir / "models"


def load_embedder(
    config: Config, name: str, one_shot: bool = False, recorded: Binding | None = None
) -> TextEmbedder:
    """Provision (converting to ONNX once, cached under the data dir) and load a model; a
    remote one (`openai:`/`ollama:`) is a client of its endpoint, `recorded` what the DB
    knows of it (its dimension, its server).

    `one_shot`: the process embeds a query or two and exits (CLI search): load fast."""
    return EMBEDDERS.load(embedder_kind(name))(config, name, one_shot, recorded)


def local_embedder(
    config: Config, name: str, one_shot: bool, recorded: Binding | None
) -> TextEmbedder:
    from kb_search.embedding import ModelNotAvailableError
    from kb_search.embedding import load_embedder as load
    from kb_search.embedding.providers import ProviderUnavailable

    source = config["model_source"]
    try:
        embedder = load(
            name,
            model_cache_dir(config),
            Path(source) if source else None,
            prepack=not one_shot,
            provider=config["embedding.provider"],
        )
    except ProviderUnavailable as exc:
        raise ConfigError(str(exc)) from None
    except ModelNotAvailableError as exc:
        raise ModelUnavailable(str(exc).splitlines()[0]) from exc
    prefix_q, prefix_p = config["query_prefix"], config["passage_prefix"]
    if prefix_q or prefix_p:
        embedder.info = replace(
            embedder.info,
            query_prefix=prefix_q or embedder.info.query_prefix,
            passage_prefix=prefix_p or embedder.info.passage_prefix,
        )
    return embedder


def sizing_tokenizer(config: Config) -> str | None:
    """What a remote model's chunks are sized with: its own tokenizer is the server's, so the
    default model's WordPiece (provisioned, or in its installed package) stands in, which keeps
    chunks as a local MiniLM index cuts them; None (a character estimate) without either."""
    from kb_search.embedding.provision import DEFAULT_MODEL, installed_model_dir, safe_name

    cached = model_cache_dir(config) / safe_name(DEFAULT_MODEL) / "tokenizer.json"
    if cached.is_file():
        return str(cached)
    package = installed_model_dir(DEFAULT_MODEL)
    found = package / "tokenizer.json" if package is not None else None
    return str(found) if found is not None and found.is_file() else None


def remote_embedder(
    config: Config, name: str, one_shot: bool, recorded: Binding | None
) -> TextEmbedder:
    """The client of a remote model's endpoint: the configured server, else the one the DB
    was built with. Nothing is sent until a text must be embedded."""
    from kb_search.embedding.remote import RemoteEmbedder, RemoteSettings, endpoint_for

    endpoint = endpoint_for(name, config["embedding.endpoint"], recorded and recorded.endpoint)
    settings = RemoteSettings(
        endpoint=endpoint,
        api_key=config["embedding.api_key"],
        batch_size=config["embedding.batch_size"],
        concurrency=config["embedding.concurrency"],
        timeout_s=config["embedding.timeout_s"],
        retries=config["embedding.retries"],
        query_prefix=config["query_prefix"],
        passage_prefix=config["passage_prefix"],
    )
    dim = recorded.dim if recorded else None
    sizing = sizing_tokenizer(config)
    return RemoteEmbedder(
        name,
        settings,
        dim,
        recorded.max_tokens if recorded else None,
        sizing_tokenizer=sizing,
        count=lambda text: _sizing_counter(sizing)(text),
    )


@functools.lru_cache(maxsize=4)
def _sizing_counter(path: str | None) -> Callable[[str], int]:
    """Word pieces as the chunker counts them: with the tokenizer at `path` (loaded on first
    use, without its truncation), else the chunker's estimate."""
    if path is None:
        from kb_search.chunking.tokens import count_tokens

        return count_tokens
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(path)
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)


def provisioned_info(config: Config, name: str) -> ModelInfo | None:
    """The provisioned model's directory and settings (converting it once), with the configured
    prefixes, without loading it: what a remote executor ships to its workers. None for a
    model made in process (registered), which only this process can run."""
    if embedder_kind(name) != "local":
        return None
    from kb_search.embedding import ModelNotAvailableError
    from kb_search.embedding.provision import provision_model

    source = config["model_source"]
    try:
        info = provision_model(name, model_cache_dir(config), Path(source) if source else None)
    except ModelNotAvailableError as exc:
        raise ModelUnavailable(str(exc).splitlines()[0]) from exc
    prefix_q, prefix_p = config["query_prefix"], config["passage_prefix"]
    return replace(
        info,
        query_prefix=prefix_q or info.query_prefix,
        passage_prefix=prefix_p or info.passage_prefix,
    )


def resolve_db_model(conn: db.Connection, choice: ModelChoice) -> str | None:
    """The model to use with this DB; a hard error when an explicit choice contradicts it."""
    built_with = tables.db_model(conn)
    if built_with is None:
        return None
    if choice.explicit and canonical(built_with) != choice.name:
        raise ModelMismatch(
            f"this database was built with {built_with}, not {choice.name}: run "
            f"`kb reindex --model {choice.name}` to switch, or use --model/KB_MODEL={built_with}"
        )
    return built_with


