"""Embeddings from an HTTP endpoint: an OpenAI-compatible server (`openai:NAME`: OpenAI, vLLM,
llama.cpp server, LM Studio, text-embeddings-inference, Ollama's /v1) or Ollama's native
/api/embed (`ollama:NAME`).

Both schemes share this client; they differ only in the path, one request field and the shape
of the answer. Ollama keeps its own scheme because its native endpoint has a default address,
truncates over-long input on request (`truncate`) instead of failing the batch, and publishes
the model's context length (/api/show).

Texts go in batches of `batch_size`, up to `concurrency` requests at a time; a 429 or 5xx, a
timeout or a dropped connection is retried with exponential backoff and jitter (a Retry-After
is honoured). The API key travels only in the Authorization header: no message, log line or
database row carries it.
"""

from __future__ import annotations

import email.utils
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

OLLAMA_ENDPOINT = "http://localhost:11434"
PROBE_TEXT = "kb probes this model once: how long is one of its vectors?"
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 20.0
RETRY_AFTER_CAP_S = 60.0
QUERY_ATTEMPTS = 2  # a search must answer soon: one quick retry, then the lexical leg alone


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
        raise ConfigError(
            f"this database was built with {name} at {recorded}; kb sends text only to a server"
            f" you name: --endpoint {recorded} (or embedding.endpoint / KB_EMBEDDING_ENDPOINT)"
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
        raise ConfigError(f"embedding endpoint {endpoint!r} is not a URL: {exc}") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(f"embedding endpoint {endpoint!r} must be an http:// or https:// URL")
    return endpoint.rstrip("/")


def _on_this_machine(endpoint: str) -> bool:
    """A loopback address: a server on this machine (what Ollama and local servers use)."""
    import ipaddress

    try:
        host = httpx.URL(endpoint).host
    except (httpx.InvalidURL, TypeError, ValueError):
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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
        self._client = httpx.Client(
            headers=headers,
            timeout=settings.timeout_s,
            limits=httpx.Limits(max_connections=settings.concurrency),
            follow_redirects=False,  # a redirect could carry the key to another host
        )

    @property
    def source(self) -> str:
        """Where the vectors come from, for `kb doctor` (never the key)."""
        return f"endpoint {self.embed_url}"

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
        """Embed one text to learn the vector length (once, when the DB has no record)."""
        vectors = self._request([PROBE_TEXT], self.settings.retries + 1)
        self._dim = len(vectors[0])
        if self._dim == 0:
            raise EndpointError(f"{self.name} at {self.embed_url} returned empty vectors")

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
        for attempt in range(attempts):
            if stop is not None and stop.is_set():
                raise EndpointError(f"embedding endpoint {self.embed_url}: another batch failed")
            delay = backoff(attempt)
            try:
                response = self._client.post(self.embed_url, json=self._body(texts))
            except httpx.TimeoutException:
                reason = f"no answer within {self.settings.timeout_s:g} s"
            except httpx.TransportError as exc:
                reason = _first_line(exc) or type(exc).__name__
            else:
                if response.status_code == 200:
                    return self._vectors(response, len(texts))
                if response.status_code != 429 and response.status_code < 500:
                    raise EndpointError(self._refused(response))
                reason = f"HTTP {response.status_code}"
                delay = retry_after(response) or delay
            if attempt + 1 < attempts and not (stop is not None and stop.is_set()):
                self._sleep(delay)
        tries = f"{attempts} tries" if attempts > 1 else "1 try"
        raise EndpointError(f"embedding endpoint {self.embed_url} failed ({tries}): {reason}")

    def _refused(self, response: httpx.Response) -> str:
        status = response.status_code
        hint = ""
        if status in (401, 403):
            hint = ": check the API key (KB_API_KEY, OPENAI_API_KEY or embedding.api_key)"
        elif status == 404:
            hint = f": is {self.model!r} served there, and is the URL the API's base?"
        detail = _first_line(response.text)[:200]
        return f"embedding endpoint {self.embed_url} answered HTTP {status}{hint} ({detail})"

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
                f"embedding endpoint {self.embed_url} answered something that is not an"
                f" embeddings response ({type(exc).__name__}: {_first_line(exc)[:120]})"
            ) from None
        if matrix.ndim != 2 or len(matrix) != count:
            raise EndpointError(
                f"embedding endpoint {self.embed_url} returned {len(matrix)} vectors for"
                f" {count} texts"
            )
        return matrix

    def _checked(self, matrix: np.ndarray) -> np.ndarray:
        """The vectors, unit length (cosine is all kb does with them), of the DB's dimension."""
        if self._dim is not None and matrix.shape[1] != self._dim:
            raise EndpointError(
                f"{self.name} at {self.embed_url} returned {matrix.shape[1]}-dimension vectors,"
                f" but this database holds {self._dim}-dimension ones for it: is another model"
                " served there? (`kb reindex --model` switches models)"
            )
        if not np.isfinite(matrix).all():
            raise EndpointError(f"{self.name} at {self.embed_url} returned NaN or infinite values")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return (matrix / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)

    def _published_max_input(self) -> int:
        """The context length the server publishes (Ollama /api/show; vLLM's /v1/models
        max_model_len), one try, no retries; 0 when it publishes none."""
        try:
            if self.scheme == "ollama":
                base = self.endpoint.removesuffix("/api/embed")
                info = self._client.post(f"{base}/api/show", json={"model": self.model}).json()
                details = info.get("model_info", {})
                lengths = [v for k, v in details.items() if k.endswith(".context_length")]
                return int(lengths[0]) if lengths else 0
            base = self.endpoint.removesuffix("/embeddings")
            models = self._client.get(f"{base}/models").json().get("data", [])
            found = [m.get("max_model_len") for m in models if m.get("id") == self.model]
            return int(found[0]) if found and found[0] else 0
        except (httpx.HTTPError, ValueError, TypeError, AttributeError):
            return 0


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
