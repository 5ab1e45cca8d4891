"""A real model server for the tests and `bench expand`: scripted chat completions behind the
OpenAI API (/v1/chat/completions, server-sent events) and Ollama's (/api/chat, NDJSON), and a
reranker running kb's own cross-encoder code (a tiny BERT cross-encoder written at start)
behind text-embeddings-inference's /rerank and the /v1/rerank shape (vLLM, Jina, Cohere).

    python tests/model_server.py FIXTURE.json WORK_DIR   # prints "PORT <n>" once it listens

No generative model can be installed offline, so the chat answers come from FIXTURE: {"replies":
[{"match": TEXT, "reply": TEXT}, ...], "default": TEXT}; the reply whose `match` is the longest
one found in the last user message is streamed a few words per event, over chunked HTTP.

POST /_fault {"mode": "429"|"500"|"401"|"slow"|"drop"|"die"|"malformed"|"stall"|"ok", "count": N
(-1: for ever), "after": N (healthy requests first), "retry_after": s, "delay": s, "pieces": N
(die: events sent before the connection dies)}. POST /_fixture replaces the fixture.
GET /_stats: requests (path and body of each), Authorization headers seen.
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

sys.path.insert(0, str(Path(__file__).resolve().parent / "embedding"))

WORDS_PER_PIECE = 3


class State:
    def __init__(self, fixture: dict, work: Path) -> None:
        self.fixture = fixture
        self.work = work
        self.lock = threading.Lock()
        self.fault: dict = {"mode": "ok"}
        self.requests: list[dict] = []
        self.auth: set[str] = set()
        self._encoder = None

    @property
    def encoder(self):
        """kb's own cross-encoder on a tiny random BERT (built on the first rerank)."""
        with self.lock:
            if self._encoder is None:
                from tiny_bert import write_cross_encoder

                from kb_search.embedding.cross_encoder import load_cross_encoder

                model = write_cross_encoder(self.work / "ce")
                self._encoder = load_cross_encoder("local/ce", self.work / "cache", model)
            return self._encoder

    def next_fault(self, path: str, body: dict) -> dict:
        with self.lock:
            self.requests.append({"path": path, "body": body})
            return take_fault(self.fault)

    def reply(self, messages: list[dict]) -> str:
        last = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        best = None
        for item in self.fixture.get("replies", []):
            if item["match"] in last and (best is None or len(item["match"]) > len(best["match"])):
                best = item
        return best["reply"] if best else self.fixture.get("default", "")


def pieces(text: str) -> list[str]:
    words = text.split(" ")
    return [
        " ".join(words[i : i + WORDS_PER_PIECE]) + (" " if i + WORDS_PER_PIECE < len(words) else "")
        for i in range(0, len(words), WORDS_PER_PIECE)
    ]


class Handler(JsonHandler):
    state: State

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        self.close_connection = True
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)

    def do_GET(self) -> None:
        if self.path == "/_stats":
            with self.state.lock:
                self._json(200, {"requests": self.state.requests, "auth": sorted(self.state.auth)})
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        state = self.state
        if self.path == "/_fault":
            with state.lock:
                state.fault = body
                state.requests = []
            return self._json(200, {"ok": True})
        if self.path == "/_fixture":
            with state.lock:
                state.fixture = body
            return self._json(200, {"ok": True})
        if self.path not in ("/v1/chat/completions", "/api/chat", "/rerank", "/v1/rerank"):
            return self._json(404, {"error": f"no route {self.path}"})
        if auth := self.headers.get("Authorization"):
            with state.lock:
                state.auth.add(auth)
        fault = state.next_fault(self.path, body)
        mode = fault.get("mode")
        if mode == "drop":
            return self._drop()
        if mode == "429":
            return self._json(
                429, {"error": "slow down"}, {"Retry-After": str(fault["retry_after"])}
            )
        if mode == "500":
            return self._json(500, {"error": "boom"})
        if mode == "401":  # a server that echoes the key it was sent
            seen = self.headers.get("Authorization", "")
            return self._json(401, {"error": f"invalid key: {seen}"})
        if self.path.endswith("rerank"):
            return self._rerank(body, fault)
        self._chat(body, fault, ollama=self.path == "/api/chat")

    def _rerank(self, body: dict, fault: dict) -> None:
        if fault.get("mode") in ("slow", "stall"):
            time.sleep(fault["delay"])
        texts = body.get("texts") if self.path == "/rerank" else body.get("documents")
        scores = self.state.encoder.score(body["query"], texts).tolist()
        order = sorted(range(len(scores)), key=lambda i: -scores[i])
        if fault.get("mode") == "malformed":
            payload = b'{"results": [{"index": 0,'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        if self.path == "/rerank":  # TEI: a list, best first
            return self._json(200, [{"index": i, "score": scores[i]} for i in order])
        results = [{"index": i, "relevance_score": scores[i]} for i in order]
        self._json(200, {"model": body.get("model"), "results": results})

    def _chat(self, body: dict, fault: dict, ollama: bool) -> None:
        mode = fault.get("mode")
        text = self.state.reply(body.get("messages", []))
        if not body.get("stream"):
            return self._json(
                200,
                {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]},
            )
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson" if ollama else "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if mode == "stall":
            time.sleep(fault["delay"])
        for number, piece in enumerate(pieces(text)):
            if mode == "die" and number >= fault.get("pieces", 1):
                return self._drop()
            if mode == "malformed" and number == 1:
                self._chunk(b"data: {not json\n\n" if not ollama else b"{not json\n")
                continue
            if mode == "slow":
                time.sleep(fault["delay"])
            if ollama:
                event = {"model": body["model"], "message": {"role": "assistant", "content": piece},
                         "done": False}  # fmt: skip
                self._chunk(json.dumps(event).encode() + b"\n")
            else:
                event = {"choices": [{"index": 0, "delta": {"content": piece}}]}
                self._chunk(b"data: " + json.dumps(event).encode() + b"\n\n")
        if ollama:
            self._chunk(json.dumps({"model": body["model"], "done": True}).encode() + b"\n")
        else:
            end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            self._chunk(b"data: " + json.dumps(end).encode() + b"\n\n")
            self._chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")


def main() -> None:
    fixture = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    Handler.state = State(fixture, Path(sys.argv[2]))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()


class Running:
    """This server in a subprocess on loopback, for a test: `url`, `fault(...)`, `stats()`."""

    def __init__(self, fixture: dict, work: Path) -> None:
        import os
        import subprocess

        work.mkdir(parents=True, exist_ok=True)
        (work / "fixture.json").write_text(json.dumps(fixture), encoding="utf-8")
        src = Path(__file__).resolve().parents[1] / "src"
        env = {**os.environ, "PYTHONPATH": str(src)}
        self.process = subprocess.Popen(
            [sys.executable, __file__, str(work / "fixture.json"), str(work)],
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        line = self.process.stdout.readline()
        assert line.startswith("PORT "), line
        self.url = f"http://127.0.0.1:{int(line.split()[1])}"

    def _post(self, path: str, data: dict) -> None:
        import httpx2 as httpx

        httpx.post(f"{self.url}{path}", json=data, timeout=30).raise_for_status()

    def fault(self, mode: str, **values: object) -> None:
        self._post("/_fault", {"mode": mode, **values})

    def script(self, fixture: dict) -> None:
        self._post("/_fixture", fixture)

    def stats(self) -> dict:
        import httpx2 as httpx

        return httpx.get(f"{self.url}/_stats", timeout=30).json()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
