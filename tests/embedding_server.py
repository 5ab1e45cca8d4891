"""A real embedding server for the tests and the benchmark: the bundled MiniLM, run by kb's own
local Embedder, behind the OpenAI embeddings API (/v1/embeddings, /v1/models) and Ollama's
(/api/embed, /api/show), with faults the caller turns on over HTTP.

    python tests/embedding_server.py MODEL_CACHE [THREADS]   # prints "PORT <n>" once it listens

POST /_fault {"mode": "429"|"500"|"slow"|"drop"|"dim"|"drip"|"echo401"|"zeros"|"ok",
"count": N (-1: for ever), "after": N (healthy embedding requests first), "retry_after": s,
"delay": s, "dim": d, "every": s (drip: one byte of the answer every s seconds),
"max_model_len": JSON text /v1/models publishes (e.g. "1e999"; it persists)}
    python tests/embedding_server.py MODEL_CACHE [THREADS [HOST]]   # HOST: 127.0.0.1 or ::1
GET /_stats: requests, inputs, the most requests in flight at once (since the last /_fault),
Authorization headers seen.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

from json_handler import JsonHandler, take_fault
from kb_search.embedding import DEFAULT_MODEL, load_embedder

CONTEXT_LENGTH = 256


class State:
    def __init__(self, cache: Path, threads: int) -> None:
        self.embedder = load_embedder(DEFAULT_MODEL, cache, threads=threads, provider="cpu")
        self.lock = threading.Lock()
        self.fault: dict = {"mode": "ok"}
        self.requests = 0
        self.inputs = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.auth: set[str] = set()
        self.times: list[float] = []
        self.max_model_len = str(CONTEXT_LENGTH)  # raw JSON: a hostile server's number too

    def next_fault(self) -> dict:
        """The fault this embedding request gets ({} when none), counting it down."""
        with self.lock:
            self.requests += 1
            self.times.append(time.time())
            return take_fault(self.fault)


class Handler(JsonHandler):
    state: State

    def _raw(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _drip(self, every: float) -> None:
        answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + b"X-Pad: x" * 100_000
        try:
            for byte in answer:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(every)
        except OSError:  # the client gave up: what it should do
            self.close_connection = True

    def _body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def do_GET(self) -> None:
        state = self.state
        if self.path == "/_stats":
            with state.lock:
                self._json(
                    200,
                    {
                        "requests": state.requests,
                        "inputs": state.inputs,
                        "max_in_flight": state.max_in_flight,
                        "auth": sorted(state.auth),
                        "times": state.times,
                    },
                )
        elif self.path == "/v1/models":
            length = self.state.max_model_len
            body = f'{{"data": [{{"id": "minilm", "max_model_len": {length}}}]}}'
            self._raw(200, body.encode())
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self) -> None:
        body = self._body()
        if self.path == "/_fault":
            with self.state.lock:
                self.state.fault = body
                self.state.max_in_flight = 0
                if "max_model_len" in body:
                    self.state.max_model_len = body["max_model_len"]
            self._json(200, {"ok": True})
        elif self.path == "/api/show":
            self._json(200, {"model_info": {"bert.context_length": CONTEXT_LENGTH}})
        elif self.path in ("/v1/embeddings", "/api/embed"):
            self._embed(body, ollama=self.path == "/api/embed")
        else:
            self._json(404, {"error": f"no route {self.path}"})

    def _embed(self, body: dict, ollama: bool) -> None:
        state = self.state
        if auth := self.headers.get("Authorization"):
            with state.lock:
                state.auth.add(auth)
        fault = state.next_fault()
        mode = fault.get("mode")
        if mode == "drop":  # the connection dies with no answer
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if mode == "429":
            self._json(429, {"error": "slow down"}, {"Retry-After": str(fault["retry_after"])})
            return
        if mode == "500":
            self._json(500, {"error": "boom"})
            return
        if mode == "echo401":  # a server that quotes the credentials it refused
            self._json(401, {"error": f"invalid credentials: {auth}", "seen": auth})
            return
        if mode == "drip":  # headers and body one byte at a time, for ever
            self._drip(fault.get("every", 2.0))
            return
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        with state.lock:
            state.in_flight += 1
            state.inputs += len(texts)
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
        try:
            if mode == "slow":
                time.sleep(fault["delay"])
            vectors = state.embedder.embed_passages(texts).tolist()
        finally:
            with state.lock:
                state.in_flight -= 1
        if mode == "dim":
            vectors = [v[: fault["dim"]] for v in vectors]
        if mode == "zeros":
            vectors = [[0.0] * len(v) for v in vectors]
        if ollama:
            self._json(200, {"model": body["model"], "embeddings": vectors})
        else:
            data = [{"index": i, "embedding": v} for i, v in enumerate(vectors)]
            self._json(200, {"object": "list", "data": data, "model": body["model"]})


def main() -> None:
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    host = sys.argv[3] if len(sys.argv) > 3 else "127.0.0.1"
    Handler.state = State(Path(sys.argv[1]), threads)
    ThreadingHTTPServer.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
    server = ThreadingHTTPServer((host, 0), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
