"""What the chat and rerank clients share on the wire: an endpoint checked once, a total
deadline per request (kb_search.net: a server that drips a byte a second is cut at the deadline
itself), retries of what may pass (429 with its Retry-After, 5xx, timeouts, dropped
connections) with backoff, bounded reads, and one-line errors with secrets redacted.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx2 as httpx

from kb_search import net
from kb_search.embedding.remote import backoff, retry_after
from kb_search.errors import ConfigError, EndpointError
from kb_search.net import Deadline

MAX_LINE_BYTES = 1 << 20  # one SSE/NDJSON line; a server that sends more is refused
MAX_BODY_BYTES = 16 << 20  # a whole answer


def checked_endpoint(endpoint: str, setting: str) -> str:
    """`endpoint` as a base URL without a trailing slash; ConfigError unless http(s)."""
    try:
        url = httpx.URL(endpoint)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise ConfigError(f"{setting} {net.redact_url(endpoint)!r} is not a URL: {exc}") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(
            f"{setting} {net.redact_url(endpoint)!r} must be an http:// or https:// URL"
        )
    return endpoint.rstrip("/")


def client(connections: int = 4) -> httpx.Client:
    """A client whose sockets honour each request's total deadline (kb_search.net). The key
    goes on each request (`headers`), so a client never holds it."""
    return net.deadline_client(limits=httpx.Limits(max_connections=connections))


def headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


class Late(EndpointError):
    """The request's total deadline passed."""


def open_response(
    http: httpx.Client,
    url: str,
    body: dict[str, Any],
    deadline: Deadline,
    attempts: int,
    what: str,
    api_key: str | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[httpx.Response, contextlib.ExitStack]:
    """POST `body`; once the answer says 200, the open response (its body still to read) and
    the stack that closes it. What may pass (429 with its Retry-After, 5xx, timeouts, dropped
    connections) is tried again with backoff while `attempts` and the deadline allow."""
    reason, tried = "", 0
    for attempt in range(attempts):
        if deadline.expired:
            break
        tried += 1
        delay = backoff(attempt)
        request = http.build_request("POST", url, json=body, headers=headers(api_key))
        stack = contextlib.ExitStack()
        try:
            response = stack.enter_context(net.open_stream(http, request, deadline))
            if response.status_code == 200:
                return response, stack
            detail = _error_text(response, deadline)
        except httpx.TimeoutException:
            stack.close()
            reason = f"no answer within {deadline.seconds:g} s"
            if deadline.expired:
                break
        except httpx.TransportError as exc:
            stack.close()
            reason = first_line(exc) or type(exc).__name__
        else:
            stack.close()
            status = response.status_code
            if status != 429 and status < 500:
                raise EndpointError(net.redact(refused(what, url, status, detail), [api_key]))
            reason = f"HTTP {status}"
            delay = retry_after(response) or delay
        if attempt + 1 == attempts:
            break
        if delay >= deadline.end - time.monotonic():
            reason += f" (a retry in {delay:.1f} s would end past the {deadline.seconds:g} s limit)"
            break
        sleep(delay)
    if not reason:
        reason = f"no answer within {deadline.seconds:g} s"
    tries = f"{tried} tries" if tried != 1 else "1 try"
    raise EndpointError(net.redact(f"{what} {url} failed ({tries}): {reason}", [api_key]))


def refused(what: str, url: str, status: int, detail: str) -> str:
    hint = ""
    if status in (401, 403):
        hint = ": check the API key"
    elif status == 404:
        hint = ": is the model served there, and is the URL the API's base?"
    return f"{what} {url} answered HTTP {status}{hint} ({detail[:200]})"


def _error_text(response: httpx.Response, deadline: Deadline) -> str:
    """The first line of an error answer's body (at most 4 KiB of it)."""
    try:
        data = net.read_body(response, deadline, max_bytes=4096)
    except httpx.HTTPError:
        return ""
    return first_line(data.decode("utf-8", "replace"))


def lines(response: httpx.Response, deadline: Deadline, what: str) -> Iterator[str]:
    """The response body's lines as they arrive (SSE, NDJSON), all before the deadline; a
    line over MAX_LINE_BYTES or a body over MAX_BODY_BYTES is an EndpointError, a connection
    that dies mid-answer too."""
    total = 0
    try:
        for line in net.iter_lines(response, deadline, max_line_bytes=MAX_LINE_BYTES):
            total += len(line) + 1
            if total > MAX_BODY_BYTES:
                raise EndpointError(f"{what} sent more than {MAX_BODY_BYTES >> 20} MiB")
            yield line
    except httpx.TimeoutException:
        raise Late(f"{what} did not finish within {deadline.seconds:g} s") from None
    except httpx.DecodingError as exc:
        raise EndpointError(f"{what}: {first_line(exc)}") from None
    except httpx.TransportError as exc:
        reason = first_line(exc) or type(exc).__name__
        raise EndpointError(f"{what} stopped mid-answer: {reason}") from None


def read_json(response: httpx.Response, deadline: Deadline, what: str) -> Any:
    """The whole body as JSON, read before the deadline; EndpointError if it is not JSON."""
    text = "\n".join(lines(response, deadline, what))
    try:
        return json.loads(text)
    except ValueError as exc:
        raise EndpointError(f"{what} answered something that is not JSON ({exc})") from None


def first_line(value: object) -> str:
    text = str(value).strip()
    return text.splitlines()[0] if text else ""
