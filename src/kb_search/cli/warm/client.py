"""What `kb search` calls: ask this database's warm server, start one when there is none.

`cli.warm.warm_client` gives a client only when the warm path is on; `WarmClient.search`
returns the server's `SearchResponse`, or None whenever the warm path cannot answer (no server
yet, a stale or foreign one, a timeout, a protocol error): the caller then searches
in-process, and calls `start_if_wanted` after. Nothing here prints to
stdout; KB_DEBUG=1 says on stderr why the warm path was not taken. Imports stay light (no
numpy, no model code; no typing, dataclasses, pickle or signal until needed: every piped
`kb search` imports this module): that is the point.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Mapping

from kb_search.cli.warm.paths import WarmPaths, config_spec, identity, warm_paths
from kb_search.cli.warm.protocol import (
    Peer,
    ProtocolError,
    ServerBusy,
    peer,
    recv_message,
    send_message,
)
from kb_search.config import Config
from kb_search.errors import KbError

TYPE_CHECKING = False  # typing's, without importing typing
if TYPE_CHECKING:
    from typing import Any

    from kb_search.cli.search_request import SearchRequest
    from kb_search.search.results import SearchResponse

# A live server greets a connection at once, from a thread no search can hold up; no greeting
# within this (connecting included) means it is stopped or wedged: search in-process, replace it.
HANDSHAKE_S = 0.5
REPLY_MARGIN_S = 5.0  # beyond search.timeout_s, for the round trip
LOG_LIMIT = 1 << 20  # a server's log is started afresh beyond this
RESTART_AFTER_S = 30.0  # after a start that did not come up, wait this long to try again


class WarmClient:
    def __init__(self, config: Config, env: Mapping[str, str]) -> None:
        self.config = config
        self.env = env
        self.start_wanted: WarmPaths | None = None  # no server found: see start_if_wanted

    def debug(self, message: str) -> None:
        if self.env.get("KB_DEBUG"):
            print(f"kb warm: {message}", file=sys.stderr, flush=True)

    def paths(self) -> WarmPaths | None:
        return warm_paths(self.config, self.env)

    # ---- search ------------------------------------------------------------------------------

    def search(
        self, request: SearchRequest, reply: str = "human"
    ) -> SearchResponse | dict[str, Any] | None:
        """The server's answer to `request`, sent as JSON: the data `kb search` prints when
        `reply` is "json" (projected to the request's fields), else the SearchResponse; or
        None: search in-process, then `start_if_wanted`. A KbError the server raised is
        raised here, as in-process search would have."""
        paths = self._usable_paths()
        if paths is None:
            return None
        mode = request.mode or self.config["search.default_mode"]
        try:
            ask = {"op": "search", "identity": identity(self.config), "reply": reply}
            header, payload = self._ask(paths, {**ask, "request": request.to_dict()})
        except (OSError, ProtocolError) as exc:
            self.debug(f"no warm server ({exc}): searching in-process")
            if mode != "lexical":  # lexical search loads no model: no server to start for it
                self.start_wanted = paths
            return None
        return self._reply(paths, header, payload, reply)

    def start_if_wanted(self) -> None:
        """Start the server that `search` found missing. The CLI calls this once its own
        in-process search is done: the server's start-up (imports, model, vectors: ~1 s of
        CPU) then does not compete with it (a first search was ~90 ms slower)."""
        paths, self.start_wanted = self.start_wanted, None
        if paths is not None:
            self.start(paths)

    def forward(self, argv: list[str]) -> dict[str, Any] | None:
        """The JSON a piped `kb search ARGV` prints, from a running server that parses ARGV
        with the command's own options; None: run the full CLI (no server, a declined or
        failed request; the full CLI starts a server when there is none). A KbError the server
        raised is raised here."""
        paths = self._usable_paths()
        if paths is None:
            return None
        try:
            ask = {"op": "search", "identity": identity(self.config), "reply": "json"}
            header, payload = self._ask(paths, {**ask, "argv": list(argv)})
        except (OSError, ProtocolError) as exc:
            self.debug(f"no warm server for the front door ({exc})")
            return None
        if header.get("status") == "declined":
            self.debug("the warm server leaves this command line to the full CLI")
            return None
        return self._reply(paths, header, payload, "json")

    def _usable_paths(self) -> WarmPaths | None:
        """This database's server paths when they can be used here (whether the warm path is
        on was asked once, by `warm_client`)."""
        paths = self.paths()
        if paths is None or not self.config.db_path.is_file():
            self.debug("no private runtime directory or no database: searching in-process")
            return None
        return paths

    def _reply(self, paths: WarmPaths, header: dict[str, Any], payload: bytes, reply: str) -> Any:
        status = header.get("status")
        if status == "ok" and reply == "json":
            return self._json(payload)
        if status == "ok":
            return self._response(payload)
        if status == "error":
            error = self._error(payload)
            if error is not None:
                raise error
            self.debug("the server's error is not a KbError: searching in-process")
            return None
        if status in ("mismatch", "stale"):
            self.debug(f"replacing the warm server ({status}: {header.get('reason', '')})")
            self.start(paths, replacing=True)
            return None
        self.debug(f"warm server answered {status!r} ({header.get('reason', '')})")
        return None

    def _json(self, payload: bytes) -> dict[str, Any] | None:
        try:
            data = json.loads(payload)
        except ValueError as exc:
            self.debug(f"unreadable reply ({exc})")
            return None
        return data if isinstance(data, dict) else None

    def _response(self, payload: bytes) -> SearchResponse | None:
        """The terminal's answer: the JSON contract with highlight markers, read back."""
        from kb_search.search.results import SearchResponse

        data = self._json(payload)
        try:
            return SearchResponse.from_dict(data) if data is not None else None
        except (KeyError, TypeError) as exc:  # another version's reply: search in-process
            self.debug(f"unreadable reply ({type(exc).__name__}: {exc})")
            return None

    def _error(self, payload: bytes) -> KbError | None:
        """The server's KbError, of the same kind, from its JSON (None: not a KbError)."""
        from kb_search import errors

        data = self._json(payload) or {}
        kind = getattr(errors, str(data.get("kind")), None)
        if not (isinstance(kind, type) and issubclass(kind, KbError)):
            return None
        return kind(str(data.get("message", "")))

    def _ask(
        self,
        paths: WarmPaths,
        request: dict[str, Any],
        timeout: float | None = None,
        replace_unresponsive: bool = True,
    ) -> tuple[dict[str, Any], bytes]:
        """One request, one reply; a server of another user or identity is stopped or refused
        before anything it sent is unpickled, and one that does not greet the connection in
        time is replaced (ProtocolError: search in-process meanwhile)."""
        deadline = time.monotonic() + HANDSHAKE_S
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(HANDSHAKE_S)
            sock.connect(str(paths.socket))
            other = peer(sock)
            if other is not None and other.uid != os.getuid():
                raise ProtocolError(f"the socket's server runs as uid {other.uid}")
            self._greeted(sock, paths, other if replace_unresponsive else None, deadline)
            sock.settimeout(timeout or self.config["search.timeout_s"] + REPLY_MARGIN_S)
            send_message(sock, request)
            header, payload = recv_message(sock)
        if header.get("status") == "mismatch" and other is not None:
            self._terminate(other.pid)
        return header, payload

    def _greeted(
        self, sock: socket.socket, paths: WarmPaths, server: Peer | None, deadline: float
    ) -> None:
        """Wait (until `deadline`) for the server's greeting: ServerBusy when all its workers
        are taken; a stopped or wedged `server` (no greeting) is killed and a new one
        started (None: left as it is)."""
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            greeting, _ = recv_message(sock)
        except TimeoutError:
            self._replace_unresponsive(paths, server)
            raise ProtocolError(f"the server did not answer within {HANDSHAKE_S:g} s") from None
        status = greeting.get("status")
        if status == "busy":
            raise ServerBusy("every worker of the server is busy")
        if status != "ready":
            raise ProtocolError(f"unexpected greeting {status!r}")

    def _replace_unresponsive(self, paths: WarmPaths, server: Peer | None) -> None:
        """Kill a server of ours that accepts connections but says nothing (stopped, wedged),
        and start another: every search would otherwise wait for it. Only a kb warm server
        of this user is killed; whatever else listens there is left alone."""
        if server is None or server.uid != os.getuid() or not _is_warm_server(server.pid):
            return
        import signal

        try:
            os.kill(server.pid, signal.SIGKILL)  # SIGTERM waits for a stopped process
        except OSError as exc:
            self.debug(f"cannot stop the unresponsive server {server.pid}: {exc}")
            return
        self.debug(f"killed the unresponsive warm server {server.pid}; starting another")
        paths.socket.unlink(missing_ok=True)  # the next client searches in-process at once
        self.start(paths, replacing=True)

    def _terminate(self, pid: int) -> None:
        """A server of another kb version, DB file or config: stop it (same user: checked)."""
        import signal

        try:
            os.kill(pid, signal.SIGTERM)
        except OSError as exc:
            self.debug(f"cannot stop the old server {pid}: {exc}")

    # ---- lifetime ----------------------------------------------------------------------------

    def start(self, paths: WarmPaths, replacing: bool = False) -> bool:
        """Start a server in the background unless one holds the lock (running or starting);
        `replacing` one that is on its way out, the new one waits for its lock."""
        if not replacing and (self._locked(paths) or self._recently_started(paths)):
            return False
        import subprocess  # only when starting one: not on every search

        spec = {
            "config": config_spec(self.config),
            "paths": {k: str(v) for k, v in paths.as_dict().items()},
            "idle_s": self.config["search.warm_idle_s"],
            "wait_for_lock": replacing,  # else a held lock means another one is starting
        }
        env = {**os.environ, **self.env}
        env.pop("KB_NO_WARM", None)
        try:
            too_long = paths.log.exists() and paths.log.stat().st_size > LOG_LIMIT
            with open(paths.log, "wb" if too_long else "ab") as log:
                os.chmod(paths.log, 0o600)
                process = subprocess.Popen(
                    [sys.executable, "-m", "kb_search.cli.warm.server"],
                    stdin=subprocess.PIPE,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=paths.directory,
                    env=env,
                    start_new_session=True,  # Ctrl-C in the terminal does not reach it
                    close_fds=True,
                )
            assert process.stdin is not None
            process.stdin.write(json.dumps(spec).encode())
            process.stdin.close()
            process.returncode = 0  # never waited for: it outlives this process by design
            paths.started.touch()
        except OSError as exc:
            self.debug(f"cannot start a warm server: {exc}")
            return False
        self.debug(f"started a warm server (pid {process.pid}); log {paths.log}")
        return True

    def _recently_started(self, paths: WarmPaths) -> bool:
        """A server was started moments ago and is not listening: it failed (its log says
        why); try again only after a while, not on every search."""
        try:
            return time.time() - paths.started.stat().st_mtime < RESTART_AFTER_S
        except OSError:
            return False

    def _locked(self, paths: WarmPaths) -> bool:
        import fcntl  # POSIX only, like the warm path (paths.supported)

        try:
            fd = os.open(paths.lock, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # closing releases a lock we got
        return False

    def status(self) -> dict[str, Any] | None:
        return self._server_info("status")

    def stop(self) -> dict[str, Any] | None:
        return self._server_info("stop")

    def _server_info(self, op: str) -> dict[str, Any] | None:
        """The running server's info after `op` ("status" or "stop"); None when none answers."""
        paths = self.paths()
        if paths is None:
            return None
        try:
            # `kb warm status/stop` report an unresponsive server as none; searches replace it.
            header, _ = self._ask(paths, {"op": op}, timeout=5, replace_unresponsive=False)
        except (OSError, ProtocolError):
            return None
        return header.get("info") if header.get("status") == "ok" else None


def _is_warm_server(pid: int) -> bool:
    """The process runs `python -m kb_search.cli.warm.server` (Linux's /proc; elsewhere, where
    SO_PEERCRED gives no pid either, nothing is killed)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return b"kb_search.cli.warm.server" in cmdline.read()
    except OSError:
        return False


def add_startup(answer: dict[str, Any], startup_ms: float) -> dict[str, Any]:
    """The server's JSON with this process's own start (interpreter, imports) counted in."""
    timings = answer.get("timings_ms")
    if timings is not None:
        timings["startup"] = round(startup_ms, 2)
        timings["total"] = round(timings["total"] + startup_ms, 2)
    return answer

