"""Finding the files under the paths given to `kb add` / `kb sync`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

IGNORE_FILE = ".kbignore"
DEFAULT_IGNORED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".idea",
        ".vscode",
        "dist",
        "build",
        "target",
        ".eggs",
        "site-packages",
    }
)
DEFAULT_IGNORED_SUFFIXES = (
    ".egg-info",
    ".pyc",
    ".pyo",
    ".so",
    ".o",
    ".class",
    ".db-wal",
    ".db-shm",
)


@dataclass
class Found:
    """A file to consider, with the root it was found under."""

    path: Path  # absolute, symlinks resolved
    root: Path  # the directory given by the user (or the file's parent)


@dataclass
class WalkError:
    path: Path
    reason: str


def _ignore_spec(root: Path):  # -> pathspec.PathSpec | None
    ignore_file = root / IGNORE_FILE
    if not ignore_file.is_file():
        return None
    import pathspec

    lines = ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
    return pathspec.PathSpec.from_lines("gitwildmatch", lines)


def _ignored_name(name: str, is_dir: bool) -> bool:
    if is_dir:
        return name in DEFAULT_IGNORED_DIRS or name.endswith(".egg-info") or name.startswith(".")
    return name.endswith(DEFAULT_IGNORED_SUFFIXES) or name in {".DS_Store", IGNORE_FILE}


def rel_path_for(path: Path, root: Path) -> str:
    """The path shown in citations: the root's own name, then the path below it."""
    try:
        below = path.relative_to(root)
    except ValueError:
        return path.name
    return (Path(root.name) / below).as_posix() if root.name else below.as_posix()


def walk(paths: list[Path], follow_symlinks: bool = False) -> Iterator[Found | WalkError]:
    """Yield every candidate file once; unreadable dirs and link loops become WalkErrors."""
    seen_files: set[Path] = set()
    for given in paths:
        given = Path(given).expanduser()
        if not given.exists():
            reason = "broken symlink" if given.is_symlink() else "no such file or directory"
            yield WalkError(given, reason)
            continue
        try:
            resolved = given.resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            yield WalkError(given, f"cannot resolve path: {exc}")
            continue
        if resolved.is_file():
            if resolved not in seen_files:
                seen_files.add(resolved)
                yield Found(resolved, resolved.parent)
            continue
        yield from _walk_dir(resolved, follow_symlinks, seen_files)


def _walk_dir(
    root: Path, follow_symlinks: bool, seen_files: set[Path]
) -> Iterator[Found | WalkError]:
    spec = _ignore_spec(root)
    visited_dirs: set[tuple[int, int]] = set()
    errors: list[WalkError] = []

    def on_error(exc: OSError) -> None:
        errors.append(WalkError(Path(exc.filename or root), exc.strerror or str(exc)))

    for dirpath, dirnames, filenames in os.walk(
        root, onerror=on_error, followlinks=follow_symlinks
    ):
        yield from errors
        errors.clear()
        current = Path(dirpath)
        try:
            st = current.stat()
        except OSError as exc:
            yield WalkError(current, str(exc))
            dirnames[:] = []
            continue
        if (st.st_dev, st.st_ino) in visited_dirs:
            yield WalkError(current, "symlink loop: directory already visited")
            dirnames[:] = []
            continue
        visited_dirs.add((st.st_dev, st.st_ino))
        rel_dir = current.relative_to(root).as_posix()
        keep = []
        for name in sorted(dirnames):
            rel = f"{rel_dir}/{name}/" if rel_dir != "." else f"{name}/"
            if _ignored_name(name, True) or (spec and spec.match_file(rel)):
                continue
            keep.append(name)
        dirnames[:] = keep
        for name in sorted(filenames):
            rel = f"{rel_dir}/{name}" if rel_dir != "." else name
            if _ignored_name(name, False) or (spec and spec.match_file(rel)):
                continue
            path = current / name
            if path.is_symlink():
                if not follow_symlinks:
                    continue
                try:
                    path = path.resolve(strict=True)
                except (OSError, RuntimeError) as exc:
                    yield WalkError(current / name, f"broken symlink: {exc}")
                    continue
            if path in seen_files:
                continue
            seen_files.add(path)
            yield Found(path, root)
    yield from errors
