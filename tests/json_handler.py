"""The request handler both test model servers build on (tests/embedding_server.py,
tests/model_server.py): HTTP/1.1, quiet, one way to answer with JSON, and one way to count a
scripted fault down."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler


class JsonHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def _json(self, status: int, payload: object, headers: dict | None = None) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)


def take_fault(fault: dict) -> dict:
    """The fault this request gets ({} when none), counting the scripted fault down in place:
    `after` requests pass first, then `count` requests fail (-1: all of them)."""
    if fault.get("mode", "ok") == "ok":
        return {}
    if fault.get("after", 0) > 0:
        fault["after"] -= 1
        return {}
    if fault.get("count", -1) == 0:
        return {}
    if fault.get("count", -1) > 0:
        fault["count"] -= 1
    return dict(fault)
