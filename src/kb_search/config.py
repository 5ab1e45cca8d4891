"""Effective configuration: flags > KB_* environment > .kb.yaml > config.yaml > defaults.

A project .kb.yaml (the first one walking up from the cwd) may come with a cloned repository:
it sets only PROJECT_SAFE settings until the user trusts it (`kb config trust`, see trust.py);
its other settings are ignored and listed in Config.ignored.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from kb_search.errors import ConfigError  # noqa: F401 - re-exported

# Plain classes and no runtime typing here: a piped `kb search` resolves its config before the
# CLI loads, and dataclasses (inspect, ast) and typing cost it ~20 ms on every call.
TYPE_CHECKING = False  # typing's, without importing typing
if TYPE_CHECKING:
    from typing import Any

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
PROJECT_FILE = ".kb.yaml"


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"not a boolean: {value!r}")


def _int_range(low: int, high: int) -> Callable[[Any], int]:
    def convert(value: Any) -> int:
        number = int(value)
        if not low <= number <= high:
            raise ValueError(f"{number} is outside {low}..{high}")
        return number

    return convert


def _not_negative(value: Any) -> float:
    number = float(value)
    if number < 0:
        raise ValueError(f"{number:g} is negative")
    return number


def _positive(value: Any) -> float:
    number = float(value)
    if not 0 < number < float("inf"):
        raise ValueError(f"{number:g} is not a positive number")
    return number


def _float_range(low: float, high: float) -> Callable[[Any], float]:
    def convert(value: Any) -> float:
        number = float(value)
        if not low <= number <= high:
            raise ValueError(f"{number:g} is outside {low:g}..{high:g}")
        return number

    return convert


def _choice(*options: str) -> Callable[[Any], str]:
    def convert(value: Any) -> str:
        text = str(value).strip().lower()
        if text not in options:
            raise ValueError(f"{value!r} is not one of {', '.join(options)}")
        return text

    return convert


class Setting:
    """One setting: its dotted name as in config.yaml (e.g. "search.default_top"), default,
    converter, environment variables and help."""

    __slots__ = ("key", "default", "convert", "env", "help")

    def __init__(
        self, key: str, default: Any, convert: Callable[[Any], Any], env: tuple[str, ...], help: str
    ) -> None:
        self.key, self.default, self.convert, self.env, self.help = key, default, convert, env, help

    def __repr__(self) -> str:
        return f"Setting({self.key!r}, default={self.default!r})"


SETTINGS: tuple[Setting, ...] = (
    Setting("model", DEFAULT_MODEL, str, ("KB_MODEL",), "embedding model name"),
    Setting("model_source", None, str, ("KB_MODEL_SOURCE",), "local model directory"),
    Setting("model_cache", None, str, ("KB_MODEL_CACHE",), "converted models (<data_dir>/models)"),
    Setting("query_prefix", "", str, ("KB_QUERY_PREFIX",), "text put before queries (e5)"),
    Setting("passage_prefix", "", str, ("KB_PASSAGE_PREFIX",), "text put before passages"),
    # A remote embedding model (`openai:NAME`, `ollama:NAME`; docs/models.md): these send data
    # off the machine. The key is never shown (`kb config`), logged or stored in the DB.
    Setting("embedding.endpoint", None, str, ("KB_EMBEDDING_ENDPOINT",), "embedding server URL"),
    Setting("embedding.api_key", None, str, ("KB_API_KEY", "OPENAI_API_KEY"), "its API key"),
    Setting("embedding.batch_size", 32, _int_range(1, 2048), ("KB_EMBEDDING_BATCH",), "texts/call"),
    Setting("embedding.concurrency", 4, _int_range(1, 64), ("KB_EMBEDDING_CONCURRENCY",), "calls"),
    Setting("embedding.timeout_s", 60.0, float, ("KB_EMBEDDING_TIMEOUT",), "s per call"),
    Setting("embedding.retries", 5, _int_range(0, 20), ("KB_EMBEDDING_RETRIES",), "on 429/5xx"),
    Setting(
        "embedding.provider",
        "auto",
        str,
        ("KB_PROVIDER",),
        "onnxruntime execution provider: auto (CUDA, CoreML, DirectML, else CPU), cpu, cuda, ...",
    ),
    Setting(
        "search.default_top",
        10,
        _int_range(1, 1000),
        ("KB_DEFAULT_TOP", "KB_SEARCH_DEFAULT_TOP"),
        "results",
    ),
    Setting(
        "search.default_mode",
        "hybrid",
        _choice("hybrid", "lexical", "vector"),
        ("KB_DEFAULT_MODE", "KB_SEARCH_DEFAULT_MODE"),
        "mode when --mode is not given",
    ),
    Setting(
        "search.fusion",
        "convex",
        _choice("convex", "rrf"),
        ("KB_FUSION",),
        "hybrid: convex (min-max scores, equal weights) or rrf (reciprocal rank)",
    ),
    Setting("search.rrf_k", 60, int, ("KB_RRF_K",), "Reciprocal Rank Fusion constant (rrf)"),
    Setting(
        "search.reranker",
        "none",
        str,
        ("KB_RERANKER",),
        "rerank stage: none, or a cross-encoder (model id or local directory)",
    ),
    Setting(
        "search.rerank_depth",
        30,
        _int_range(1, 200),
        ("KB_RERANK_DEPTH",),
        "fused candidates the reranker reads (each costs a model pass)",
    ),
    # A rerank server (`search.reranker` = tei:NAME, openai:NAME, jina:NAME, cohere:NAME;
    # docs/models.md): the query and the top passages leave the machine for it.
    Setting("rerank.endpoint", None, str, ("KB_RERANK_ENDPOINT",), "rerank server base URL"),
    Setting("rerank.api_key", None, str, ("KB_RERANK_API_KEY",), "its API key"),
    Setting(
        "rerank.timeout_s",
        3.0,
        _positive,
        ("KB_RERANK_TIMEOUT",),
        "s a rerank request may take; later, results keep the fused order (with a note)",
    ),
    # A chat model the person runs (`kb ask`, `kb search --expand`; docs/models.md): nothing
    # calls it unless llm.model is set. The key is never shown, logged or stored.
    Setting("llm.model", None, str, ("KB_LLM_MODEL",), "chat model: openai:NAME or ollama:NAME"),
    Setting("llm.endpoint", None, str, ("KB_LLM_ENDPOINT",), "chat server base URL"),
    Setting("llm.api_key", None, str, ("KB_LLM_API_KEY",), "its API key"),
    Setting("llm.timeout_s", 60.0, _positive, ("KB_LLM_TIMEOUT",), "s per request, in total"),
    Setting("llm.retries", 3, _int_range(0, 10), ("KB_LLM_RETRIES",), "on 429/5xx/drops"),
    Setting("llm.max_tokens", 1024, _int_range(16, 65536), ("KB_LLM_MAX_TOKENS",), "per answer"),
    Setting(
        "search.expand_timeout_s",
        20.0,
        _positive,
        ("KB_EXPAND_TIMEOUT",),
        "kb search --expand: s the chat model has to write phrasings (cached after)",
    ),
    Setting(
        "ask.passages",
        8,
        _int_range(1, 50),
        ("KB_ASK_PASSAGES",),
        "kb ask: retrieved passages the model reads",
    ),
    Setting(
        "ask.min_similarity",
        0.3,
        _float_range(0.0, 1.0),
        ("KB_ASK_MIN_SIMILARITY",),
        "kb ask refuses when no passage is this close to the question in meaning (cosine;"
        " all-MiniLM-L6-v2: real questions >= 0.37, off-topic ones <= 0.27)",
    ),
    Setting("search.timeout_s", 10.0, float, ("KB_SEARCH_TIMEOUT",), "a search stops after this"),
    Setting(
        "search.max_query_chars",
        4000,
        _int_range(1, 10_000_000),
        ("KB_MAX_QUERY_CHARS",),
        "longer queries are refused (FTS5's parse time grows with the square of the terms)",
    ),
    Setting(
        "serve.max_connections",
        64,
        _int_range(4, 100_000),
        ("KB_SERVE_MAX_CONNECTIONS",),
        "kb serve --transport http: open connections at once (at most 1/4 of the fd limit)",
    ),
    Setting(
        "serve.request_timeout_s",
        10.0,
        _positive,
        ("KB_SERVE_REQUEST_TIMEOUT",),
        "kb serve --transport http: a client has this long to send a whole request",
    ),
    Setting(
        "serve.max_body_bytes",
        262_144,
        _int_range(1024, 64 << 20),
        ("KB_SERVE_MAX_BODY",),
        "kb serve --transport http: larger request bodies get 413",
    ),
    Setting(
        "serve.max_sessions",
        32,
        _int_range(1, 100_000),
        ("KB_SERVE_MAX_SESSIONS",),
        "kb serve --transport http: MCP sessions at once (the longest idle makes room)",
    ),
    Setting(
        "serve.session_idle_s",
        600.0,
        _positive,
        ("KB_SERVE_SESSION_IDLE",),
        "kb serve --transport http: an MCP session idle this long ends",
    ),
    Setting(
        "serve.max_line_bytes",
        1 << 20,
        _int_range(1024, 1 << 30),
        ("KB_SERVE_MAX_LINE",),
        "kb serve (stdio): a longer message line is dropped with an error",
    ),
    Setting(
        "search.warm",
        True,
        _to_bool,
        ("KB_WARM",),
        "kb search keeps a warm per-DB search server (model loaded once); KB_NO_WARM=1 is off",
    ),
    Setting(
        "search.warm_idle_s",
        300.0,
        float,
        ("KB_WARM_IDLE_S",),
        "the warm search server exits after this many idle seconds",
    ),
    Setting(
        "vectors.index",
        "auto",
        str,
        ("KB_VECTOR_INDEX",),
        "auto (ann from vectors.ann_min_chunks chunks; below it sqlite-vec one-shot,"
        " live-matrix in servers, sqlite-vec-shortlist in the warm server), sqlite-vec,"
        " sqlite-vec-shortlist, matrix, live-matrix, ann",
    ),
    Setting(
        "vectors.ann_min_chunks",
        200_000,
        _int_range(0, 10**12),
        ("KB_ANN_MIN_CHUNKS",),
        "auto uses the approximate index from this many chunks (0: never)",
    ),
    Setting("chunking.max_tokens", 200, int, ("KB_CHUNK_MAX_TOKENS",), "largest chunk"),
    Setting("chunking.min_tokens", 40, int, ("KB_CHUNK_MIN_TOKENS",), "smallest section"),
    Setting("ingestion.workers", 1, int, ("KB_WORKERS",), "parser processes (0: in-process)"),
    Setting("ingestion.timeout_s", 120.0, float, ("KB_PARSE_TIMEOUT",), "per-file parse limit"),
    Setting("ingestion.max_memory_mb", 4096, int, ("KB_PARSE_MEMORY_MB",), "per parser process"),
    Setting("ingestion.max_file_mb", 20.0, float, ("KB_MAX_FILE_MB",), "larger files skipped"),
    Setting(
        "ingestion.enable_ocr",
        "auto",
        _choice("auto", "always", "never"),
        ("KB_ENABLE_OCR",),
        "OCR for pages without text",
    ),
    Setting("ingestion.follow_symlinks", False, _to_bool, ("KB_FOLLOW_SYMLINKS",), "walk links"),
    Setting(
        "ingestion.executor",
        "local",
        _choice("local", "ray"),
        ("KB_EXECUTOR",),
        "where files are parsed and embedded: local processes, or a Ray cluster (kb-search[ray])",
    ),
    Setting(
        "ingestion.ray_stall_s",
        900.0,
        _not_negative,
        ("KB_RAY_STALL_S",),
        "a Ray worker that answers nothing for this long is taken as hung: killed, its file"
        " sent again (0: no limit)",
    ),
    Setting(
        "ingestion.ray_address",
        None,
        str,
        ("KB_RAY_ADDRESS",),
        "Ray cluster: auto, ray://host:port, host:port; unset starts a local Ray for the run",
    ),
)
SETTINGS_BY_KEY = {s.key: s for s in SETTINGS}
SECRET_SETTINGS = frozenset({"embedding.api_key", "llm.api_key", "rerank.api_key"})

# What an untrusted project .kb.yaml may set: how search ranks and how text is cut, never what
# runs, where data goes or what leaves the machine. Everything not listed here needs trust:
#   data_dir, db, model_cache       choose where kb writes (and where the hook's log goes)
#   model, model_source,            choose which model files are loaded and run
#     search.reranker
#   ingestion.executor,             send your files to a cluster it names (Ray exchanges
#     ingestion.ray_address           pickles: code execution as well)
#   ingestion.follow_symlinks       reads files outside the tree (a link to ~/.ssh)
#   search.timeout_s,               the bounds that hold against hostile files and requests
#     search.max_query_chars,         (zip bombs, huge queries, slow clients): a cloned repo
#     serve.*, ingestion.workers,     must not loosen them
#     ingestion.timeout_s,
#     ingestion.max_memory_mb,
#     ingestion.max_file_mb
# and every setting added later (an embedding endpoint, an API key...) until it is listed here:
# new keys are denied by default.
PROJECT_SAFE = frozenset(
    {
        "query_prefix",
        "passage_prefix",
        "search.default_top",
        "search.default_mode",
        "search.fusion",
        "search.rrf_k",
        "search.rerank_depth",
        "search.warm",
        "search.warm_idle_s",
        "vectors.index",
        "vectors.ann_min_chunks",
        "chunking.max_tokens",
        "chunking.min_tokens",
        "ingestion.enable_ocr",
        "ingestion.ray_stall_s",
    }
)
# Words (between dots and underscores) that name something run, reached or written: a key with
# one of them needs trust even if it is put in PROJECT_SAFE by mistake.
SENSITIVE_WORDS = frozenset(
    {
        "endpoint", "url", "uri", "address", "host", "port", "key", "token", "secret",
        "password", "credential", "executor", "command", "cmd", "hook", "dir", "path", "db",
        "source", "model", "cache", "reranker", "plugin", "symlinks",
    }
)  # fmt: skip


def needs_trust(key: str) -> bool:
    """Whether a project file must be trusted before `key` is taken from it."""
    words = set(key.replace(".", "_").split("_"))
    return key not in PROJECT_SAFE or bool(words & SENSITIVE_WORDS)


class Config:
    """Resolved settings plus where each came from."""

    def __init__(
        self,
        data_dir: Path,
        db_path: Path,
        values: dict[str, Any] | None = None,
        sources: dict[str, str] | None = None,
        files: list[Path] | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.db_path = db_path
        self.values: dict[str, Any] = {} if values is None else values
        self.sources: dict[str, str] = {} if sources is None else sources
        self.files: list[Path] = [] if files is None else files
        self.project_file: Path | None = None
        # True/False: the project file is trusted / was trusted but changed since; None: not
        # trusted, or not asked (it set nothing that needs trust)
        self.project_trusted: bool | None = None
        self.ignored: list[str] = []  # project settings left out: the file is not trusted

    def ignored_line(self) -> str:
        """The one line that says which project settings were ignored, and how to trust."""
        import shlex

        from kb_search.sanitize import printable

        path = printable(self.project_file)
        why = (
            "it changed since you trusted it"
            if self.project_trusted is False
            else "a project file sets these only once you trust it"
        )
        return (
            f"ignored {', '.join(self.ignored)} from {path}: {why}"
            f" (review it, then `kb config trust {printable(shlex.quote(str(self.project_file)))}`)"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return f"Config(data_dir={self.data_dir!r}, db_path={self.db_path!r})"

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def override(self, key: str, value: Any, source: str = "flag") -> None:
        """Set `key` for this run, as a command-line flag does."""
        self.values[key], self.sources[key] = value, source

    def as_rows(self) -> list[tuple[str, Any, str]]:
        rows = [
            ("data_dir", str(self.data_dir), self.sources["data_dir"]),
            ("db", str(self.db_path), self.sources["db"]),
        ]
        rows += [(s.key, self.shown(s.key), self.sources[s.key]) for s in SETTINGS]
        return rows

    def shown(self, key: str) -> Any:
        """The value as `kb config` may print it: a secret only as whether it is set."""
        value = self.values[key]
        return "(set)" if key in SECRET_SETTINGS and value else value


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def read_yaml_file(path: Path) -> dict[str, Any]:
    """Read a config file into dotted keys; a broken file is a ConfigError."""
    return parse_config(read_config_bytes(path), path)


def read_config_bytes(path: Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror or exc}") from exc


def parse_config(raw: bytes, path: Path) -> dict[str, Any]:
    """A config file's bytes as dotted keys (the bytes are what trust is recorded for)."""
    import yaml  # only paid for when a config file exists

    try:
        data = yaml.safe_load(raw.decode("utf-8")) or {}
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"cannot read config {path}: {first}") from exc
    if not isinstance(data, Mapping):
        raise ConfigError(f"config {path} must be a mapping of settings")
    flat = _flatten(data)
    unknown = sorted(k for k in flat if k not in SETTINGS_BY_KEY and k not in {"data_dir", "db"})
    if unknown:
        raise ConfigError(f"unknown setting(s) in {path}: {', '.join(unknown)}")
    return flat


def find_project_file(cwd: Path) -> Path | None:
    for directory in (cwd, *cwd.parents):
        candidate = directory / PROJECT_FILE
        if candidate.is_file():
            return candidate
    return None


def _convert(setting: Setting, value: Any, origin: str) -> Any:
    if value is None:
        return None
    try:
        return setting.convert(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"bad value for {setting.key} from {origin}: {exc}") from exc


def load_config(
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    home: Path | None = None,
    flags: Mapping[str, Any] | None = None,
    config_path: Path | None = None,
) -> Config:
    """Resolve every setting; `flags` holds only options the user actually gave."""
    env = dict(os.environ if env is None else env)
    cwd = cwd or Path.cwd()
    home = home or Path(env.get("HOME") or Path.home())
    flags = {k: v for k, v in (flags or {}).items() if v is not None}

    project_file = find_project_file(cwd)
    project: dict[str, Any] = {}
    ignored: list[str] = []
    trusted: bool | None = None
    if project_file is not None:
        raw = read_config_bytes(project_file)
        project = parse_config(raw, project_file)
        sensitive = sorted(key for key in project if needs_trust(key))
        if sensitive:
            from kb_search.trust import is_trusted

            trusted = is_trusted(project_file, raw, env, home)
            if not trusted:
                ignored = sensitive
                project = {k: v for k, v in project.items() if k not in sensitive}

    def pick_path(key: str, env_name: str, default: Path) -> tuple[Path, str]:
        # Relative to the caller's cwd, made absolute here: a warm server (another process,
        # another cwd) must open the same file.
        if key in flags:
            return cwd / Path(flags[key]).expanduser(), "flag"
        if env.get(env_name):
            return cwd / Path(env[env_name]).expanduser(), f"env {env_name}"
        if key in project and project_file is not None:
            value = Path(str(project[key])).expanduser()
            return (project_file.parent / value).resolve(), str(project_file)
        return default, "default"

    data_dir, data_src = pick_path("data_dir", "KB_DATA_DIR", home / ".kb")
    config_file = Path(config_path) if config_path else data_dir / "config.yaml"
    if config_path and not config_file.is_file():
        raise ConfigError(f"config file not found: {config_file}")
    user = read_yaml_file(config_file) if config_file.is_file() else {}
    if data_src == "default" and "data_dir" in user:
        data_dir, data_src = Path(str(user["data_dir"])).expanduser(), str(config_file)
    db_path, db_src = pick_path("db", "KB_DB", data_dir / "kb.db")
    if db_src == "default" and "db" in user:
        db_path, db_src = Path(str(user["db"])).expanduser(), str(config_file)

    cfg = Config(data_dir=data_dir, db_path=db_path)
    cfg.sources.update(data_dir=data_src, db=db_src)
    cfg.files = [p for p in (config_file, project_file) if p is not None and p.is_file()]
    cfg.project_file, cfg.project_trusted, cfg.ignored = project_file, trusted, ignored
    for setting in SETTINGS:
        value, origin = setting.default, "default"
        if setting.key in user:
            value, origin = user[setting.key], str(config_file)
        if setting.key in project and project_file is not None:
            value, origin = project[setting.key], str(project_file)
        for name in setting.env:
            if env.get(name) not in (None, ""):
                value, origin = env[name], f"env {name}"
                break
        if setting.key in flags:
            value, origin = flags[setting.key], "flag"
        cfg.values[setting.key] = _convert(setting, value, origin)
        cfg.sources[setting.key] = origin
    # Directories named relative to where they were written: made absolute here, as the DB
    # path is, so a warm server (another process, another cwd) loads the same model.
    bases = {str(config_file): config_file.parent}
    if project_file is not None:
        bases[str(project_file)] = project_file.parent
    source = cfg.values["model_source"]
    if source:  # always a directory
        base = bases.get(cfg.sources["model_source"], cwd)
        cfg.values["model_source"] = str((base / Path(source).expanduser()).resolve())
    reranker = cfg.values["search.reranker"]
    if reranker != "none":  # a directory only if it is one there; else a model id
        base = bases.get(cfg.sources["search.reranker"], cwd)
        cfg.values["search.reranker"] = absolute_dir(reranker, base)
    return cfg


def absolute_dir(value: str, base: Path) -> str:
    """`value` made absolute when it names a directory under `base` (a model id, or "none",
    stays as it is); a trailing @variant (reranker "DIR@int8") is kept."""
    path, at, variant = value.rpartition("@")
    for name, tail in ((value, ""), (path, at + variant)):
        full = base / Path(name).expanduser()
        if name and full.is_dir():
            return str(full.resolve()) + tail
    return value


# ---- trusting a project file (the record itself: kb_search.trust) ----


class TrustState:
    """Words for where a project file stands, as `kb config show` reports it."""

    TRUSTED = "trusted"
    UNTRUSTED = "not trusted"
    CHANGED = "changed since trusted"


def trust_state(path: Path, env: Mapping[str, str], home: Path) -> str:
    """TrustState of the project file at `path` as it is now."""
    from kb_search.trust import is_trusted

    trusted = is_trusted(path, read_config_bytes(path), env, home)
    if trusted is None:
        return TrustState.UNTRUSTED
    return TrustState.TRUSTED if trusted else TrustState.CHANGED


def trust_project_file(path: Path, env: Mapping[str, str], home: Path) -> dict[str, object]:
    """Trust the config file at `path` as it is now (it must read as a kb config): what was
    recorded and which of its settings that lets through."""
    if not path.is_file():
        raise ConfigError(f"not a config file: {path}")
    raw = read_config_bytes(path)
    settings = sorted(key for key in parse_config(raw, path) if needs_trust(key))
    from kb_search.trust import record_key, store_path, trust

    sha256 = trust(path, raw, env, home)
    return {
        "path": record_key(path),
        "sha256": sha256,
        "settings": settings,
        "store": str(store_path(env, home)),
    }
