"""A real Ray cluster on loopback for tests and bench/ray.py: `ray start --head --block`
with its own temp dir (and optionally more `ray start --address` nodes, a simulated multi-node
cluster), each in its own session, so `stop()` ends exactly the processes it started (never a
machine-wide `ray stop`)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OBJECT_STORE_BYTES = 200 * 1024 * 1024
STARTED = "Ray runtime started"
# A loopback cluster for one test run: no usage stats, no token auth (whose token Ray would
# otherwise write to ~/.ray of whoever runs the tests).
RAY_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_AUTH_MODE": "disabled",
    "RAY_raylet_start_wait_time_s": "120",  # a loaded CI machine: more time to register
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ray_cli() -> str:
    return str(Path(sys.executable).with_name("ray"))


class LocalRayCluster:
    """`with LocalRayCluster(head_cpus=2) as cluster:` ... `cluster.address`."""

    def __init__(self, head_cpus: int = 2, node_cpus: tuple[int, ...] = ()):
        self.head_cpus = head_cpus
        self.node_cpus = node_cpus
        # Short: Ray's unix sockets live under it (a socket path has ~107 characters).
        self.temp = Path(tempfile.mkdtemp(prefix="kbray-", dir="/tmp"))
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.client_port = _free_port()  # Ray Client: `--address ray://127.0.0.1:<this>`
        self.nodes: list[subprocess.Popen] = []

    def _start(self, args: list[str], cpus: int, log: Path) -> None:
        command = [
            _ray_cli(),
            "start",
            "--block",
            f"--num-cpus={cpus}",
            f"--object-store-memory={OBJECT_STORE_BYTES}",
            "--node-ip-address=127.0.0.1",
            "--disable-usage-stats",
            *args,
        ]
        env = dict(os.environ, **RAY_ENV)
        with log.open("wb") as out:
            node = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        self.nodes.append(node)
        deadline = time.monotonic() + 120
        while STARTED not in log.read_text(errors="replace"):
            if node.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray start failed: {log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.2)

    def start(self, attempts: int = 3) -> LocalRayCluster:
        """Start the nodes; tried again on a fresh port when a node misses Ray's own startup
        deadline (30 s, which a loaded machine can miss)."""
        for attempt in range(1, attempts + 1):
            try:
                return self._start_nodes()
            except RuntimeError:
                if attempt == attempts:
                    raise
                self.temp = Path(tempfile.mkdtemp(prefix="kbray-", dir="/tmp"))
                self.port = _free_port()
                self.address = f"127.0.0.1:{self.port}"
                self.client_port = _free_port()
        return self

    def _start_nodes(self) -> LocalRayCluster:
        try:
            self._start(
                [
                    "--head",
                    f"--port={self.port}",
                    f"--temp-dir={self.temp}",
                    "--include-dashboard=false",
                    f"--ray-client-server-port={self.client_port}",
                ],
                self.head_cpus,
                self.temp / "head.log",
            )
            for index, cpus in enumerate(self.node_cpus):
                self._start([f"--address={self.address}"], cpus, self.temp / f"node{index}.log")
            self._wait_for_cpus(self.head_cpus + sum(self.node_cpus))
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_for_cpus(self, cpus: int) -> None:
        """Every node registered (a driver started earlier would see fewer CPUs)."""
        command = [_ray_cli(), "status", f"--address={self.address}"]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            status = subprocess.run(
                command, capture_output=True, text=True, timeout=60, env=dict(os.environ, **RAY_ENV)
            )
            if f"/{float(cpus)} CPU" in status.stdout:
                return
            time.sleep(1)
        raise RuntimeError(f"the cluster never showed {cpus} CPUs")

    def processes(self, title: str) -> list[int]:
        """Pids of this cluster's processes (descendants of its `ray start`) whose title
        starts with `title` (an actor is `ray::ClassName...`)."""
        parents: dict[int, int] = {}
        titles: dict[int, str] = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            titles[int(entry.name)] = cmdline
        roots = {node.pid for node in self.nodes}

        def ours(pid: int) -> bool:
            while pid > 1:
                if pid in roots:
                    return True
                pid = parents.get(pid, 0)
            return False

        return [pid for pid, text in titles.items() if text.startswith(title) and ours(pid)]

    def stop(self) -> None:
        for node in reversed(self.nodes):
            _end_session(node)
        self.nodes = []
        shutil.rmtree(self.temp, ignore_errors=True)

    def __enter__(self) -> LocalRayCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _end_session(node: subprocess.Popen) -> None:
    """SIGTERM (ray start --block then stops its node), SIGKILL for what is left."""
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 10)):
        try:
            os.killpg(node.pid, sig)
        except ProcessLookupError:
            return
        try:
            node.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGTERM:
            try:  # the node's own processes, if any outlived it
                os.killpg(node.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return
