"""Finding the files under the paths given to `kb add` / `kb sync`.

Ignored, as ripgrep does by default: well-known junk (VCS dirs, virtualenvs, build outputs,
caches, hidden dirs), what a git repository's `.gitignore` files (and `.git/info/exclude`)
say, and what `.kbignore` files say. Both use gitignore syntax and may sit in any directory;
patterns are relative to their own directory, and a deeper file's patterns win over a
shallower one's. `.gitignore` counts only inside a git repository (a `.git` in the folder or
above it), including the `.gitignore` files above an added folder up to the repository's
top. `.kbignore` files count everywhere, above an added folder too (as ripgrep's `.ignore`
files do). A `.kbignore` verdict wins over every `.gitignore` one (as `.ignore` does in ripgrep):
`!build/notes.md` in a `.kbignore` indexes a file git ignores.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pathspec

from kb_search.regular import read_regular
from kb_search.sanitize import path_text

IGNORE_FILE = ".kbignore"
GIT_IGNORE_FILE = ".gitignore"
IGNORE_FILE_BYTES = 1_000_000  # more than any hand-written ignore file
DEFAULT_IGNORED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__MACOSX",  # a zip's AppleDouble files
        "bower_components",
        ".venv",
        "venv",
        "__pycache__",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".cache",
        ".idea",
        ".vscode",
        "dist",
        "build",
        "target",
        "_build",
        "_site",  # Jekyll's built site
        "htmlcov",  # coverage.py's HTML report: every source file again as a page
        ".eggs",
        "site-packages",
        ".next",
        ".terraform",
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
    ".swp",
    "~",
)
# A system's own files about a folder (Finder's, Explorer's), passed by without a count
DEFAULT_IGNORED_FILES = frozenset(
    {".DS_Store", "Thumbs.db", "ehthumbs.db", "desktop.ini", IGNORE_FILE, GIT_IGNORE_FILE}
)
# macOS's AppleDouble files: `._report.pdf` beside `report.pdf` on a foreign disk, a network
# share or in a zip (`__MACOSX/`), 4 KB of Finder metadata each. Read as the document they are
# named like, each failed ("not a PDF: no %PDF- header"); passed by as `.DS_Store` is.
APPLE_DOUBLE_PREFIX = "._"
# An office suite's lock files beside an open document: Microsoft Office's owner file
# `~$report.docx` (162 bytes: who has it open), LibreOffice's `.~lock.notes.odt#`. Read as the
# document they are named like, each failed ("docling cannot open the DOCX file") on every run.
EDITOR_LOCK_PREFIXES = ("~$", ".~lock.")


@dataclass
class Found:
    """A file to consider, with the root it was found under."""

    path: Path  # absolute, symlinks resolved
    root: Path  # the directory given by the user (or the file's parent)
    size: int | None = None  # from the walk's own stat, when it made one
    mtime: float | None = None


@dataclass
class WalkError:
    path: Path
    reason: str


VCS_DIRS = frozenset({".git", ".hg", ".svn"})
# Why the walk passed a path by (the summary's `not_walked`, by reason)
VCS_FOLDER = "VCS folder"
HIDDEN_FOLDER = "hidden folder"
BUILD_FOLDER = "build, cache or vendor folder"
BUILD_FILE = "build or editor file"  # *.pyc, *.o, swap, backup and office lock files
IGNORE_RULES = "ignore rules"  # what a .gitignore or .kbignore says
NEVER_INDEXED = "a file kb never indexes"  # an ignore file, .DS_Store, Thumbs.db, ._x
SYMLINK = "symbolic link"  # not followed (ripgrep's default; `ingestion.follow_symlinks`)


def passed_reason(name: str, is_dir: bool) -> str | None:
    """Why the walk left out a file or folder it found ignored (see `_ignored_name`); None for
    what no one would count (an ignore file itself, `.DS_Store`)."""
    if not _ignored_name(name, is_dir):
        return IGNORE_RULES
    if not is_dir:
        return None if _os_file(name) else BUILD_FILE
    if name in VCS_DIRS:
        return VCS_FOLDER
    if _build_folder(name):
        return BUILD_FOLDER
    return HIDDEN_FOLDER


def _ignored_name(name: str, is_dir: bool) -> bool:
    if is_dir:
        return _build_folder(name) or name.startswith(".")
    return (
        name.endswith(DEFAULT_IGNORED_SUFFIXES)
        or _os_file(name)
        or name.startswith(EDITOR_LOCK_PREFIXES)
        or (len(name) > 2 and name[0] == name[-1] == "#")  # Emacs's auto-save `#notes.org#`
    )


def _os_file(name: str) -> bool:
    """A file no one would count as left out: an ignore file, or one the system leaves in
    folders (`.DS_Store`, `desktop.ini`, macOS's `._x`)."""
    return name in DEFAULT_IGNORED_FILES or name.startswith(APPLE_DOUBLE_PREFIX)


def _build_folder(name: str) -> bool:
    return name in DEFAULT_IGNORED_DIRS or name.endswith(".egg-info")


def _load_spec(ignore_file: Path) -> pathspec.GitIgnoreSpec | None:
    try:
        data = read_regular(ignore_file, IGNORE_FILE_BYTES)
    except OSError:
        return None  # gone, unreadable, or a FIFO: no rules from it
    lines = data.decode("utf-8", errors="replace").splitlines()
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _not_leaving_out(spec: pathspec.GitIgnoreSpec, prefix: str) -> pathspec.GitIgnoreSpec:
    """`spec` less its patterns that leave out a folder of `prefix` ("a/b/": a/, a/b/) by
    its name: `work/`, `w*/`. One that matches any folder there (`*` before `!*.md`) is a
    rule for every file, and stays."""
    parts = prefix.strip("/").split("/")
    folders = [(parts[:depth], name) for depth, name in enumerate(parts)]

    def names_one(pattern: pathspec.Pattern) -> bool:
        return any(
            pattern.match_file("/".join([*above, name]) + "/")
            and not pattern.match_file("/".join([*above, _PROBE]) + "/")
            for above, name in folders
        )

    kept = [p for p in spec.patterns if not (p.include and names_one(p))]
    return spec if len(kept) == len(spec.patterns) else pathspec.GitIgnoreSpec(kept)


_PROBE = "kb-no-such-folder-0"  # a folder name no pattern aimed at one folder matches


def _repository_top(folder: Path) -> Path | None:
    """The git work tree `folder` lies in (a `.git` directory or file there or above)."""
    for current in (folder, *folder.parents):
        if (current / ".git").exists():
            return current
    return None


Rules = list[tuple[str, str, pathspec.GitIgnoreSpec]]  # (folder below the root, prefix, spec)


def _verdict(rules: Rules, rel: str, is_dir: bool) -> bool | None:
    """The last (deepest) verdict of `rules` on `rel`. A rule file in a folder below the root
    sees paths below its folder; one above the root sees `prefix` + the path."""
    verdict = None
    for folder, prefix, spec in rules:
        if folder and not rel.startswith(folder + "/"):
            continue
        below = prefix + (rel[len(folder) + 1 :] if folder else rel)
        include = spec.check_file(below + ("/" if is_dir else "")).include
        if include is not None:
            verdict = include
    return verdict


class IgnoreRules:
    """Default ignores plus the `.kbignore` and (in a git repository) `.gitignore` files that
    apply from `root` down."""

    def __init__(self, root: Path):
        self.root = root
        self._specs: dict[str, pathspec.GitIgnoreSpec | None] = {}
        self._git_specs: dict[str, pathspec.GitIgnoreSpec | None] = {}
        self._in_repo: dict[str, bool] = {}
        self._above: Rules | None = None
        self._kb_above: Rules | None = None

    def note_dir(self, rel_dir: str, names: list[str] | set[str]) -> None:
        """Record a directory's ignore files from a listing the walk already has (no stat)."""
        folder = self._dir(rel_dir)
        if rel_dir not in self._specs:
            found = IGNORE_FILE in names
            self._specs[rel_dir] = _load_spec(folder / IGNORE_FILE) if found else None
        if rel_dir not in self._git_specs:
            if rel_dir not in self._in_repo:
                self._in_repo[rel_dir] = ".git" in names or self._parent_in_repo(rel_dir)
            found = GIT_IGNORE_FILE in names and self._in_repo[rel_dir]
            self._git_specs[rel_dir] = _load_spec(folder / GIT_IGNORE_FILE) if found else None

    def _dir(self, rel_dir: str) -> Path:
        return self.root / rel_dir if rel_dir else self.root

    def _spec(self, rel_dir: str) -> pathspec.GitIgnoreSpec | None:
        if rel_dir not in self._specs:
            self._specs[rel_dir] = _load_spec(self._dir(rel_dir) / IGNORE_FILE)
        return self._specs[rel_dir]

    def _git_spec(self, rel_dir: str) -> pathspec.GitIgnoreSpec | None:
        if rel_dir not in self._git_specs:
            in_repo = self._repo_dir(rel_dir)
            folder = self._dir(rel_dir)
            self._git_specs[rel_dir] = _load_spec(folder / GIT_IGNORE_FILE) if in_repo else None
        return self._git_specs[rel_dir]

    def _repo_dir(self, rel_dir: str) -> bool:
        if rel_dir not in self._in_repo:
            here = (self._dir(rel_dir) / ".git").exists()
            self._in_repo[rel_dir] = here or self._parent_in_repo(rel_dir)
        return self._in_repo[rel_dir]

    def _parent_in_repo(self, rel_dir: str) -> bool:
        if not rel_dir:
            return _repository_top(self.root) is not None
        return self._repo_dir(rel_dir.rpartition("/")[0])

    def _rules_above(self) -> Rules:
        """`.git/info/exclude` and the `.gitignore` files from the repository's top down to
        the root's parent, as rules on the paths below the root (git's order: the exclude
        file first, deeper files later, so they win)."""
        if self._above is None:
            self._above = []
            top = _repository_top(self.root)
            if top is not None:
                above = [p for p in reversed(self.root.parents) if p == top or top in p.parents]
                files = [(top / ".git" / "info" / "exclude", top)]
                files += [(folder / GIT_IGNORE_FILE, folder) for folder in above]
                for ignore_file, folder in files:
                    spec = _load_spec(ignore_file)
                    if spec is not None:
                        prefix = self.root.relative_to(folder).as_posix() + "/"
                        self._above.append(("", "" if prefix == "./" else prefix, spec))
        return self._above

    def _kb_rules_above(self) -> Rules:
        """The `.kbignore` files in the folders above the root, top down, as rules on the
        paths below it: adding `~/notes/work` keeps what `~/notes/.kbignore` leaves out, as
        ripgrep honours an `.ignore` in a parent folder. A pattern there that leaves out the
        added folder itself (or a folder on the way to it) does not count: the user named
        the folder (`work/` in `~/notes/.kbignore` and `kb add ~/notes/work`)."""
        if self._kb_above is None:
            self._kb_above = []
            for folder in reversed(self.root.parents):
                spec = _load_spec(folder / IGNORE_FILE)
                if spec is not None:
                    prefix = self.root.relative_to(folder).as_posix() + "/"
                    self._kb_above.append(("", prefix, _not_leaving_out(spec, prefix)))
        return self._kb_above

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Is `rel` (posix, below the root) ignored? Its parent dirs are assumed not to be."""
        parts = rel.split("/")
        if _ignored_name(parts[-1], is_dir):
            return True
        folders = ["/".join(parts[:depth]) for depth in range(len(parts))]
        own: Rules = self._kb_rules_above() + [
            (f, "", spec) for f in folders if (spec := self._spec(f)) is not None
        ]
        verdict = _verdict(own, rel, is_dir)
        if verdict is None:
            git = [(f, "", spec) for f in folders if (spec := self._git_spec(f)) is not None]
            verdict = _verdict(self._rules_above() + git, rel, is_dir)
        return bool(verdict)

    def ignored_path(self, path: Path) -> bool:
        """Full check of a path below the root: every directory on the way counts too."""
        return self.ignored_because(path) is not None

    def ignored_because(self, path: Path) -> tuple[str, str] | None:
        """Why the walk passes this path by: (reason, the folder or file name it is for), the
        first on the way down; None when it is not ignored."""
        try:
            parts = path.relative_to(self.root).parts
        except ValueError:
            return None
        for i in range(1, len(parts)):
            if self.ignored("/".join(parts[:i]), True):
                return passed_reason(parts[i - 1], True) or IGNORE_RULES, parts[i - 1]
        if parts and self.ignored("/".join(parts), False):
            return passed_reason(parts[-1], False) or NEVER_INDEXED, parts[-1]
        return None

    def ignored_dir(self, path: Path) -> bool:
        """Is this directory below the root, or one on the way to it, ignored?"""
        try:
            parts = path.relative_to(self.root).parts
        except ValueError:
            return False
        return any(self.ignored("/".join(parts[:i]), True) for i in range(1, len(parts) + 1))


def rel_path_for(path: Path, root: Path) -> str:
    """The path shown in citations: the root's own name, then the path below it."""
    try:
        below = path.relative_to(root)
    except ValueError:
        return path_text(path.name)
    return path_text((Path(root.name) / below).as_posix() if root.name else below.as_posix())


def walk(
    paths: list[Path], follow_symlinks: bool = False, passed: dict[str, int] | None = None
) -> Iterator[Found | WalkError]:
    """Yield every candidate file once; unreadable dirs and link loops become WalkErrors.
    `passed`, when given, counts the files and folders the walk left out, by reason."""
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
        if not resolved.is_dir():
            yield WalkError(given, "not a regular file (FIFO, socket or device)")
            continue
        yield from walk_tree(
            resolved, follow_symlinks=follow_symlinks, seen_files=seen_files, passed=passed
        )


def walk_tree(
    root: Path,
    start: Path | None = None,
    follow_symlinks: bool = False,
    seen_files: set[Path] | None = None,
    file_root: Path | None = None,
    passed: dict[str, int] | None = None,
) -> Iterator[Found | WalkError]:
    """Files below `start` (default: `root`), with `root`'s ignore rules. Each Found carries
    the stat the walk made (size, mtime), so a caller comparing them needs no more syscalls.
    `file_root` is the root stamped on each Found (default `root`); `passed` counts what the
    rules left out, by reason (`passed_reason`)."""
    rules = IgnoreRules(root)
    start = start or root
    seen = seen_files if seen_files is not None else set()
    if rules.ignored_dir(start):
        return
    visited: set[tuple[int, int]] = set()
    stack = [start]
    while stack:
        current = stack.pop()
        yield from _scan_dir(
            current, rules, follow_symlinks, seen, visited, stack, file_root, passed
        )


def _scan_dir(
    current: Path,
    rules: IgnoreRules,
    follow_symlinks: bool,
    seen: set[Path],
    visited: set[tuple[int, int]],
    stack: list[Path],
    file_root: Path | None,
    passed: dict[str, int] | None = None,
) -> Iterator[Found | WalkError]:
    try:
        st = current.stat()
        if (st.st_dev, st.st_ino) in visited:
            yield WalkError(current, "symlink loop: directory already visited")
            return
        visited.add((st.st_dev, st.st_ino))
        with os.scandir(current) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        yield WalkError(current, exc.strerror or str(exc))
        return
    rel_dir = "" if current == rules.root else current.relative_to(rules.root).as_posix()
    rules.note_dir(rel_dir, {e.name for e in entries})
    subdirs = []
    for entry in entries:
        rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
        try:
            is_link = entry.is_symlink()
            if is_link and not follow_symlinks:
                if passed is not None:  # a link to a file out of the tree is never read: say so
                    passed[SYMLINK] = passed.get(SYMLINK, 0) + 1
                continue
            is_dir = entry.is_dir()
        except OSError as exc:
            yield WalkError(Path(entry.path), exc.strerror or str(exc))
            continue
        if rules.ignored(rel, is_dir):
            reason = passed_reason(entry.name, is_dir) if passed is not None else None
            if reason is not None and passed is not None:
                passed[reason] = passed.get(reason, 0) + 1
            continue
        if is_dir:
            subdirs.append(Path(entry.path))
            continue
        item = _found(entry, is_link, file_root or rules.root)
        if isinstance(item, Found):
            if item.path in seen:
                continue
            seen.add(item.path)
        if item is not None:
            yield item
    # reversed: the stack pops them in name order, so files come out sorted depth-first
    stack.extend(reversed(subdirs))


def _found(entry: os.DirEntry, is_link: bool, root: Path) -> Found | WalkError | None:
    """The file, an error, or None for what is not a regular file (a FIFO would hang a read)."""
    path = Path(entry.path)
    try:
        if is_link:
            path = path.resolve(strict=True)
        st = entry.stat()
    except (OSError, RuntimeError) as exc:
        reason = f"broken symlink: {exc}" if is_link else (getattr(exc, "strerror", "") or str(exc))
        return WalkError(path, reason)
    if not entry.is_file():
        return None
    return Found(path, root, st.st_size, st.st_mtime)
