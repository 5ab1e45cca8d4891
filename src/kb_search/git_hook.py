"""`kb hook install`: a git post-commit hook that syncs the files each commit touched.

The hook starts `kb hook run` in the background and exits 0 at once: a commit never waits
for the index and never fails because of it. What the run did (or why it could not) goes to
`<data_dir>/hook.log`. A post-commit hook that was there before is kept and still runs first.

The script is shell that runs on every commit: each value put in it (paths, the kb command) is
shell-quoted in code lines only, never written into a comment, and refused when it holds a
control character (a newline in a quoted word is still a newline in the file).
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from kb_search.errors import HookError  # noqa: F401 - re-exported

HOOK_NAME = "post-commit"
CHAINED_NAME = "post-commit.kb-chained"
MARKER = "# kb-search post-commit hook"
LOG_NAME = "hook.log"

_SCRIPT = """#!/bin/sh
{marker} (written by `kb hook install`; run it again to update).
# Syncs the files this commit touched into the kb index, in the background: it never
# blocks or fails a commit. Its log is the file named by $log below.
data_dir={data_dir}
log={log}
chained="$(dirname "$0")/{chained}"
if [ -x "$chained" ]; then "$chained" "$@"; fi
commit=$(git rev-parse HEAD 2>/dev/null) || exit 0
top=$(git rev-parse --show-toplevel 2>/dev/null) || exit 0
mkdir -p "$data_dir" 2>/dev/null
( {kb} hook run --repo "$top" --commit "$commit" </dev/null >>"$log" 2>&1 & ) 2>/dev/null
exit 0
"""

@dataclass
class Installed:
    hook: Path
    chained: Path | None  # the pre-existing hook, now run from ours
    updated: bool  # ours was already there and was rewritten


def kb_command() -> list[str]:
    """How the hook calls this very kb: the interpreter it runs under, by absolute path."""
    return [sys.executable, "-m", "kb_search"]


def git(repo: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", *args], cwd=repo, capture_output=True, text=True, check=True, timeout=60
        )
    except FileNotFoundError as exc:
        raise HookError("git is not installed") from exc
    except subprocess.CalledProcessError as exc:
        detail = (exc.stderr or "").strip().splitlines()
        raise HookError(f"git {args[0]} failed in {repo}: {detail[0] if detail else exc}") from exc
    return done.stdout


def repo_top(repo: Path) -> Path:
    if not Path(repo).is_dir():
        raise HookError(f"no such directory: {repo}")
    try:
        return Path(git(repo, "rev-parse", "--show-toplevel").strip()).resolve()
    except HookError as exc:
        raise HookError(f"{repo} is not inside a git work tree") from exc


def hooks_dir(repo: Path) -> Path:
    """The hooks directory git uses for this repository (honours core.hooksPath)."""
    found = Path(git(repo, "rev-parse", "--git-path", "hooks").strip())
    return found if found.is_absolute() else (Path(repo) / found).resolve()


def shell_word(value: str | Path, what: str) -> str:
    """`value` quoted for the hook's shell; a control character in it is refused (one line)."""
    from kb_search.sanitize import printable

    text = str(value)
    if any(ord(char) < 0x20 or 0x7F <= ord(char) <= 0x9F for char in text):
        raise HookError(
            f"refusing to write a hook: the {what} holds a control character: {printable(text)}"
        )
    return shlex.quote(text)


def hook_script(kb: list[str], data_dir: Path) -> str:
    """The hook's text; every value in it checked and quoted by shell_word."""
    return _SCRIPT.format(
        marker=MARKER,
        chained=CHAINED_NAME,
        data_dir=shell_word(data_dir, "data directory"),
        log=shell_word(data_dir / LOG_NAME, "log path"),
        kb=" ".join(shell_word(word, "kb command") for word in kb),
    )


def install_hook(repo: Path, data_dir: Path, kb: list[str]) -> Installed:
    """Write the post-commit hook of `repo`. `kb` is the full command the hook runs, global
    options (--data-dir, --db) included; an existing foreign hook is chained, not replaced."""
    script = hook_script(kb, data_dir)  # refused before anything is moved or written
    top = repo_top(repo)
    directory = hooks_dir(top)
    directory.mkdir(parents=True, exist_ok=True)
    hook, chained = directory / HOOK_NAME, directory / CHAINED_NAME
    ours = hook.is_file() and MARKER in hook.read_text(encoding="utf-8", errors="replace")
    if hook.exists() and not ours:
        if chained.exists():
            raise HookError(
                f"both {hook} and {chained} exist: merge them by hand, then run this again"
            )
        os.replace(hook, chained)
    temp = hook.with_name(f".{HOOK_NAME}.kb-tmp")
    temp.write_text(script, encoding="utf-8")
    temp.chmod(temp.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    os.replace(temp, hook)
    return Installed(hook, chained if chained.exists() else None, ours)


def uninstall_hook(repo: Path) -> bool:
    """Remove our hook and put back the one it chained; False when ours is not there."""
    directory = hooks_dir(repo_top(repo))
    hook, chained = directory / HOOK_NAME, directory / CHAINED_NAME
    if not hook.is_file() or MARKER not in hook.read_text(encoding="utf-8", errors="replace"):
        return False
    hook.unlink()
    if chained.exists():
        os.replace(chained, hook)
    return True


def commit_paths(repo: Path, commit: str) -> list[Path]:
    """Absolute paths a commit added, modified, deleted or renamed (both sides of a rename).

    `--root` lists a first commit's files as added; `-z` keeps odd file names intact.
    """
    top = repo_top(repo)
    out = git(
        top, "diff-tree", "--no-commit-id", "--name-status", "-r", "-M", "-z", "--root", commit
    )
    fields = out.split("\0")
    paths: list[Path] = []
    i = 0
    while i < len(fields) and fields[i]:
        status = fields[i][:1]
        count = 2 if status in ("R", "C") else 1
        names = fields[i + 1 : i + 1 + count]
        if status == "C":
            names = names[1:]  # a copy leaves its source as it was
        paths.extend(top / name for name in names)
        i += 1 + count
    return paths


def log_line(text: str) -> str:
    """One hook.log entry: control characters escaped, so a file name or an error message
    cannot split it or forge another."""
    from kb_search.sanitize import printable

    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{stamp} {printable(text)}"
