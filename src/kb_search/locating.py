"""What a path in a request names, under one rule: kb answers about files under the folders
the user added, and about nothing else on the host.

A path is absolute, or relative to the caller's directory (the CLI's `cwd`), or, where the
caller has no directory of its own (an MCP client, `cwd` None), relative to an added folder
or to the folder above it (as `rel_path` writes it: the added folder's name, then the path
below it). Paths are joined and normalised as text (`..` folded, `~` never expanded), so
`/proc/self/cwd`, `~` or a `../` chain mean nothing but what they spell. A path that is not an
indexed document gets an answer about the file only when it lies under an added folder, also
once its symlinks are resolved; any other path is `NOT_UNDER_ROOTS`, with no word on whether
it exists.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kb_search.store.db import Connection
from kb_search.store.records import readable_document, readable_documents_at_rel_path
from kb_search.store.roots import load_roots

NOT_UNDER_ROOTS = "not under any added folder"


@dataclass
class IndexedDocument:
    """An indexed document as a read needs it."""

    document_id: int
    path: str
    content_hash: str
    size: int
    has_lines: bool  # its chunks carry lines of the file
    doc_type: str


def candidate_paths(conn: Connection, path: str, cwd: Path | None) -> list[str]:
    """The absolute paths `path` may mean, most likely first, normalised as text."""
    if not path:
        return []
    if os.path.isabs(path):
        return [os.path.normpath(path)]
    if cwd is not None:
        return [os.path.normpath(os.path.join(cwd, path))]
    roots = load_roots(conn)
    below = [os.path.join(root, path) for root in roots]
    beside = [os.path.join(root.parent, path) for root in roots]  # rel_path: "root/below"
    return list(dict.fromkeys(os.path.normpath(p) for p in below + beside))


def indexed_document(conn: Connection, path: str, cwd: Path | None) -> IndexedDocument | None:
    """The indexed document `path` names: by indexed path, by a path relative to the caller's
    directory (or the added folders), or by a citation path (rel_path) that names one
    document. Only indexed documents are ever found, whatever the path spells."""
    candidates = candidate_paths(conn, path, cwd)
    # The real path too: a file reached through a symlinked folder is indexed by its real
    # path. Only an indexed document is ever found, so this tells nothing about other files.
    real = [r for r in map(_real, candidates) if r is not None]
    for candidate in dict.fromkeys([path, *candidates, *real]):
        row = readable_document(conn, candidate)
        if row:
            return IndexedDocument(*row[:4], bool(row[4]), row[5])
    rows = readable_documents_at_rel_path(conn, path)
    if len(rows) == 1:
        return IndexedDocument(*rows[0][:4], bool(rows[0][4]), rows[0][5])
    return None


def under_roots(conn: Connection, path: str, cwd: Path | None) -> tuple[Path, Path] | None:
    """(the file, the added folder holding it) for the first of `path`'s meanings that lies
    under an added folder as written and once its symlinks are resolved; else None (the
    file system is not asked about a path outside every added folder)."""
    roots = load_roots(conn)
    for candidate in candidate_paths(conn, path, cwd):
        lexical = Path(candidate)
        if _deepest(lexical, roots) is None:
            continue
        real = _real(candidate)
        root = None if real is None else _deepest(Path(real), roots)
        if real is not None and root is not None:
            return Path(real), root
    return None


def _real(path: str) -> str | None:
    try:
        return os.path.realpath(path)
    except OSError:  # a link it may not read (/proc/1/root): no answer about that path
        return None


def _deepest(path: Path, roots: list[Path]) -> Path | None:
    inside = [r for r in roots if r == path or r in path.parents]
    return max(inside, key=lambda r: len(r.parts), default=None)
