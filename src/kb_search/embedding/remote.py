"""Embeddings from an HTTP endpoint: an OpenAI-compatible server (`openai:NAME`: OpenAI, vLLM,
llama.cpp server, LM Studio, text-embeddings-inference, Ollama's /v1) or Ollama's native
/api/embed (`ollama:NAME`).

Both schemes share this client; they differ only in the path, one request field and the shape
of the answer. Ollama keeps its own scheme because its native endpoint has a default address,
truncates over-long input on request (`truncate`) instead of failing the batch, and publishes
the model's context length (/api/show).

Texts go in batches of `batch_size`, up to `concurrency` requests at a time; a 429 or 5xx, a
timeout or a dropped connection is retried with exponential backoff and jitter (a Retry-After
is honoured). Each request has a total deadline (`embedding.timeout_s`, connecting to the
last byte: a server that drips its answer is cut there; a search's budget cuts it sooner). The
API key travels only in the Authorization header: every message passes through
`net.redact` (URL userinfo, the key itself, whatever a server echoes of it), and the URL a
database records carries no userinfo. What a server answers is checked before use: vector
count, dimension, finite and non-zero values, a context length that is a sane integer.
"""

from __future__ import annotations

import email.utils
import math
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import httpx2 as httpx
import numpy as np

from kb_search.embedding import split_remote
from kb_search.errors import ConfigError, EndpointError
from kb_search.net import (
    Deadline,
    deadline_client,
    limit_spent,
    redact,
    redact_url,
    send_with_deadline,
)

OLLAMA_ENDPOINT = "http://localhost:11434"
PROBE_TEXT = "kb probes this model once: how long is one of its vectors?"
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 20.0
RETRY_AFTER_CAP_S = 60.0
QUERY_ATTEMPTS = 2  # a search must answer soon: one quick retry, then the lexical leg alone
MAX_DIM = 16_384  # longer vectors than any embedding model makes: a bad answer
MAX_CONTEXT = 10_000_000  # a published context length past this is not believed
INFO_BYTES = 8 << 20  # /api/show, /v1/models answers (Ollama's carries the model's license)


@dataclass(frozen=True)
class RemoteSettings:
    endpoint: str
    api_key: str | None = field(default=None, repr=False)
    batch_size: int = 32
    concurrency: int = 4
    timeout_s: float = 60.0
    retries: int = 5
    query_prefix: str = ""
    passage_prefix: str = ""


def endpoint_for(name: str, configured: str | None, recorded: str | None) -> str:
    """The base URL: the configured one, else the one the DB was built with, else Ollama's
    default address; an `openai:` model without one is a ConfigError."""
    scheme, model = split_remote(name)
    if recorded and not configured and not _on_this_machine(recorded):
        # A database file can come from someone else (`kb export`): the address it records
        # must not decide where this user's notes and queries are sent.
        shown = redact_url(recorded)
        raise ConfigError(
            f"this database was built with {name} at {shown}; kb sends text only to a server"
            f" you name: --endpoint {shown} (or embedding.endpoint / KB_EMBEDDING_ENDPOINT)"
        )
    if recorded and not configured and "***" in recorded:  # its secrets were left out
        raise ConfigError(
            f"this database was built with {name} at {redact_url(recorded)}, whose credentials"
            " kb does not store: name it again with them (--endpoint URL, embedding.endpoint or"
            " KB_EMBEDDING_ENDPOINT)"
        )
    endpoint = configured or recorded or (OLLAMA_ENDPOINT if scheme == "ollama" else None)
    if not endpoint:
        raise ConfigError(
            f"{name} needs the address of its server: kb init --model {name} --endpoint URL"
            " (or embedding.endpoint / KB_EMBEDDING_ENDPOINT)"
        )
    try:
        url = httpx.URL(endpoint)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise ConfigError(
            f"embedding endpoint {redact_url(endpoint)!r} is not a URL: {redact(str(exc))}"
        ) from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(
            f"embedding endpoint {redact_url(endpoint)!r} must be an http:// or https:// URL"
        )
    return endpoint.rstrip("/")


def recordable(endpoint: str) -> str:
    """The endpoint as a database may record it: no userinfo, no key in its query (what
    `net.redact_url` shows), so neither `kb export` nor a stolen kb.db carries a secret."""
    return redact_url(endpoint)


def _on_this_machine(endpoint: str) -> bool:
    """A loopback address: a server on this machine (what Ollama and local servers use):
    localhost, 127.0.0.0/8, ::1, and IPv4-mapped loopback, written any way a URL allows."""
    import ipaddress

    try:
        host = httpx.URL(endpoint).host
    except (httpx.InvalidURL, TypeError, ValueError):
        return False
    host = host.strip("[]").rstrip(".").lower()
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


class RemoteEmbedder:
    """A TextEmbedder whose model runs behind an HTTP endpoint. `dim`/`max_tokens` come from
    the database binding when known; else the first use probes the endpoint once."""

    def __init__(
        self,
        name: str,
        settings: RemoteSettings,
        dim: int | None = None,
        max_tokens: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
        sizing_tokenizer: str | None = None,
        count: Callable[[str], int] | None = None,
    ) -> None:
        """`sizing_tokenizer`/`count`: the tokenizer.json chunks are sized with and its count
        (the server's own tokenizer is out of reach); kb eval's chunker calls `count_tokens`."""
        self.name = name
        self.scheme, self.model = split_remote(name)
        self.settings = settings
        self.endpoint = settings.endpoint
        self._dim, self._max_tokens = dim, max_tokens
        self._sleep = sleep
        self.sizing_tokenizer = sizing_tokenizer
        if count is not None:
            self.count_tokens = count
        headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
        self._client = deadline_client(
            headers=headers,
            timeout=settings.timeout_s,
            limits=httpx.Limits(max_connections=settings.concurrency),
            follow_redirects=False,  # a redirect could carry the key to another host
        )
        # the URL's userinfo and the key are secrets: every message shows the URL as this
        self.shown_url = redact_url(self.embed_url)
        self.recorded_endpoint = recordable(self.endpoint)

    @property
    def source(self) -> str:
        """Where the vectors come from, for `kb doctor` (never the key)."""
        return f"endpoint {self.shown_url}"

    def _redact(self, text: str) -> str:
        return redact(text, [self.settings.api_key])

    @property
    def embed_url(self) -> str:
        suffix = "/api/embed" if self.scheme == "ollama" else "/embeddings"
        return self.endpoint if self.endpoint.endswith(suffix) else self.endpoint + suffix

    @property
    def round_size(self) -> int:
        """Texts one round of concurrent requests embeds (what `kb reindex` commits at once)."""
        return self.settings.batch_size * self.settings.concurrency

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.probe()
        assert self._dim is not None
        return self._dim

    @property
    def max_tokens(self) -> int:
        """The model's input limit in its tokens as the server publishes it; 0: not published
        (the server truncates or rejects longer input itself)."""
        if self._max_tokens is None:
            self._max_tokens = self._published_max_input()
        return self._max_tokens

    def probe(self) -> None:
        """Embed one text to learn the vector length (when the DB has no record), or to
        check that this server answers with the recorded one (a server named anew)."""
        vectors = self._request([PROBE_TEXT], self.settings.retries + 1)
        if self._dim is not None:
            self._checked(vectors)
            return
        dim = vectors.shape[1]
        if not 0 < dim <= MAX_DIM:
            raise EndpointError(
                f"{self.name} at {self.shown_url} returned {dim}-dimension vectors"
                f" (kb takes 1 to {MAX_DIM:,})"
            )
        self._dim = dim
        self._checked(vectors)

    def embed_query(self, text: str) -> np.ndarray:
        return self._checked(self._request([self.settings.query_prefix + text], QUERY_ATTEMPTS))[0]

    def embed_passages(
        self,
        texts: Sequence[str],
        batch_size: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """Vectors in input order; batches go `concurrency` at a time. The first batch that
        fails for good stops the rest (EndpointError): nothing is returned half done."""
        size = batch_size or self.settings.batch_size
        prefixed = [self.settings.passage_prefix + t for t in texts]
        batches = [prefixed[i : i + size] for i in range(0, len(prefixed), size)]
        if not batches:
            return np.zeros((0, self.dim), dtype=np.float32)
        attempts = self.settings.retries + 1
        results: list[np.ndarray | None] = [None] * len(batches)
        stop = threading.Event()  # set by the first failure: the other batches stop retrying
        with ThreadPoolExecutor(min(self.settings.concurrency, len(batches))) as pool:
            futures = {
                pool.submit(self._request, batch, attempts, stop): i
                for i, batch in enumerate(batches)
            }
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for future in done:
                    if (error := future.exception()) is not None:
                        stop.set()
                        for other in pending:
                            other.cancel()
                        raise error
                    index = futures[future]
                    results[index] = self._checked(future.result())
                    if progress is not None:
                        progress(len(batches[index]))
        return np.concatenate([r for r in results if r is not None])

    def close(self) -> None:
        self._client.close()

    # ---- the wire ------------------------------------------------------------------------------

    def _body(self, texts: list[str]) -> dict[str, Any]:
        if self.scheme == "ollama":
            return {"model": self.model, "input": texts, "truncate": True}
        return {"model": self.model, "input": texts, "encoding_format": "float"}

    def _request(
        self, texts: list[str], attempts: int, stop: threading.Event | None = None
    ) -> np.ndarray:
        """POST one batch, retrying what may pass (429, 5xx, timeouts, dropped connections)."""
        reason = ""
        tried = 0
        for attempt in range(attempts):
            if stop is not None and stop.is_set():
                raise EndpointError(f"embedding endpoint {self.shown_url}: another batch failed")
            if limit_spent():  # the caller's budget (a search's) is spent: no more tries
                break
            delay = backoff(attempt)
            tried += 1
            try:
                deadline = Deadline(self.settings.timeout_s)
                request = self._client.build_request("POST", self.embed_url, json=self._body(texts))
                response = send_with_deadline(
                    self._client, request, deadline, max_bytes=answer_limit(len(texts))
                )
            except httpx.TimeoutException:
                reason = f"no answer within {self.settings.timeout_s:g} s"
                if limit_spent():
                    reason = "no answer within the time left to the search"
            except httpx.DecodingError as exc:
                raise EndpointError(
                    f"embedding endpoint {self.shown_url}: {self._redact(_first_line(exc))}"
                ) from None
            except httpx.TransportError as exc:
                reason = self._redact(_first_line(exc) or type(exc).__name__)
            else:
                if response.status_code == 200:
                    return self._vectors(response, len(texts))
                if response.status_code != 429 and response.status_code < 500:
                    raise EndpointError(self._refused(response))
                reason = f"HTTP {response.status_code}"
                delay = retry_after(response) or delay
            if attempt + 1 < attempts and not (stop is not None and stop.is_set()):
                self._sleep(delay)
        tries = f"{tried} tries" if tried != 1 else "1 try"
        raise EndpointError(f"embedding endpoint {self.shown_url} failed ({tries}): {reason}")

    def _refused(self, response: httpx.Response) -> str:
        status = response.status_code
        hint = ""
        if status in (401, 403):
            hint = ": check the API key (KB_API_KEY, OPENAI_API_KEY or embedding.api_key)"
        elif status == 404:
            hint = f": is {self.model!r} served there, and is the URL the API's base?"
        detail = self._redact(_first_line(response.text)[:200])
        return f"embedding endpoint {self.shown_url} answered HTTP {status}{hint} ({detail})"

    def _vectors(self, response: httpx.Response, count: int) -> np.ndarray:
        try:
            payload = response.json()
            if self.scheme == "ollama":
                rows = payload["embeddings"]
            else:
                rows = [d["embedding"] for d in sorted(payload["data"], key=lambda d: d["index"])]
            matrix = np.asarray(rows, dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EndpointError(
                f"embedding endpoint {self.shown_url} answered something that is not an"
                f" embeddings response ({type(exc).__name__}:"
                f" {self._redact(_first_line(exc)[:120])})"
            ) from None
        if matrix.ndim != 2 or len(matrix) != count:
            raise EndpointError(
                f"embedding endpoint {self.shown_url} returned {len(matrix)} vectors for"
                f" {count} texts"
            )
        return matrix

    def _checked(self, matrix: np.ndarray) -> np.ndarray:
        """The vectors, unit length (cosine is all kb does with them), of the DB's dimension."""
        if self._dim is not None and matrix.shape[1] != self._dim:
            raise EndpointError(
                f"{self.name} at {self.shown_url} returned {matrix.shape[1]}-dimension vectors,"
                f" but this database holds {self._dim}-dimension ones for it: is another model"
                " served there? (`kb reindex --model` switches models)"
            )
        if not np.isfinite(matrix).all():
            raise EndpointError(f"{self.name} at {self.shown_url} returned NaN or infinite values")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if (zero := np.flatnonzero(norms[:, 0] == 0)).size:
            # no direction: it would match nothing, silently (a server's fault, not the text's)
            raise EndpointError(
                f"{self.name} at {self.shown_url} returned {zero.size} all-zero vector(s)"
                f" (of {len(matrix)}): a vector with no direction cannot be searched"
            )
        return (matrix / norms).astype(np.float32, copy=False)

    def _published_max_input(self) -> int:
        """The context length the server publishes (Ollama /api/show; vLLM's /v1/models
        max_model_len), one try, no retries; 0 when it publishes none, or nothing that is a
        whole number of tokens from 1 to MAX_CONTEXT (1e999, -5, "lots")."""
        try:
            if self.scheme == "ollama":
                base = self.endpoint.removesuffix("/api/embed")
                info = self._info("POST", f"{base}/api/show", json={"model": self.model})
                details = info.get("model_info", {})
                lengths = [v for k, v in details.items() if k.endswith(".context_length")]
                return context_length(lengths[0]) if lengths else 0
            base = self.endpoint.removesuffix("/embeddings")
            models = self._info("GET", f"{base}/models").get("data", [])
            found = [m.get("max_model_len") for m in models if m.get("id") == self.model]
            return context_length(found[0]) if found else 0
        except (httpx.HTTPError, ValueError, TypeError, AttributeError):
            return 0

    def _info(self, method: str, url: str, **body: Any) -> Any:
        request = self._client.build_request(method, url, **body)
        deadline = Deadline(self.settings.timeout_s)
        return send_with_deadline(self._client, request, deadline, max_bytes=INFO_BYTES).json()


def context_length(value: object) -> int:
    """A published context length: a whole number from 1 to MAX_CONTEXT, else 0 (unknown)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return 0
    number = int(value)
    return number if 0 < number <= MAX_CONTEXT else 0


def answer_limit(texts: int) -> int:
    """The most bytes an embeddings answer for `texts` texts may take (JSON floats of up to
    MAX_DIM dimensions, with room to spare)."""
    return (1 << 20) + texts * MAX_DIM * 32


def backoff(attempt: int) -> float:
    """Exponential backoff with jitter: half the step fixed, half random (retries from many
    clients spread out, and each wait still grows)."""
    step = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2**attempt)
    return step / 2 + random.uniform(0, step / 2)


def retry_after(response: httpx.Response) -> float | None:
    """The server's Retry-After (seconds, or an HTTP date), capped; None when absent."""
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return min(max(seconds, 0.0), RETRY_AFTER_CAP_S)


def _first_line(value: object) -> str:
    text = str(value).strip()
    return text.splitlines()[0] if text else ""
