"""Which project `.kb.yaml` files the user trusts, by the folder it governs, its name and its
content hash.

A project file is found by walking up from the working directory, so it may come with a cloned
repository or a downloaded folder. Until `kb config trust` records it here, with the SHA-256 of
its bytes, config ignores its sensitive settings (config.needs_trust); an edit to a trusted file
changes its hash and takes the trust away again (as direnv's `allow` does).

The record lives under the user's config home ($XDG_CONFIG_HOME, else ~/.config), never in the
data directory: a project file may not choose where its own trust is looked up.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from kb_search.errors import ConfigError

STORE_VERSION = 1


def store_path(env: Mapping[str, str], home: Path) -> Path:
    """Where trust is recorded: $XDG_CONFIG_HOME/kb/trusted.json (an absolute value only, as
    the XDG spec says), else ~/.config/kb/trusted.json."""
    base = env.get("XDG_CONFIG_HOME") or ""
    root = Path(base) if os.path.isabs(base) else home / ".config"
    return root / "kb" / "trusted.json"


def digest(data: bytes) -> str:
    import hashlib  # only paid for when a project file sets something sensitive

    return hashlib.sha256(data).hexdigest()


def record_key(path: Path) -> str:
    """The file *and* the folder it governs: the real path of its folder, then its own name,
    never the target of a symlink (a repo's `.kb.yaml -> ../trusted/.kb.yaml` is its own
    entry, and never trusted)."""
    path = Path(os.path.abspath(path))
    return os.path.join(os.path.realpath(path.parent), path.name)


def is_link(path: Path) -> bool:
    """A symlinked project file: read, but never trusted, since it would carry another
    folder's trust into this one (where its relative paths would resolve)."""
    return os.path.islink(path)


def read_records(store: Path, strict: bool = False) -> dict[str, str]:
    """{absolute path: sha256}; a missing store is empty. A broken one is empty too when only
    read (nothing is trusted), and a ConfigError when it is about to be rewritten (`strict`),
    so no record is lost by accident."""
    try:
        data = json.loads(store.read_text(encoding="utf-8"))
        files = data["files"]
        if not isinstance(files, dict):
            raise TypeError("files is not a mapping")
        return {str(k): str(v) for k, v in files.items()}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        if strict:
            raise ConfigError(
                f"cannot read the trust records in {store} ({type(exc).__name__}):"
                " fix or remove that file"
            ) from exc
        return {}


def is_trusted(path: Path, data: bytes, env: Mapping[str, str], home: Path) -> bool | None:
    """True: `path` is trusted with exactly these bytes; False: it was, with other bytes (it
    changed); None: never trusted."""
    if is_link(path):
        return None
    recorded = read_records(store_path(env, home)).get(record_key(path))
    if recorded is None:
        return None
    return recorded == digest(data)


def write_records(store: Path, records: Mapping[str, str]) -> None:
    """Replace the store atomically, readable by its owner only."""
    store.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    text = json.dumps({"version": STORE_VERSION, "files": dict(sorted(records.items()))}, indent=1)
    fd, temp = tempfile.mkstemp(prefix=".trusted-", dir=store.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temp, store)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def trust(path: Path, data: bytes, env: Mapping[str, str], home: Path) -> str:
    """Record `path` as trusted with content `data`; returns the hash recorded. A symlink is
    refused (ConfigError)."""
    if is_link(path):
        from kb_search.sanitize import printable

        raise ConfigError(
            f"{printable(path)} is a symbolic link: kb trusts only a regular file in the folder"
            " it governs (copy the file there, review it, then trust it)"
        )
    store = store_path(env, home)
    records = read_records(store, strict=True)
    records[record_key(path)] = digest(data)
    write_records(store, records)
    return records[record_key(path)]


def untrust(path: Path, env: Mapping[str, str], home: Path) -> bool:
    """Forget `path`; False when it was not trusted."""
    store = store_path(env, home)
    records = read_records(store, strict=True)
    if records.pop(record_key(path), None) is None:
        return False
    write_records(store, records)
    return True
