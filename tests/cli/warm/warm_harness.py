"""Shared pieces of the warm server tests: a data dir with the warm path on, waiting for
servers, stopping them."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from kb_search.cli import cli
from kb_search.cli.warm.client import WarmClient
from kb_search.config import load_config
from kb_search.environment import Environment
from kb_testing import HashEmbedder

HERE = Path(__file__).resolve().parent
TESTS = HERE.parents[1]
SITE = Path(__file__).resolve().parent / "site"
DOCS = {
    "backups.md": "# Backups\n\nNightly backups of every git repository go to the NAS; keep"
    " thirty days of retention and test a restore every month.\n",
    "deploy.md": "# Deploying\n\n## Rollback\n\nTo roll back a release, redeploy the previous tag"
    " and run the smoke tests.\n",
    "retry.py": 'def retry(fn, attempts=3):\n    """Retry with exponential backoff and jitter."""\n'
    "    for attempt in range(attempts):\n        try:\n            return fn()\n"
    "        except OSError:\n            pass\n",
    "pasta.txt": "Cooking pasta: boil salted water, add the spaghetti, nine minutes.\n",
}


class OtherHashEmbedder(HashEmbedder):
    """A second test model, to rebind a DB to (`kb reindex --model`)."""

    name = "kb-test/hash-64-other"


def register_other_embedder() -> None:
    from kb_search.models.embedders import register_embedder

    register_embedder(OtherHashEmbedder.name, OtherHashEmbedder)


@dataclass
class WarmKb:
    """`kb` in-process against one data dir, with the warm path on."""

    environment: Environment
    docs: Path

    def run(self, *args: str, warm: bool = True, ok: bool = True):
        env = self.environment.env
        if warm:
            env.pop("KB_NO_WARM", None)
        else:
            env["KB_NO_WARM"] = "1"
        result = CliRunner().invoke(cli, list(args), obj=self.environment, catch_exceptions=False)
        if ok:
            assert result.exit_code == 0, result.output + result.stderr
        return result

    def json(self, *args: str, warm: bool = True) -> dict:
        return json.loads(self.run(*args, "--format", "json", warm=warm).stdout)

    @property
    def client(self) -> WarmClient:
        env = dict(self.environment.env)
        env.pop("KB_NO_WARM", None)
        config = load_config(env=env, cwd=self.environment.cwd, home=self.environment.home)
        return WarmClient(config, env)

    def status(self) -> dict | None:
        return self.client.status()

    def wait_for_server(self, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            info = self.status()
            if info is not None:
                return info
            time.sleep(0.1)
        log = self.client.paths().log
        raise AssertionError(f"no warm server; log: {log.read_text() if log.exists() else ''}")

    def impostor(self, backlog: int) -> socket.socket:
        """A listening socket where this database's server would be (tests play the server)."""
        paths = self.client.paths()
        paths.directory.mkdir(mode=0o700, exist_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(paths.socket))
        listener.listen(backlog)
        return listener

    def start_server(self) -> dict:
        """A hybrid search starts the server (and is answered in-process meanwhile)."""
        self.run("search", "backups", "--format", "json")
        return self.wait_for_server()


def wait_gone(pid: int, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        _reap(pid)
        time.sleep(0.1)
    return False


def _reap(pid: int) -> None:
    """Servers started from this process become its zombies when they exit."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def make_kb(
    root: Path, model_cache: Path, name: str = "data", model: str | None = "kb-test/hash-64"
) -> WarmKb:
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    docs = root / f"{name}-docs"
    docs.mkdir()
    for file_name, text in DOCS.items():
        (docs / file_name).write_text(text, encoding="utf-8")
    environment = Environment(
        env={
            "HOME": str(home),
            "KB_DATA_DIR": str(root / name),
            "KB_MODEL_CACHE": str(model_cache),
            "KB_WARM_DIR": str(root / "run"),
            "KB_WARM_IDLE_S": "30",  # a server a failed test leaves behind goes away soon
            "HF_HUB_OFFLINE": "1",
        },
        cwd=root,
        stdout_isatty=False,
        stderr_isatty=False,
    )
    if model:
        environment.env["KB_MODEL"] = model
    warm = WarmKb(environment, docs)
    warm.run("add", str(docs), warm=False)
    return warm


def stop_all(warm: WarmKb) -> None:
    """Stop the servers a test left running, whichever way it ended (also one still loading):
    warm servers run in their runtime directory, so that is how they are found."""
    run = Path(warm.environment.env["KB_WARM_DIR"]).resolve()
    for pid in servers_in(run):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        wait_gone(pid, timeout=15)


def servers_in(run: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or not is_warm_server(int(entry.name)):
            continue
        try:
            if Path(os.readlink(entry / "cwd")) == run:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def is_warm_server(pid: int) -> bool:
    try:
        return b"kb_search.cli.warm.server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


KB_MODULE = [sys.executable, "-m", "kb_search"]
