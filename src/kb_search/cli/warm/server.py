"""The warm search server: one process per database that loads the model and the vectors
once and answers `kb search` over a unix socket until it has been idle for a while.

Started by the client as `python -m kb_search.cli.warm.server` in its own session, with a JSON
spec on stdin (the client's resolved config and the paths), stdout/stderr to its log. It
holds an exclusive lock for its whole life, so at most one server per database runs; it
binds the socket only once the model is loaded, so a connection means it is ready.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb_search.cli.search import forwarded_request
from kb_search.cli.search_request import SearchRequest
from kb_search.cli.warm.paths import WarmPaths, config_from_spec, db_file_id, identity
from kb_search.cli.warm.protocol import ProtocolError, recv_message, same_user, send_message
from kb_search.config import Config
from kb_search.errors import KbError
from kb_search.knowledge_base import KnowledgeBase
from kb_search.profile import Profile
from kb_search.search.fields import project

WORKERS = 4  # concurrent searches; each worker thread keeps its own SQLite reader
REQUEST_WAIT_S = 1.0  # a client sends its request at once after "ready": an idle one is dropped
MAX_PENDING = 32  # connections accepted and not yet answered; past it, new ones hear "busy"
SATURATED_S = 0.5  # every worker taken this long: new connections hear "busy"
REPLY_WAIT_S = 5.0  # beyond search.timeout_s, for a client slow to read the reply
LOCK_WAIT_S = 10.0  # a replaced server may take this long to let go of the lock
TICK_S = 0.5


def log(message: str) -> None:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    print(f"{stamp} [{os.getpid()}] {message}", flush=True)


@dataclass
class Activity:
    """Requests in flight and when the last one ended: the idle clock."""

    active: int = 0
    served: int = 0
    last: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)
    saturated_since: float | None = None  # when every worker last became taken

    def begin(self) -> None:
        with self.lock:
            self.active += 1
            if self.active >= WORKERS and self.saturated_since is None:
                self.saturated_since = time.monotonic()

    def busy(self) -> bool:
        """Too many waiting, or every worker taken for a while (slow searches, idle clients):
        a new client is better off searching in-process than queueing."""
        with self.lock:
            since = self.saturated_since
            return self.active >= MAX_PENDING or (
                since is not None and time.monotonic() - since > SATURATED_S
            )

    def received(self) -> None:
        """Counted when it arrives, not after its reply: a client that sends its next
        request the moment a reply lands must find the first one counted."""
        with self.lock:
            self.served += 1

    def end(self) -> None:
        with self.lock:
            self.active -= 1
            self.last = time.monotonic()
            if self.active < WORKERS:
                self.saturated_since = None

    def idle_for(self) -> float:
        with self.lock:
            return 0.0 if self.active else time.monotonic() - self.last


class WarmServer:
    def __init__(self, config: Config, paths: WarmPaths, idle_s: float):
        self.config = config
        self.paths = paths
        self.idle_s = idle_s
        # The server answers exactly as a one-shot `kb search` does (the model without weight
        # prepacking, sqlite-vec's distances), to the last digit; only faster.
        self.kb = KnowledgeBase(
            config, profile=Profile.WARM, warn=lambda m: log(f"warning: {m}")
        )
        self.identity = identity(config)
        self.binding = self._binding()
        self.activity = Activity()
        self.stopping = threading.Event()
        self.started = time.time()
        self.socket_inode: int | None = None

    def _binding(self) -> list[Any]:
        """Which model and vector tables the DB is bound to: a change (reindex with another
        model) makes this server's loaded model the wrong one."""
        return self.kb.reads.binding()

    def warm_up(self) -> None:
        """Load the model and run one search: the first ONNX run and the first reads of the
        tables are slow, and no client should pay for them."""
        started = time.perf_counter()
        leg = self.kb.vector_leg()
        loaded = (time.perf_counter() - started) * 1000
        try:
            self.kb.search("warm up", self.kb.search_options(top=1))
        except KbError as exc:
            log(f"warm-up search failed: {exc}")
        spent = (time.perf_counter() - started) * 1000
        why = f" (no vector leg: {leg.unavailable})" if leg.unavailable else ""
        log(f"model loaded in {loaded:.0f} ms, warm after {spent:.0f} ms{why}")

    # ---- serving -----------------------------------------------------------------------------

    def serve(self) -> None:
        listener = self._listen()
        log(f"listening on {self.paths.socket} (idle timeout {self.idle_s:g} s)")
        with ThreadPoolExecutor(WORKERS, thread_name_prefix="warm") as pool:
            while not self.stopping.is_set():
                try:
                    client, _ = listener.accept()
                except TimeoutError:
                    self._check_lifetime()
                    continue
                except OSError as exc:
                    log(f"accept failed: {exc}")
                    break
                if self._greet(client):
                    pool.submit(self._handle, client)
            listener.close()
            self._unlink_socket()
        self.kb.close()
        log(f"stopped after {self.activity.served} requests")

    def _listen(self) -> socket.socket:
        path = self.paths.socket
        path.unlink(missing_ok=True)  # we hold the lock: whatever is there is stale
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)  # the socket is born 0600: no window where it is not
        try:
            listener.bind(str(path))
        finally:
            os.umask(old_umask)
        os.chmod(path, 0o600)
        listener.listen(64)
        listener.settimeout(TICK_S)
        self.socket_inode = os.stat(path).st_ino
        return listener

    def _check_lifetime(self) -> None:
        """Stop when idle too long, or when the socket or the database went away."""
        if self.activity.idle_for() > self.idle_s:
            log(f"idle for {self.idle_s:g} s")
            self.stopping.set()
        elif not self._socket_is_ours():
            log("socket removed or replaced")
            self.stopping.set()
        elif not self.config.db_path.exists():
            log("database removed")
            self.stopping.set()

    def _socket_is_ours(self) -> bool:
        try:
            return os.stat(self.paths.socket).st_ino == self.socket_inode
        except OSError:
            return False

    def _unlink_socket(self) -> None:
        if self._socket_is_ours():
            self.paths.socket.unlink(missing_ok=True)

    def _greet(self, client: socket.socket) -> bool:
        """Say at once, from the accepting thread, whether a worker is free: "ready" (the
        client then sends its request) or "busy" (it searches in-process). A client that
        hears nothing within its short handshake deadline knows this server is stopped or
        wedged, whatever its workers are doing."""
        if not same_user(client):
            log("refused a client of another user")
            client.close()
            return False
        busy = self.activity.busy()
        try:
            client.settimeout(REQUEST_WAIT_S)
            send_message(client, {"status": "busy" if busy else "ready"})
        except OSError:
            busy = True
        if busy:
            client.close()
            return False
        self.activity.begin()
        return True

    def _handle(self, client: socket.socket) -> None:
        try:
            with client:
                request, _ = recv_message(client)
                client.settimeout(self.config["search.timeout_s"] + REPLY_WAIT_S)
                self.activity.received()
                self._answer(client, request)
        except (OSError, ProtocolError) as exc:
            log(f"client dropped: {exc}")
        except Exception:  # a bug must not take the server down with it
            log("unexpected error:\n" + traceback.format_exc())
        finally:
            self.activity.end()

    def _answer(self, client: socket.socket, request: dict[str, Any]) -> None:
        op = request.get("op")
        if op == "status":
            send_message(client, {"status": "ok", "info": self.info()})
        elif op == "stop":
            send_message(client, {"status": "ok", "info": self.info()})
            log("stop requested")
            self.stopping.set()
        elif op == "search":
            self._search(client, request)
        else:
            send_message(client, {"status": "failed", "reason": f"unknown op {op!r}"})

    def _search(self, client: socket.socket, request: dict[str, Any]) -> None:
        if request.get("identity") != self.identity:
            send_message(client, {"status": "mismatch", "identity": self.identity})
            return
        stale = self._stale()
        if stale:
            log(f"stale: {stale}")
            send_message(client, {"status": "stale", "reason": stale})
            self.stopping.set()
            return
        try:
            asked = self._request(request)
            if asked is None:
                send_message(client, {"status": "declined"})
                return
            response = self.kb.search(asked.query, self.kb.search_options(**asked.search_values()))
        except KbError as exc:
            error = {"kind": type(exc).__name__, "message": str(exc)}
            send_message(client, {"status": "error"}, json.dumps(error).encode())
            return
        except Exception as exc:  # the client falls back and reports it in-process
            log("search failed:\n" + traceback.format_exc())
            send_message(client, {"status": "failed", "reason": f"{type(exc).__name__}: {exc}"})
            return
        if request.get("reply") == "json":
            send_message(client, {"status": "ok"}, self._json(response, asked.fields))
        else:
            reply = json.dumps(response.to_dict(highlights=True), separators=(",", ":"))
            send_message(client, {"status": "ok"}, reply.encode())

    def _json(self, response: Any, fields: list[str] | None) -> bytes:
        """What `kb search --format json` prints, before the client adds its own startup
        time: the full contract, or the --fields/--compact projection. ASCII on the wire, so
        that text the JSON keeps as it is (even a lone surrogate) arrives unchanged."""
        data = project(response, fields)
        return json.dumps(data, separators=(",", ":"), default=str).encode()

    def _stale(self) -> str | None:
        try:
            if db_file_id(self.config) != self.identity["db_file"]:
                return "the database file was replaced"
            if self._binding() != self.binding:
                return "the database's model binding changed"
        except OSError as exc:
            return f"cannot check the database: {exc}"
        return None

    @staticmethod
    def _request(request: dict[str, Any]) -> SearchRequest | None:
        """The search a client asks for: the CLI's request as JSON, or the front door's argv
        (`kb search ARGS`: it imports no click), parsed by the command's own options. None:
        a command line the full CLI must run."""
        if "argv" in request:
            return forwarded_request([str(arg) for arg in request["argv"]])
        return SearchRequest.from_dict(request["request"])

    def info(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "version": self.identity["version"],
            "db": self.identity["db"],
            "socket": str(self.paths.socket),
            "log": str(self.paths.log),
            "started_at": self.started,
            "uptime_s": round(time.time() - self.started, 1),
            "idle_s": round(time.monotonic() - self.activity.last, 1),
            "idle_timeout_s": self.idle_s,
            "requests": self.activity.served - 1,  # before the one asking
            "model_load_ms": round(self.kb.models.load_ms, 1),
            "vectors_in_memory": self._vectors_in_memory(),
        }

    def _vectors_in_memory(self) -> bool | None:
        """Whether the shortlist's matrix has loaded (None: no vector leg, or an index that
        loads nothing in the background)."""
        search = self.kb.vector_leg().search
        return None if search is None else getattr(search.index, "in_memory", None)


def acquire_lock(path: Path, wait_s: float) -> int | None:
    """An exclusive lock held for the process's life (released by the kernel when it ends)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(0.05)


def main() -> int:
    # One BLAS thread (numpy is not imported yet): the shortlist's matrix-vector product is
    # ~2 ms, and OpenBLAS's extra threads spin after it, doubling the CPU a search costs
    # (29 -> 55 ms at 27k chunks) for no gain in time.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    spec = json.load(sys.stdin)
    config = config_from_spec(spec["config"])
    paths = WarmPaths(**{k: Path(v) for k, v in spec["paths"].items()})
    if acquire_lock(paths.lock, LOCK_WAIT_S if spec.get("wait_for_lock") else 0.0) is None:
        log("another server holds the lock; exiting")
        return 0
    log(f"starting for {config.db_path}")
    try:
        server = WarmServer(config, paths, float(spec["idle_s"]))
        server.warm_up()
    except KbError as exc:
        log(f"cannot start: {exc}")
        return 1
    signal.signal(signal.SIGTERM, lambda *_: server.stopping.set())
    signal.signal(signal.SIGINT, lambda *_: server.stopping.set())
    server.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
