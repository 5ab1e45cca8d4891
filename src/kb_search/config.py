"""Effective configuration: flags > KB_* environment > .kb.yaml > config.yaml > defaults.

A project .kb.yaml (the first one walking up from the cwd) may come with a cloned repository:
it sets only PROJECT_SAFE settings until the user trusts it (`kb config trust`, see trust.py);
its other settings are ignored and listed in Config.ignored.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from kb_search.errors import ConfigError  # noqa: F401 - re-exported
from kb_search.settings import (  # noqa: F401 - re-exported: the schema lives in settings.py
    DEFAULT_MODEL,
    PATH,
    SECRET_SETTINGS,
    SETTINGS,
    SETTINGS_BY_KEY,
    Setting,
    check,
)

# Plain classes and no runtime typing here: a piped `kb search` resolves its config before the
# CLI loads, and dataclasses (inspect, ast) and typing cost it ~20 ms on every call.
TYPE_CHECKING = False  # typing's, without importing typing
if TYPE_CHECKING:
    from typing import Any

PROJECT_FILE = ".kb.yaml"
MAX_CONFIG_BYTES = 256 << 10  # a config file is a few lines; a bigger one is refused unread
MAX_YAML_DEPTH = 8  # `section: {key: value}` is 2 deep

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
        self.project_linked = False  # the project file is a symlink: never trusted

    def ignored_line(self) -> str:
        """The one line that says which project settings were ignored, and how to trust."""
        import shlex

        from kb_search.sanitize import printable

        path = printable(self.project_file)
        if self.project_linked:
            return (
                f"ignored {', '.join(self.ignored)} from {path}: it is a symbolic link, and kb"
                " trusts only a regular file in the folder it governs (copy the file there,"
                " review it, then `kb config trust`)"
            )
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
        if key in SECRET_SETTINGS and value:
            return "(set)"
        if isinstance(value, str) and "@" in value:  # a URL's userinfo (user:password@)
            from kb_search.net import redact

            return redact(value)
        return value


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and name not in SETTINGS_BY_KEY and name not in PLACES:
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def read_yaml_file(path: Path) -> dict[str, Any]:
    """Read a config file into dotted keys; a broken file is a ConfigError."""
    return parse_config(read_config_bytes(path), path)


def read_config_bytes(path: Path) -> bytes:
    """A config file's bytes: a regular file (never a FIFO or device, which could block or
    never end) of at most MAX_CONFIG_BYTES, read from the descriptor that was checked."""
    from kb_search.regular import NotRegularFile, read_regular
    from kb_search.sanitize import printable

    try:
        raw = read_regular(path, MAX_CONFIG_BYTES + 1)
    except NotRegularFile as exc:
        raise ConfigError(f"cannot read config {printable(path)}: {exc.strerror}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config {printable(path)}: {exc.strerror or exc}") from exc
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"config {printable(path)} is larger than {MAX_CONFIG_BYTES >> 10} KiB:"
            " kb reads config files up to that size"
        )
    return raw


def parse_config(raw: bytes, path: Path) -> dict[str, Any]:
    """A config file's bytes as dotted keys (the bytes are what trust is recorded for).
    Aliases are refused and nesting is bounded before YAML builds anything: a few hundred
    bytes of nested aliases would otherwise expand to gigabytes, before any trust check."""
    import yaml  # only paid for when a config file exists

    from kb_search.sanitize import printable

    shown = printable(path)
    try:
        text = raw.decode("utf-8")
        _check_yaml_shape(yaml, text, shown)
        data = yaml.safe_load(text) or {}
    except (UnicodeDecodeError, yaml.YAMLError, RecursionError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"cannot read config {shown}: {printable(first[:200])}") from None
    if not isinstance(data, Mapping):
        raise ConfigError(f"config {shown} must be a mapping of settings")
    flat = _flatten(data)
    unknown = sorted(k for k in flat if k not in SETTINGS_BY_KEY and k not in {"data_dir", "db"})
    if unknown:
        named = ", ".join(printable(k[:80]) for k in unknown[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise ConfigError(f"unknown setting(s) in {shown}: {named}{more}")
    return flat


def _check_yaml_shape(yaml: Any, text: str, shown: str) -> None:
    """ConfigError for a YAML alias (`*name`) or nesting deeper than MAX_YAML_DEPTH, found
    in the event stream (which builds nothing), before the document is loaded."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            raise ConfigError(
                f"config {shown} uses a YAML alias (*{event.anchor}): kb reads config files"
                " without aliases; write the value out"
            )
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise ConfigError(
                    f"config {shown} nests deeper than {MAX_YAML_DEPTH} levels:"
                    " kb config files are `section: {key: value}`"
                )
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def find_project_file(cwd: Path) -> Path | None:
    """The first .kb.yaml walking up from `cwd` (a symlink too: it is read, never trusted)."""
    for directory in (cwd, *cwd.parents):
        candidate = directory / PROJECT_FILE
        if candidate.is_file():
            return candidate
    return None


def _convert(setting: Setting, value: Any, origin: str) -> Any:
    """The value checked against the settings schema; ConfigError naming origin, key and
    what is allowed."""
    from kb_search.sanitize import printable

    try:
        return check(setting, value, printable(origin))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


PLACES = {
    "data_dir": Setting("data_dir", None, PATH, ("KB_DATA_DIR",), "the data directory"),
    "db": Setting("db", None, PATH, ("KB_DB",), "the database file"),
}


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
    project, ignored, trusted, linked = _project_settings(project_file, env, home)

    def place(key: str, value: Any, origin: str) -> Path:
        return Path(_convert(PLACES[key], value, origin)).expanduser()

    def pick_path(key: str, env_name: str, default: Path) -> tuple[Path, str]:
        # Relative to the caller's cwd, made absolute here: a warm server (another process,
        # another cwd) must open the same file.
        if key in flags:
            return cwd / place(key, str(flags[key]), "flag"), "flag"
        if env.get(env_name):
            return cwd / place(key, env[env_name], f"env {env_name}"), f"env {env_name}"
        if key in project and project_file is not None:
            # relative to the folder the (trusted, regular) project file governs
            value = place(key, project[key], str(project_file))
            return (project_file.parent / value).resolve(), str(project_file)
        return default, "default"

    data_dir, data_src = pick_path("data_dir", "KB_DATA_DIR", home / ".kb")
    config_file = Path(config_path) if config_path else data_dir / "config.yaml"
    if config_path and not config_file.is_file():
        raise ConfigError(f"config file not found: {config_file}")
    user = read_yaml_file(config_file) if config_file.is_file() else {}
    if data_src == "default" and "data_dir" in user:
        data_dir, data_src = place("data_dir", user["data_dir"], str(config_file)), str(config_file)
    db_path, db_src = pick_path("db", "KB_DB", data_dir / "kb.db")
    if db_src == "default" and "db" in user:
        db_path, db_src = place("db", user["db"], str(config_file)), str(config_file)

    cfg = Config(data_dir=data_dir, db_path=db_path)
    cfg.sources.update(data_dir=data_src, db=db_src)
    cfg.files = [p for p in (config_file, project_file) if p is not None and p.is_file()]
    cfg.project_file, cfg.project_trusted, cfg.ignored = project_file, trusted, ignored
    cfg.project_linked = linked
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
    _absolute_dirs(cfg, config_file, project_file, cwd)
    return cfg


def _project_settings(
    project_file: Path | None, env: Mapping[str, str], home: Path
) -> tuple[dict[str, Any], list[str], bool | None, bool]:
    """The project file's settings, without those that need trust when it has none; the
    keys left out, whether it is trusted (None: nothing in it needs trust) and whether it is
    a symbolic link."""
    if project_file is None:
        return {}, [], None, False
    raw = read_config_bytes(project_file)
    project = parse_config(raw, project_file)
    sensitive = sorted(key for key in project if needs_trust(key))
    if not sensitive:
        return project, [], None, False
    from kb_search.trust import is_link, is_trusted

    linked = is_link(project_file)
    trusted = is_trusted(project_file, raw, env, home)
    if trusted:
        return project, [], trusted, linked
    return {k: v for k, v in project.items() if k not in sensitive}, sensitive, trusted, linked


def _absolute_dirs(cfg: Config, config_file: Path, project_file: Path | None, cwd: Path) -> None:
    """Directories named relative to where they were written, made absolute, as the DB path
    is, so that a warm server (another process, another cwd) loads the same model."""
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
    LINKED = "not trusted (a symbolic link)"


def trust_state(path: Path, env: Mapping[str, str], home: Path) -> str:
    """TrustState of the project file at `path` as it is now."""
    from kb_search.trust import is_link, is_trusted

    trusted = is_trusted(path, read_config_bytes(path), env, home)
    if is_link(path):
        return TrustState.LINKED
    if trusted is None:
        return TrustState.UNTRUSTED
    return TrustState.TRUSTED if trusted else TrustState.CHANGED


def trust_project_file(path: Path, env: Mapping[str, str], home: Path) -> dict[str, object]:
    """Trust the config file at `path` as it is now (it must read as a kb config): what was
    recorded and which of its settings that lets through."""
    if not path.is_file():
        raise ConfigError(f"not a config file: {path}")
    raw = read_config_bytes(path)
    values = parse_config(raw, path)
    for key, value in values.items():  # a file that would not load is not trusted either
        _convert(PLACES.get(key) or SETTINGS_BY_KEY[key], value, str(path))
    settings = sorted(key for key in values if needs_trust(key))
    from kb_search.trust import record_key, store_path, trust

    sha256 = trust(path, raw, env, home)
    return {
        "path": record_key(path),
        "sha256": sha256,
        "settings": settings,
        "store": str(store_path(env, home)),
    }
