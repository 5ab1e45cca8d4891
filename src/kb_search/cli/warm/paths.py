"""Where a database's warm server lives and who it is.

The socket, its lock and its log sit in a private runtime directory (mode 0700, owned by this
user: `KB_WARM_DIR`, else `$XDG_RUNTIME_DIR/kb-search`, else `<tmp>/kb-search-<uid>`), named
by a hash of the database's real path: one server per database, never shared between users.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
from collections.abc import Mapping
from pathlib import Path

from kb_search import __version__
from kb_search.config import Config

TYPE_CHECKING = False  # typing's, without importing typing: every piped `kb search` loads this
if TYPE_CHECKING:
    from typing import Any

PROTOCOL = 2  # 2: the server greets each connection ("ready" or "busy") before the request
SOCKET_PATH_MAX = 100  # sun_path holds 108 bytes on Linux, 104 on macOS
# Settings that change only how the server lives, not what a search answers.
LIFETIME_SETTINGS = ("search.warm", "search.warm_idle_s")


class WarmPaths:
    """A database's server files. A plain class, like the rest of what a piped `kb search`
    imports: dataclasses brings inspect and ast (~15 ms on every call)."""

    FIELDS = ("directory", "socket", "lock", "log", "started")
    __slots__ = FIELDS

    def __init__(self, directory: Path, socket: Path, lock: Path, log: Path, started: Path):
        self.directory = directory
        self.socket = socket
        self.lock = lock
        self.log = log
        self.started = started  # touched when a client starts a server: no retry storm

    def as_dict(self) -> dict[str, Path]:
        return {name: getattr(self, name) for name in self.FIELDS}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WarmPaths) and self.as_dict() == other.as_dict()

    def __repr__(self) -> str:
        return f"WarmPaths({self.as_dict()!r})"


def supported() -> bool:
    return hasattr(socket, "AF_UNIX") and hasattr(os, "getuid")


def private_dir(env: Mapping[str, str]) -> Path | None:
    """This user's runtime directory for warm servers, made 0700; None when it cannot be
    trusted (another owner, a symlink, not a directory)."""
    if env.get("KB_WARM_DIR"):
        directory = Path(env["KB_WARM_DIR"])
    elif env.get("XDG_RUNTIME_DIR"):
        directory = Path(env["XDG_RUNTIME_DIR"]) / "kb-search"
    else:
        import tempfile  # here: ~5 ms a piped `kb search` skips where a runtime dir is set

        directory = Path(tempfile.gettempdir()) / f"kb-search-{os.getuid()}"
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:
            pass
        info = os.lstat(directory)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            return None
        if info.st_mode & 0o077:
            os.chmod(directory, 0o700)  # ours: tighten what a umask or a user loosened
    except OSError:
        return None
    return directory


def warm_paths(config: Config, env: Mapping[str, str]) -> WarmPaths | None:
    """The paths of this database's server, or None when the warm path cannot be used here."""
    if not supported():
        return None
    directory = private_dir(env)
    if directory is None:
        return None
    key = hashlib.sha256(str(real_db(config)).encode()).hexdigest()[:20]
    sock = directory / f"{key}.sock"
    if len(os.fsencode(sock)) > SOCKET_PATH_MAX:
        return None
    return WarmPaths(
        directory,
        sock,
        lock=directory / f"{key}.lock",
        log=directory / f"{key}.log",
        started=directory / f"{key}.started",
    )


def real_db(config: Config) -> Path:
    return Path(os.path.realpath(config.db_path))


def config_spec(config: Config) -> dict[str, Any]:
    """What a server needs to rebuild this Config (JSON)."""
    return {
        "data_dir": str(config.data_dir),
        "db": str(config.db_path),
        "values": dict(config.values),
        "sources": dict(config.sources),
    }


def config_from_spec(spec: Mapping[str, Any]) -> Config:
    return Config(
        data_dir=Path(spec["data_dir"]),
        db_path=Path(spec["db"]),
        values=dict(spec["values"]),
        sources=dict(spec["sources"]),
    )


def config_fingerprint(config: Config) -> str:
    """Everything that can change a search's answer: two configs with the same fingerprint
    answer every query the same."""
    values = {k: v for k, v in config.values.items() if k not in LIFETIME_SETTINGS}
    explicit_model = config.sources.get("model", "default") != "default"
    text = json.dumps(
        [str(config.data_dir), str(real_db(config)), values, explicit_model],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(text.encode()).hexdigest()


def db_file_id(config: Config) -> list[int]:
    """The database file's (device, inode): another file at the same path is another DB."""
    info = os.stat(real_db(config))
    return [info.st_dev, info.st_ino]


def identity(config: Config) -> dict[str, Any]:
    """Who a server must be to answer this client: same protocol, kb version, database file
    and search configuration."""
    return {
        "protocol": PROTOCOL,
        "version": __version__,
        "db": str(real_db(config)),
        "db_file": db_file_id(config),
        "config": config_fingerprint(config),
    }
