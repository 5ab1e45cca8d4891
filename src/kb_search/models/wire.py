"""What the chat and rerank clients share on the wire: an endpoint checked once, a total
deadline per request (httpx's timeouts are per read: a server that drips a byte a second never
trips them), retries of what may pass (429 with its Retry-After, 5xx, timeouts, dropped
connections) with backoff, bounded reads, and one-line errors that never carry the key.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx2 as httpx

from kb_search.embedding.remote import backoff, retry_after
from kb_search.errors import ConfigError, EndpointError

CONNECT_TIMEOUT_S = 10.0
MAX_LINE_BYTES = 1 << 20  # one SSE/NDJSON line; a server that sends more is refused
MAX_BODY_BYTES = 16 << 20  # a whole answer


def checked_endpoint(endpoint: str, setting: str) -> str:
    """`endpoint` as a base URL without a trailing slash; ConfigError unless http(s)."""
    try:
        url = httpx.URL(endpoint)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise ConfigError(f"{setting} {endpoint!r} is not a URL: {exc}") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(f"{setting} {endpoint!r} must be an http:// or https:// URL")
    return endpoint.rstrip("/")


def client(api_key: str | None, connections: int = 4) -> httpx.Client:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    return httpx.Client(
        headers=headers,
        limits=httpx.Limits(max_connections=connections),
        follow_redirects=False,  # a redirect could carry the key to another host
    )


class Deadline:
    """A point in time (time.monotonic) a whole request must be done by."""

    def __init__(self, seconds: float, at: float | None = None) -> None:
        end = time.monotonic() + seconds
        self.end = min(end, at) if at is not None else end
        self.seconds = seconds

    def left(self) -> float:
        return self.end - time.monotonic()

    def timeout(self) -> httpx.Timeout:
        """httpx's per-operation timeouts, none longer than what is left."""
        left = max(self.left(), 0.001)
        return httpx.Timeout(left, connect=min(left, CONNECT_TIMEOUT_S))


class Late(EndpointError):
    """The request's total deadline passed."""


def open_response(
    http: httpx.Client,
    url: str,
    body: dict[str, Any],
    deadline: Deadline,
    attempts: int,
    what: str,
    sleep: Callable[[float], None] = time.sleep,
) -> httpx.Response:
    """POST `body` and return the open (streamed) response once it says 200, retrying what may
    pass while `attempts` and the deadline allow. The caller reads and closes it."""
    reason = ""
    for attempt in range(attempts):
        if deadline.left() <= 0:
            break
        delay = backoff(attempt)
        request = http.build_request("POST", url, json=body, timeout=deadline.timeout())
        try:
            response = http.send(request, stream=True)
        except httpx.TimeoutException:
            reason = f"no answer within {deadline.seconds:g} s"
        except httpx.TransportError as exc:
            reason = first_line(exc) or type(exc).__name__
        else:
            if response.status_code == 200:
                return response
            detail = _bounded_text(response)
            if response.status_code != 429 and response.status_code < 500:
                raise EndpointError(refused(what, url, response.status_code, detail))
            reason = f"HTTP {response.status_code}"
            delay = retry_after(response) or delay
        if attempt + 1 < attempts:
            if delay >= deadline.left():
                reason += (
                    f" (a retry in {delay:.1f} s would be past the {deadline.seconds:g} s limit)"
                )
                break
            sleep(delay)
    if deadline.left() <= 0 and not reason:
        reason = f"no answer within {deadline.seconds:g} s"
    tries = f"{attempts} tries" if attempts > 1 else "1 try"
    raise EndpointError(f"{what} {url} failed ({tries}): {reason}")


def refused(what: str, url: str, status: int, detail: str) -> str:
    hint = ""
    if status in (401, 403):
        hint = ": check the API key"
    elif status == 404:
        hint = ": is the model served there, and is the URL the API's base?"
    return f"{what} {url} answered HTTP {status}{hint} ({detail[:200]})"


def _bounded_text(response: httpx.Response, limit: int = 4096) -> str:
    """The first line of an error body, reading at most `limit` bytes; closes the response."""
    try:
        data = b""
        for chunk in response.iter_bytes():
            data += chunk
            if len(data) >= limit:
                break
    except httpx.HTTPError:
        data = b""
    finally:
        response.close()
    return first_line(data[:limit].decode("utf-8", "replace"))


def lines(response: httpx.Response, deadline: Deadline, what: str) -> Iterator[str]:
    """The response body's lines as they arrive (SSE, NDJSON), each checked against the
    deadline; a line over MAX_LINE_BYTES or a body over MAX_BODY_BYTES is an EndpointError.
    The last line comes even without a newline after it."""
    buffer = b""
    total = 0
    try:
        for chunk in response.iter_raw():
            total += len(chunk)
            if total > MAX_BODY_BYTES:
                raise EndpointError(f"{what} sent more than {MAX_BODY_BYTES >> 20} MiB")
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                yield line.rstrip(b"\r").decode("utf-8", "replace")
            if len(buffer) > MAX_LINE_BYTES:
                raise EndpointError(f"{what} sent a line over {MAX_LINE_BYTES >> 20} MiB")
            if deadline.left() <= 0:
                raise Late(f"{what} did not finish within {deadline.seconds:g} s")
    except httpx.TimeoutException:
        raise Late(f"{what} did not finish within {deadline.seconds:g} s") from None
    except httpx.TransportError as exc:
        raise EndpointError(
            f"{what} stopped mid-answer: {first_line(exc) or type(exc).__name__}"
        ) from None
    if buffer.strip():
        yield buffer.decode("utf-8", "replace")


def read_json(response: httpx.Response, deadline: Deadline, what: str) -> Any:
    """The whole body as JSON, read within the deadline; EndpointError if it is not JSON."""
    import json

    try:
        text = "\n".join(lines(response, deadline, what))
    finally:
        response.close()
    try:
        return json.loads(text)
    except ValueError as exc:
        raise EndpointError(f"{what} answered something that is not JSON ({exc})") from None


def first_line(value: object) -> str:
    text = str(value).strip()
    return text.splitlines()[0] if text else ""
