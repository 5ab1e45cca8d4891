"""What every network call kb makes shares: one redaction of secrets for anything that prints,
logs or stores a URL or a server's answer, and a total deadline per request.

Redaction: `redact(text, secrets)` hides URL userinfo (`http://user:pw@host` ->
`http://***@host`), the value after `Bearer`/`Basic`/`Authorization:`, `api_key=`/`token=`-style
pairs (query strings and JSON alike), OpenAI-style `sk-...` keys, and every secret string the
caller names (the configured API key: a server may echo it in an error body). `redact_url` is
the same for one URL, query parameters that name a key included.

Deadline: httpx's timeouts are per socket operation, so a server that sends one byte every two
seconds never trips a 5 s read timeout. `Deadline` is a monotonic end time; a client from
`deadline_client` caps every connect, read and write by what is left of the deadline of the
request it serves, so `send_with_deadline` and `stream_lines` give up at the deadline itself,
headers, body and streamed lines alike. On any other client the deadline is checked between
reads and every socket timeout is capped by what was left when the request started.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import httpx2 as httpx

REDACTED = "***"
T = TypeVar("T")
MIN_SECRET_LENGTH = 4  # a shorter "secret" would blank ordinary letters everywhere

# Each pattern starts at a literal anchor and runs one bounded character class, so it is linear
# in the text: server answers are untrusted and may be large.
_USERINFO = re.compile(r"://[^/\s@?#\"'<>]+@")
_AUTH_SCHEME = re.compile(r"(?i)\b(bearer|basic|token)(\s+)[^\s\"',;}\]]+")
_AUTH_HEADER = re.compile(
    r"(?i)\b(authorization|x-api-key|api-key)(\"?\s*[:=]\s*\"?)"
    r"(?!bearer\b|basic\b|token\b)[^\s\"',;}\]]+"
)
_KEY_PAIR = re.compile(
    r"(?i)\b(api[_-]?key|apikey|access[_-]?token|auth[_-]?token|secret|password|passwd|token|key)"
    r"(\"?\s*[:=]\s*\"?)([^\s\"'&,;}\]]+)"
)
_OPENAI_KEY = re.compile(r"\bsk-[A-Za-z0-9_-]{8,}")
_SECRET_QUERY_NAMES = frozenset(
    {
        "api_key",
        "apikey",
        "api-key",
        "key",
        "token",
        "access_token",
        "auth",
        "secret",
        "password",
        "sig",
        "signature",
    }
)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with every secret kb can recognise replaced by `***` (see the module's doc)."""
    for secret in sorted(
        {s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True
    ):
        text = text.replace(secret, REDACTED)
    text = _USERINFO.sub("://" + REDACTED + "@", text)
    text = _AUTH_SCHEME.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
    text = _AUTH_HEADER.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
    text = _KEY_PAIR.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
    return _OPENAI_KEY.sub(REDACTED, text)


def redact_url(url: str | httpx.URL) -> str:
    """The URL without its userinfo and with the values of key-like query parameters hidden;
    a text that is not a URL is redacted as text."""
    text = str(url)
    try:
        parsed = httpx.URL(text)
    except (httpx.InvalidURL, TypeError, ValueError):
        return _redact_authority(text)
    if not parsed.scheme or not parsed.host:
        return _redact_authority(text)
    if parsed.userinfo:
        parsed = parsed.copy_with(username=None, password=None)
        text = str(parsed)
        scheme_end = text.index("://") + 3
        text = text[:scheme_end] + REDACTED + "@" + text[scheme_end:]
    if parsed.query:
        pairs = [p.split("=", 1) for p in parsed.query.decode("ascii", "replace").split("&")]
        hidden = [
            f"{p[0]}={REDACTED}"
            if len(p) == 2 and p[0].lower() in _SECRET_QUERY_NAMES
            else "=".join(p)
            for p in pairs
        ]
        text = (
            text.split("?", 1)[0]
            + "?"
            + "&".join(hidden)
            + ("#" + parsed.fragment if parsed.fragment else "")
        )
    return redact(text)


def _redact_authority(text: str) -> str:
    """A text meant as a URL that does not parse as one (`user:pw@host/v1`): what comes before
    an `@` in its authority part is hidden all the same."""
    start = text.find("://") + 3 if "://" in text else 0
    end = min((i for i in (text.find(c, start) for c in "/?#") if i >= 0), default=len(text))
    at = text.rfind("@", start, end)
    if at >= 0:
        text = text[:start] + REDACTED + text[at:]
    return redact(text)


# ---- total deadline ----------------------------------------------------------------------------


class DeadlineExceeded(httpx.TimeoutException):
    """The request's total time ran out (a timeout, so code that retries timeouts sees one)."""


class Deadline:
    """`seconds` from now (never later than `not_after`, a `time.monotonic()` value, when
    given: a search's budget, say)."""

    def __init__(self, seconds: float, not_after: float | None = None) -> None:
        if not seconds > 0:  # also refuses NaN
            raise ValueError(f"a deadline needs a positive number of seconds, not {seconds!r}")
        self.seconds = float(seconds)
        end = time.monotonic() + self.seconds
        self.end = end if not_after is None else min(end, not_after)

    def remaining(self) -> float:
        """Seconds left (> 0); DeadlineExceeded once it is spent."""
        left = self.end - time.monotonic()
        if left <= 0:
            raise DeadlineExceeded(f"no complete answer within {self.seconds:g} s")
        return left

    @property
    def expired(self) -> bool:
        return time.monotonic() >= self.end

    def cap(self, timeout: float | None) -> float:
        """`timeout` (None: none) cut to what is left; DeadlineExceeded when nothing is."""
        left = self.remaining()
        return left if timeout is None else min(timeout, left)


# The deadline of the request the current thread is sending or reading; the sockets of a
# `deadline_client` read it at every operation.
_ACTIVE: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar(
    "kb_search_net_deadline", default=None
)


def _capped(timeout: float | None, error: type[Exception]) -> float | None:
    deadline = _ACTIVE.get()
    if deadline is None:
        return timeout
    left = deadline.end - time.monotonic()
    if left <= 0:
        raise error(f"no complete answer within {deadline.seconds:g} s")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream:
    """A network stream whose every read and write waits at most what the deadline leaves."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        import httpcore2

        return self._stream.read(max_bytes, _capped(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        import httpcore2

        self._stream.write(buffer, _capped(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> _DeadlineStream:
        import httpcore2

        upgraded = self._stream.start_tls(
            ssl_context, server_hostname, _capped(timeout, httpcore2.ConnectTimeout)
        )
        return _DeadlineStream(upgraded)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend:
    """httpcore's network backend with every connect and stream capped by the deadline."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> Any:
        import httpcore2

        stream = self._backend.connect_tcp(
            host, port, _capped(timeout, httpcore2.ConnectTimeout), local_address, socket_options
        )
        return _DeadlineStream(stream)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> Any:
        import httpcore2

        stream = self._backend.connect_unix_socket(
            path, _capped(timeout, httpcore2.ConnectTimeout), socket_options
        )
        return _DeadlineStream(stream)

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def deadline_client(**options: Any) -> httpx.Client:
    """An httpx Client (the same options; redirects off unless asked) whose sockets honour, to
    the moment, the deadline of the request they serve."""
    options.setdefault("follow_redirects", False)  # a redirect could carry a key elsewhere
    client = httpx.Client(**options)
    # The one place kb reaches inside httpx: each transport's connection pool (its proxies'
    # too) gets the deadline-aware network backend before it opens a connection.
    transports = [client._transport, *client._mounts.values()]
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        if pool is not None and hasattr(pool, "_network_backend"):
            pool._network_backend = _DeadlineBackend(pool._network_backend)
    default_pool = getattr(client._transport, "_pool", None)
    if not isinstance(getattr(default_pool, "_network_backend", None), _DeadlineBackend):
        raise RuntimeError("this httpx has no network backend to put a deadline on")
    return client


def _cap_request(request: httpx.Request, deadline: Deadline) -> None:
    timeouts = dict(request.extensions.get("timeout") or {})
    for kind in ("connect", "read", "write", "pool"):
        timeouts[kind] = deadline.cap(timeouts.get(kind))
    request.extensions["timeout"] = timeouts


def _under(deadline: Deadline, step: Callable[[], T]) -> T:
    """`step()` with the deadline active; a timeout once it is spent is DeadlineExceeded."""
    token = _ACTIVE.set(deadline)
    try:
        return step()
    except httpx.TimeoutException as exc:
        if deadline.expired and not isinstance(exc, DeadlineExceeded):
            raise DeadlineExceeded(
                f"no complete answer within {deadline.seconds:g} s", request=exc.request
            ) from None
        raise
    finally:
        _ACTIVE.reset(token)


@contextlib.contextmanager
def open_stream(
    client: httpx.Client, request: httpx.Request, deadline: Deadline
) -> Iterator[httpx.Response]:
    """`with open_stream(client, request, deadline) as response:` the response with its status
    and headers read before `deadline`, its body still to read (`read_body`, `iter_lines`);
    closed on exit."""
    _cap_request(request, deadline)
    response = _under(deadline, lambda: client.send(request, stream=True))
    try:
        yield response
    finally:
        response.close()


def read_body(
    response: httpx.Response, deadline: Deadline, *, max_bytes: int | None = None
) -> bytes:
    """The rest of a streamed response's body, read before `deadline`; kept as its content
    (`.text`, `.json()` work after). Longer than `max_bytes`: httpx.DecodingError, before the
    rest is read."""
    body = bytearray()
    chunks = response.iter_bytes()
    while (chunk := _under(deadline, lambda: next(chunks, None))) is not None:
        body += chunk
        if max_bytes is not None and len(body) > max_bytes:
            raise httpx.DecodingError(
                f"the answer is longer than {max_bytes:,} bytes", request=response.request
            )
        deadline.remaining()
    response._content = bytes(body)  # what `Response.read()` keeps, read under the deadline
    return response._content


def send_with_deadline(
    client: httpx.Client,
    request: httpx.Request,
    deadline: Deadline,
    *,
    max_bytes: int | None = None,
) -> httpx.Response:
    """Send `request` and read its whole body before `deadline` (DeadlineExceeded after, at
    the deadline itself on a `deadline_client`); a body longer than `max_bytes` is refused."""
    with open_stream(client, request, deadline) as response:
        read_body(response, deadline, max_bytes=max_bytes)
    return response


def iter_lines(
    response: httpx.Response, deadline: Deadline, *, max_line_bytes: int = 1 << 20
) -> Iterator[str]:
    """The lines of a streamed response's body (SSE, NDJSON; without their line ends), each
    read before `deadline`; a line longer than `max_line_bytes` is httpx.DecodingError."""
    chunks = response.iter_text()
    pending = ""
    while (chunk := _under(deadline, lambda: next(chunks, None))) is not None:
        *lines, pending = (pending + chunk).split("\n")
        for line in lines:
            yield line.removesuffix("\r")
        if len(pending) > max_line_bytes:  # characters: at least as many bytes
            raise httpx.DecodingError(
                f"a line of the answer is longer than {max_line_bytes:,} bytes",
                request=response.request,
            )
        deadline.remaining()
    if pending:
        yield pending.removesuffix("\r")


def stream_lines(
    client: httpx.Client,
    request: httpx.Request,
    deadline: Deadline,
    *,
    max_line_bytes: int = 1 << 20,
    max_error_bytes: int = 64 << 10,
) -> Iterator[str]:
    """The lines of the answer to `request`, all before `deadline`. An answer that is not 2xx
    is httpx.HTTPStatusError with its body (at most `max_error_bytes`) read: redact it before
    showing it."""
    with open_stream(client, request, deadline) as response:
        if not response.is_success:
            read_body(response, deadline, max_bytes=max_error_bytes)
            raise httpx.HTTPStatusError(
                f"HTTP {response.status_code}", request=request, response=response
            )
        yield from iter_lines(response, deadline, max_line_bytes=max_line_bytes)
