"""Serving over streamable HTTP safely: loopback by default, a bearer token anywhere else,
Host/Origin allow-lists against DNS rebinding."""

from __future__ import annotations

import hmac
import ipaddress
import socket
import time
from dataclasses import dataclass
from typing import Any

from kb_search.errors import ServeError

LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    if not is_loopback(host) and not token:
        raise ServeError(
            f"refusing to serve on {host} without a bearer token: anyone who can reach it could "
            "read the whole knowledge base. Pass --token (or set KB_MCP_TOKEN), or bind to "
            "127.0.0.1."
        )


def _host_names(host: str, extra: list[str]) -> list[str]:
    names = {"127.0.0.1", "localhost", "[::1]", host if ":" not in host else f"[{host}]"}
    if host in ("0.0.0.0", "::"):
        # A wildcard bind is reached by this machine's own names and addresses.
        hostname = socket.gethostname()
        names.add(hostname)
        try:
            names.update(socket.gethostbyname_ex(hostname)[2])
        except OSError:
            pass
    names.update(extra)
    return sorted(names)


def transport_security(host: str, extra_hosts: list[str] | None = None) -> Any:
    """Host/Origin allow-lists: a browser page under another name (DNS rebinding) gets 421/403."""
    from mcp.server.transport_security import TransportSecuritySettings

    names = _host_names(host, extra_hosts or [])
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*names, *(f"{n}:*" for n in names)],
        allowed_origins=[
            f"{scheme}://{n}{port}"
            for n in names
            for scheme in ("http", "https")
            for port in ("", ":*")
        ],
    )


class BearerTokenMiddleware:
    """401 for every HTTP request without `Authorization: Bearer <token>`."""

    def __init__(self, app: Any, token: str):
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            await self._reject(send)
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope: dict[str, Any]) -> bool:
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                return hmac.compare_digest(value, self.expected)
        return False

    @staticmethod
    async def _reject(send: Any) -> None:
        body = b'{"error": "unauthorized: send Authorization: Bearer <token>"}'
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b'Bearer realm="kb"'),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def http_app(
    server: Any,
    host: str,
    token: str | None,
    extra_hosts: list[str] | None = None,
    limits: HttpLimits | None = None,
) -> Any:
    limits = limits or HttpLimits()
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        transport_security=transport_security(host, extra_hosts),
        host=host,
        max_request_body_size=limits.max_body_bytes,
        max_sessions=limits.max_sessions,
        session_idle_timeout=limits.session_idle_s,
    )
    evict_idle_sessions(server.session_manager)
    return BearerTokenMiddleware(app, token) if token else app


# ---- request bounds ------------------------------------------------------------------------


@dataclass(frozen=True)
class HttpLimits:
    """What one HTTP client may hold of the server (docs/security.md, "Request bounds")."""

    max_connections: int = 64  # open at once; never more than a quarter of the fd limit
    request_timeout_s: float = 10.0  # to send a whole request (headers and body)
    keep_alive_s: int = 5  # an idle kept-alive connection is closed after this
    max_body_bytes: int = 256 * 1024
    max_sessions: int = 32
    session_idle_s: float = 600.0

    def connection_cap(self) -> int:
        """max_connections, and at most a quarter of the open-file limit: a flood of
        connections must never reach EMFILE (the model, the DB and the logs need files)."""
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY:
            return self.max_connections
        return max(4, min(self.max_connections, soft // 4))


def bounded_protocol(limits: HttpLimits) -> type:
    """uvicorn's h11 protocol with a cap on open connections and a time limit on receiving
    each request. At the cap, the connection that has waited longest without sending a
    complete request is closed to make room (an idle or trickling client, never one being
    answered); when every connection is being answered, the new one is closed."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    cap = limits.connection_cap()

    class BoundedH11Protocol(H11Protocol):
        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            self.opened = time.monotonic()
            self.request_timer: Any = None
            if len(self.connections) >= cap and not _evict_one_waiting(self.connections):
                transport.abort()
                return
            super().connection_made(transport)
            self._time_the_request()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if not self.waiting_for_request():
                self._stop_timer()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._time_the_request()  # the next request on this connection: the same limit

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_timer()
            if self.transport is not None:
                super().connection_lost(exc)

        def waiting_for_request(self) -> bool:
            """The client has not finished sending a request: idle (before its first request,
            or kept alive after an answer) or still sending a body. A request being answered
            (a search, an open event stream) is not."""
            return self.conn.their_state in (h11.IDLE, h11.SEND_BODY)

        def time_out(self) -> None:
            self.request_timer = None
            if self.waiting_for_request() and not self.transport.is_closing():
                self.transport.abort()

        def _time_the_request(self) -> None:
            self._stop_timer()
            self.request_timer = self.loop.call_later(limits.request_timeout_s, self.time_out)

        def _stop_timer(self) -> None:
            if self.request_timer is not None:
                self.request_timer.cancel()
                self.request_timer = None

    def _evict_one_waiting(connections: set[Any]) -> bool:
        waiting = [c for c in connections if c.waiting_for_request()]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda c: c.opened)
        oldest.transport.abort()
        connections.discard(oldest)
        return True

    return BoundedH11Protocol


def evict_idle_sessions(manager: Any) -> None:
    """At the session cap, end the session idle the longest, so that a new client gets in
    (the SDK refuses new sessions at its cap until old ones expire: 30 minutes by default)."""
    admit = manager._admit_session

    def admit_evicting(requestor: Any) -> Any:
        sessions = manager._server_instances
        if manager.max_sessions is not None and len(sessions) >= manager.max_sessions:
            idle = [
                (transport.idle_scope.deadline, session_id)
                for session_id, transport in sessions.items()
                if transport.idle_scope is not None and not transport._requests_in_flight
            ]
            if idle:
                _, session_id = min(idle)
                sessions.pop(session_id).idle_scope.cancel()  # its task ends and discards it
        return admit(requestor)

    manager._admit_session = admit_evicting
