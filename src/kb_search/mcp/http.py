"""Serving over streamable HTTP safely: loopback by default, a bearer token anywhere else,
Host/Origin allow-lists against DNS rebinding."""

from __future__ import annotations

import hmac
import ipaddress
import socket
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
    server: Any, host: str, token: str | None, extra_hosts: list[str] | None = None
) -> Any:
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        transport_security=transport_security(host, extra_hosts),
        host=host,
    )
    return BearerTokenMiddleware(app, token) if token else app
