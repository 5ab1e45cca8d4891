"""The folders a user added: remembering them, and whether one still is what was added."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from kb_search.ingest.changes import CHUNKER_VERSION
from kb_search.sanitize import path_text
from kb_search.store.db import Connection, set_meta, transaction
from kb_search.store.roots import add_roots, lift_removed_roots
from kb_search.store.skipped import RootSettings, remember_root_settings


def remember_roots(
    conn: Connection,
    paths: Iterable[Path],
    tags: Iterable[str] = (),
    doc_type: str | None = None,
    named: Iterable[Path] = (),
) -> None:
    """Remember the directories added, with the tags and type files under them get. Every
    path the command `named` (folders and files) lifts the folders `kb remove` forgot at,
    above or below it: writes there are wanted again."""
    roots = [Path(path).expanduser().resolve() for path in paths]
    with transaction(conn):
        set_meta(conn, "chunker_version", str(CHUNKER_VERSION))
        add_roots(conn, roots)
        lift_removed_roots(conn, [path_text(Path(p).expanduser().resolve()) for p in named])
    remember_root_settings(conn, roots, tags, doc_type)


def root_change(root: Path) -> str | None:
    """Why a remembered root is no longer the folder the user added, or None. Roots are
    stored as real paths, so one that resolves elsewhere now is a symlink, or sits below a
    folder that became one (a `git pull` that replaced `docs/` with `docs -> ../secret`)."""
    real = Path(os.path.realpath(root))
    if real == root:
        return None
    if os.path.islink(root):
        return f"now a symlink to {path_text(real)}"
    return f"a folder above it changed: the path leads to {path_text(real)} now"


def deepest_root(path: Path, roots: Iterable[Path]) -> Path | None:
    inside = [r for r in roots if r == path or r in path.parents]
    return max(inside, key=lambda r: len(r.parts), default=None)


def file_settings(
    roots: dict[Path, RootSettings],
    path: Path,
    walked_from: Path,
    tags: Iterable[str] = (),
    doc_type: str | None = None,
) -> tuple[list[str], str | None]:
    """Tags and type for a file: the command's (`tags`, `doc_type`), plus what the deepest
    added folder holding it was added with (else the folder it was walked from)."""
    root = roots.get(deepest_root(path, roots) or walked_from, RootSettings())
    return sorted(set(tags) | set(root.tags)), doc_type or root.doc_type
