"""The settings schema: every setting kb reads, with its type and allowed range, in one place.

One `Setting` per key: its default, its kind (what values it takes: `Integer(1, 1000)`,
`Number(0, 3600, above=True)`, `Choice(...)`, `Boolean()`, `Text(...)`), the environment
variables that set it and a line of help. `config.load_config` validates every value through
its kind before anything uses it, whatever its source (a project `.kb.yaml`, your
config.yaml, the environment, a flag); a value outside its kind is one line naming the file
(or variable), the key and what is allowed. To add a setting: one entry in SETTINGS (and a
line in docs/configuration.md: tests/docs checks both).

Plain classes and no runtime typing: a piped `kb search` resolves its config before the CLI
loads, and dataclasses or typing would cost it ~20 ms on every call.
"""

from __future__ import annotations

import math

TYPE_CHECKING = False  # typing's, without importing typing
if TYPE_CHECKING:
    from typing import Any

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


class Kind:
    """What values a setting takes: `convert(value)` returns the value as kb uses it or raises
    ValueError; `allowed` says what is allowed, for the one-line error."""

    allowed = ""
    shows_value = True  # False: the value is not repeated in an error (it may be a secret)

    def convert(self, value: Any) -> Any:
        raise NotImplementedError

    def __call__(self, value: Any) -> Any:
        return self.convert(value)


class Integer(Kind):
    def __init__(self, low: int, high: int) -> None:
        self.low, self.high = low, high
        self.allowed = f"an integer from {low:,} to {high:,}"

    def convert(self, value: Any) -> int:
        if isinstance(value, bool):
            raise ValueError("a boolean")
        if isinstance(value, float):
            if not (math.isfinite(value) and value.is_integer()):
                raise ValueError("not an integer")
            number = int(value)
        elif isinstance(value, int):
            number = value
        elif isinstance(value, str) and 0 < len(value.strip()) <= 24:
            number = int(value.strip())
        else:
            raise ValueError("not an integer")
        if not self.low <= number <= self.high:
            raise ValueError("out of range")
        return number


class Number(Kind):
    """A finite number from `low` to `high`; `above=True`: strictly above `low`."""

    def __init__(self, low: float, high: float, above: bool = False) -> None:
        self.low, self.high, self.above = low, high, above
        self.allowed = (
            f"a number above {_shown(low)} and at most {_shown(high)}"
            if above
            else f"a number from {_shown(low)} to {_shown(high)}"
        )

    def convert(self, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError("not a number")
        if isinstance(value, str) and not 0 < len(value.strip()) <= 32:
            raise ValueError("not a number")
        number = float(value)
        if not math.isfinite(number):
            raise ValueError("not finite")
        low_ok = number > self.low if self.above else number >= self.low
        if not (low_ok and number <= self.high):
            raise ValueError("out of range")
        return number


def _shown(number: float) -> str:
    return f"{int(number):,}" if float(number).is_integer() else f"{number:g}"


class Choice(Kind):
    def __init__(self, *options: str) -> None:
        self.options = options
        self.allowed = "one of " + ", ".join(options)

    def convert(self, value: Any) -> str:
        if not isinstance(value, str) or value.strip().lower() not in self.options:
            raise ValueError("not a choice")
        return value.strip().lower()


class Boolean(Kind):
    allowed = "true or false (also yes/no, on/off, 1/0)"

    def convert(self, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower() if isinstance(value, (str, int)) else ""
        if text in {"1", "true", "yes", "on"}:
            return True
        if text in {"0", "false", "no", "off"}:
            return False
        raise ValueError("not a boolean")


class Text(Kind):
    """A string of at most `max_chars`, without NUL (or any control character when
    `one_line`); `secret`: never repeated in a message."""

    def __init__(self, max_chars: int, one_line: bool = True, secret: bool = False) -> None:
        self.max_chars, self.one_line = max_chars, one_line
        self.shows_value = not secret
        self.allowed = f"text of at most {max_chars:,} characters" + (
            ", one line" if one_line else ""
        )

    def convert(self, value: Any) -> str:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValueError("not text")
        text = str(value)
        if len(text) > self.max_chars or "\x00" in text:
            raise ValueError("too long")
        if self.one_line and any(ord(c) < 32 or ord(c) == 127 for c in text):
            raise ValueError("control characters")
        return text


class Url(Text):
    """An http:// or https:// URL with a host (checked again where it is used)."""

    def __init__(self) -> None:
        super().__init__(2048)
        self.shows_value = False  # it may carry user:password
        self.allowed = "an http:// or https:// URL of at most 2,048 characters"

    def convert(self, value: Any) -> str:
        text = super().convert(value).strip()
        scheme, sep, rest = text.partition("://")
        if not sep or scheme.lower() not in ("http", "https") or not rest.split("/")[0]:
            raise ValueError("not an http URL")
        return text


NAME = Text(300)  # a model id, a provider or index name
PREFIX = Text(1000, one_line=False)  # instruction prefixes may hold a newline
PATH = Text(4096, one_line=False)  # a file name may hold any character but NUL


class Setting:
    """One setting: its dotted name as in config.yaml (e.g. "search.default_top"), default,
    kind, environment variables and help."""

    __slots__ = ("key", "default", "convert", "env", "help")

    def __init__(self, key: str, default: Any, kind: Kind, env: tuple[str, ...], help: str) -> None:
        self.key, self.default, self.convert, self.env, self.help = key, default, kind, env, help

    @property
    def kind(self) -> Kind:
        return self.convert

    def __repr__(self) -> str:
        return f"Setting({self.key!r}, default={self.default!r})"


HOUR, DAY, WEEK = 3600.0, 86400.0, 604800.0

SETTINGS: tuple[Setting, ...] = (
    Setting("model", DEFAULT_MODEL, NAME, ("KB_MODEL",), "embedding model name"),
    Setting("model_source", None, PATH, ("KB_MODEL_SOURCE",), "local model directory"),
    Setting("model_cache", None, PATH, ("KB_MODEL_CACHE",), "converted models (<data_dir>/models)"),
    Setting("query_prefix", "", PREFIX, ("KB_QUERY_PREFIX",), "text put before queries (e5)"),
    Setting("passage_prefix", "", PREFIX, ("KB_PASSAGE_PREFIX",), "text put before passages"),
    # A remote embedding model (`openai:NAME`, `ollama:NAME`; docs/models.md): these send data
    # off the machine. The key is never shown (`kb config`), logged or stored in the DB.
    Setting("embedding.endpoint", None, Url(), ("KB_EMBEDDING_ENDPOINT",), "embedding server URL"),
    Setting(
        "embedding.api_key",
        None,
        Text(4096, secret=True),
        ("KB_API_KEY", "OPENAI_API_KEY"),
        "its API key",
    ),
    Setting(
        "embedding.batch_size", 32, Integer(1, 2048), ("KB_EMBEDDING_BATCH",), "texts per request"
    ),
    Setting(
        "embedding.concurrency",
        4,
        Integer(1, 64),
        ("KB_EMBEDDING_CONCURRENCY",),
        "requests at once",
    ),
    Setting(
        "embedding.timeout_s",
        60.0,
        Number(0, HOUR, above=True),
        ("KB_EMBEDDING_TIMEOUT",),
        "the whole of one request, connecting to the last byte (each retry gets its own)",
    ),
    Setting(
        "embedding.retries", 5, Integer(0, 20), ("KB_EMBEDDING_RETRIES",), "on 429/5xx/timeouts"
    ),
    Setting(
        "embedding.provider",
        "auto",
        NAME,
        ("KB_PROVIDER",),
        "onnxruntime execution provider: auto (CUDA, CoreML, DirectML, else CPU), cpu, cuda, ...",
    ),
    Setting(
        "search.default_top",
        10,
        Integer(1, 1000),
        ("KB_DEFAULT_TOP", "KB_SEARCH_DEFAULT_TOP"),
        "results",
    ),
    Setting(
        "search.default_mode",
        "hybrid",
        Choice("hybrid", "lexical", "vector"),
        ("KB_DEFAULT_MODE", "KB_SEARCH_DEFAULT_MODE"),
        "mode when --mode is not given",
    ),
    Setting(
        "search.fusion",
        "convex",
        Choice("convex", "rrf"),
        ("KB_FUSION",),
        "hybrid: convex (min-max scores, equal weights) or rrf (reciprocal rank)",
    ),
    Setting(
        "search.rrf_k",
        60,
        Integer(1, 100_000),
        ("KB_RRF_K",),
        "Reciprocal Rank Fusion constant (rrf)",
    ),
    Setting(
        "search.reranker",
        "none",
        PATH,
        ("KB_RERANKER",),
        "rerank stage: none, or a cross-encoder (model id or local directory)",
    ),
    Setting(
        "search.rerank_depth",
        30,
        Integer(1, 200),
        ("KB_RERANK_DEPTH",),
        "fused candidates the reranker reads (each costs a model pass)",
    ),
    # A rerank server (`search.reranker` = tei:NAME, openai:NAME, jina:NAME, cohere:NAME;
    # docs/models.md): the query and the top passages leave the machine for it.
    Setting("rerank.endpoint", None, Url(), ("KB_RERANK_ENDPOINT",), "rerank server base URL"),
    Setting(
        "rerank.api_key", None, Text(4096, secret=True), ("KB_RERANK_API_KEY",), "its API key"
    ),
    Setting(
        "rerank.timeout_s",
        3.0,
        Number(0, HOUR, above=True),
        ("KB_RERANK_TIMEOUT",),
        "s a rerank request may take; later, results keep the fused order (with a note)",
    ),
    # A chat model the person runs (`kb ask`, `kb search --expand`; docs/models.md): nothing
    # calls it unless llm.model is set. The key is never shown, logged or stored.
    Setting(
        "llm.model", None, Text(256), ("KB_LLM_MODEL",), "chat model: openai:NAME or ollama:NAME"
    ),
    Setting("llm.endpoint", None, Url(), ("KB_LLM_ENDPOINT",), "chat server base URL"),
    Setting("llm.api_key", None, Text(4096, secret=True), ("KB_LLM_API_KEY",), "its API key"),
    Setting(
        "llm.timeout_s",
        60.0,
        Number(0, HOUR, above=True),
        ("KB_LLM_TIMEOUT",),
        "s per request, in total",
    ),
    Setting("llm.retries", 3, Integer(0, 10), ("KB_LLM_RETRIES",), "on 429/5xx/drops"),
    Setting("llm.max_tokens", 1024, Integer(16, 65536), ("KB_LLM_MAX_TOKENS",), "per answer"),
    Setting(
        "search.expand_timeout_s",
        20.0,
        Number(0, HOUR, above=True),
        ("KB_EXPAND_TIMEOUT",),
        "kb search --expand: s the chat model has to write phrasings (cached after)",
    ),
    Setting(
        "ask.passages",
        8,
        Integer(1, 50),
        ("KB_ASK_PASSAGES",),
        "kb ask: retrieved passages the model reads",
    ),
    Setting(
        "ask.min_similarity",
        0.3,
        Number(0.0, 1.0),
        ("KB_ASK_MIN_SIMILARITY",),
        "kb ask refuses when no passage is this close to the question in meaning (cosine;"
        " all-MiniLM-L6-v2: real questions >= 0.37, off-topic ones <= 0.27)",
    ),
    Setting(
        "search.timeout_s",
        10.0,
        Number(0, HOUR),  # 0: every search stops at its first check
        ("KB_SEARCH_TIMEOUT",),
        "a search stops after this",
    ),
    Setting(
        "search.max_query_chars",
        4000,
        Integer(1, 10_000_000),
        ("KB_MAX_QUERY_CHARS",),
        "longer queries are refused (FTS5's parse time grows with the square of the terms)",
    ),
    Setting(
        "serve.max_connections",
        64,
        Integer(4, 100_000),
        ("KB_SERVE_MAX_CONNECTIONS",),
        "kb serve --transport http: open connections at once (at most 1/4 of the fd limit)",
    ),
    Setting(
        "serve.request_timeout_s",
        10.0,
        Number(0, HOUR, above=True),
        ("KB_SERVE_REQUEST_TIMEOUT",),
        "kb serve --transport http: a client has this long to send a whole request",
    ),
    Setting(
        "serve.max_body_bytes",
        262_144,
        Integer(1024, 64 << 20),
        ("KB_SERVE_MAX_BODY",),
        "kb serve --transport http: larger request bodies get 413",
    ),
    Setting(
        "serve.max_sessions",
        32,
        Integer(1, 100_000),
        ("KB_SERVE_MAX_SESSIONS",),
        "kb serve --transport http: MCP sessions at once (the longest idle makes room)",
    ),
    Setting(
        "serve.session_idle_s",
        600.0,
        Number(0, WEEK, above=True),
        ("KB_SERVE_SESSION_IDLE",),
        "kb serve --transport http: an MCP session idle this long ends",
    ),
    Setting(
        "serve.max_line_bytes",
        1 << 20,
        Integer(1024, 1 << 30),
        ("KB_SERVE_MAX_LINE",),
        "kb serve (stdio): a longer message line is dropped with an error",
    ),
    Setting(
        "search.warm",
        True,
        Boolean(),
        ("KB_WARM",),
        "kb search keeps a warm per-DB search server (model loaded once); KB_NO_WARM=1 is off",
    ),
    Setting(
        "search.warm_idle_s",
        300.0,
        Number(0, WEEK, above=True),
        ("KB_WARM_IDLE_S",),
        "the warm search server exits after this many idle seconds",
    ),
    Setting(
        "vectors.index",
        "auto",
        NAME,
        ("KB_VECTOR_INDEX",),
        "auto (ann from vectors.ann_min_chunks chunks; below it sqlite-vec one-shot,"
        " live-matrix in servers; the warm server answers sqlite-vec's from memory),"
        " sqlite-vec, live-matrix, ann",
    ),
    Setting(
        "vectors.ann_min_chunks",
        200_000,
        Integer(0, 10**12),
        ("KB_ANN_MIN_CHUNKS",),
        "auto uses the approximate index from this many chunks (0: never)",
    ),
    Setting(
        "chunking.max_tokens", 200, Integer(32, 8192), ("KB_CHUNK_MAX_TOKENS",), "largest chunk"
    ),
    Setting(
        "chunking.min_tokens", 40, Integer(0, 8192), ("KB_CHUNK_MIN_TOKENS",), "smallest section"
    ),
    Setting(
        "ingestion.workers",
        1,
        Integer(0, 1024),
        ("KB_WORKERS",),
        "parser processes (0: in-process)",
    ),
    Setting(
        "ingestion.timeout_s",
        120.0,
        Number(0, DAY, above=True),
        ("KB_PARSE_TIMEOUT",),
        "per-file parse limit",
    ),
    Setting(
        "ingestion.max_memory_mb",
        4096,
        Integer(64, 1 << 24),
        ("KB_PARSE_MEMORY_MB",),
        "per parser process",
    ),
    Setting(
        "ingestion.max_file_mb",
        20.0,
        Number(0, 1_000_000, above=True),
        ("KB_MAX_FILE_MB",),
        "larger files skipped",
    ),
    Setting(
        "ingestion.enable_ocr",
        "auto",
        Choice("auto", "always", "never"),
        ("KB_ENABLE_OCR",),
        "OCR for pages without text",
    ),
    Setting("ingestion.follow_symlinks", False, Boolean(), ("KB_FOLLOW_SYMLINKS",), "walk links"),
    Setting("trace_sql", False, Boolean(), ("KB_TRACE_SQL",), "print each SQL statement (stderr)"),
    Setting(
        "ingestion.include_generated",
        False,
        Boolean(),
        ("KB_INCLUDE_GENERATED",),
        "index minified, generated and lock files too (docs/formats.md)",
    ),
    Setting(
        "ingestion.executor",
        "local",
        Choice("local", "ray"),
        ("KB_EXECUTOR",),
        "where files are parsed and embedded: local processes, or a Ray cluster (kb-search[ray])",
    ),
    Setting(
        "ingestion.ray_stall_s",
        900.0,
        Number(0, WEEK),
        ("KB_RAY_STALL_S",),
        "a Ray worker that answers nothing for this long is taken as hung: killed, its file"
        " sent again (0: no limit)",
    ),
    Setting(
        "ingestion.ray_address",
        None,
        Text(2048),
        ("KB_RAY_ADDRESS",),
        "Ray cluster: auto, ray://host:port, host:port; unset starts a local Ray for the run",
    ),
)
SETTINGS_BY_KEY = {s.key: s for s in SETTINGS}
SECRET_SETTINGS = frozenset({"embedding.api_key", "llm.api_key", "rerank.api_key"})


def check(setting: Setting, value: Any, origin: str) -> Any:
    """`value` as the setting takes it; ValueError with the one-line reason, naming `origin`
    (a file, "env NAME" or "flag"), the key and what is allowed."""
    if value is None:
        return None
    kind = setting.convert
    try:
        return kind(value)
    except (TypeError, ValueError, OverflowError):
        shown = ""
        if getattr(kind, "shows_value", True):
            shown = " " + _short_repr(value)
        allowed = getattr(kind, "allowed", "") or "what it takes"
        raise ValueError(
            f"{origin}: {setting.key}{shown} is not allowed: it takes {allowed}"
        ) from None


def _short_repr(value: Any) -> str:
    from kb_search.sanitize import printable

    try:
        text = repr(value)
    except ValueError:  # an integer too long to print
        return "(a very long number)"
    if len(text) > 60:
        text = text[:57] + "..."
    return printable(text)
