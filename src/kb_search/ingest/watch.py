"""`kb watch` and `kb serve --watch`: follow the added folders with file-system events and
bring the index in line through the same `sync` as `kb sync PATH...`.

Events come from `watchfiles` (the Rust `notify` crate: inotify, FSEvents,
ReadDirectoryChangesW). A burst is gathered until the tree has been quiet for `step_ms` (at
most `debounce_ms`), then its paths are reduced and synced as one batch:

- an editor's atomic save (write `x.tmp`, rename it over `x`; vim's backup-and-rename) is one
  batch in which the temporary files no longer exist, so only `x` is re-read;
- both ends of a rename fall in the same batch, so sync pairs them by content hash and moves
  the document (ids and vectors kept); a renamed folder is synced as the old and new folder;
- a file that vanished between the event and the read is not a failure: its deletion is
  the next event, and the next batch applies it;
- what sync ignores (`.kbignore`, hidden and build folders) never starts a batch, nor do the
  data dir, the database and its -wal/-shm files (the watcher's own writes would loop);
  a changed `.kbignore` rescans its folder, so newly ignored files leave the index.

The first batch is a full sync of what is watched, started once the watcher is listening, so
changes made while nothing was watching are picked up and none made since are lost.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kb_search.errors import KbError, SyncError, UserInputError
from kb_search.ingest.roots import deepest_root, root_change
from kb_search.ingest.summary import Failure
from kb_search.ingest.sync import SyncSummary
from kb_search.ingest.walk import GIT_IGNORE_FILE, IGNORE_FILE, IgnoreRules
from kb_search.sanitize import path_text
from kb_search.store.db import Connection, DatabaseError
from kb_search.store.inventory import document_paths
from kb_search.store.roots import load_roots
from kb_search.text import plural

RULE_FILES = (IGNORE_FILE, GIT_IGNORE_FILE)  # a change to one rescans its folder
STEP_MS = 100  # quiet time that ends a burst: an editor's save is a few ms of events
DEBOUNCE_MS = 1600  # a burst that never goes quiet is cut after this long
MAX_PATHS = 256  # more changed paths than this in one batch: rescan their roots instead
POLL_MS = 500  # how often an idle watcher looks at its stop event
# Chunks embedded per idle tick: a batch of file events waits at most this much embedding
# (a watcher writes each batch's text first and embeds between batches, never holding them).
EMBED_STEP = 32
# A batch this small, of these plain-text types, is parsed in the watcher's own process:
LIGHT_TYPES = frozenset({"markdown", "text", "code", "org", "asciidoc", "csv"})
LIGHT_FILES = 16
LIGHT_BYTES = 256_000


@dataclass
class WatchTarget:
    """What the OS watches (`directory`, recursively) and which events count (`scope`: the
    directory itself, or one file added by name)."""

    directory: Path
    scope: Path


@dataclass
class WatchPlan:
    targets: list[WatchTarget]
    sync_paths: list[Path] | None  # what the first, full sync rescans (None: every root)
    missing: list[str] = field(default_factory=list)  # roots not there now: not watched
    redirected: list[str] = field(default_factory=list)  # roots that are symlinks now: neither
    unfollowed: int = 0  # files added by name outside every root: synced first, not watched

    def line(self, show: Callable[[str], str] = str) -> str:
        """What is watched, for a person: `Watching 2 folders (notes, ...)`."""
        return describe(self, show)

    @property
    def directories(self) -> list[Path]:
        """The directories handed to the OS, none inside another."""
        dirs = sorted({t.directory for t in self.targets}, key=lambda d: len(d.parts))
        kept: list[Path] = []
        for directory in dirs:
            if not any(k == directory or k in directory.parents for k in kept):
                kept.append(directory)
        return kept


@dataclass
class WatchBatch:
    """One synced batch: the paths the events named and what sync did with them."""

    summary: SyncSummary
    events: int  # file-system events in the batch (after filtering)
    paths: list[str]  # the paths synced (the first full sync: the watched scopes)
    initial: bool = False  # the full sync made when watching starts
    vanished: list[str] = field(default_factory=list)  # gone before they could be read

    @property
    def changed(self) -> bool:
        s = self.summary
        return bool(s.changed or s.failed or s.unfollowed_roots or s.embedded)

    def line(self, show: Callable[[str], str] = str) -> str:
        """`12:04:31 1 updated, 1 renamed: notes/a.md (0.08 s)`: one line per batch; what else
        happened as `kb sync` says it (`12:04:31 1 added; 1 empty file skipped (nothing to
        index): notes/a.md and 1 more (0.08 s)`)."""
        s = self.summary
        counts = [
            f"{n} {word}"
            for n, word in (
                (s.added, "added"),
                (s.updated, "updated"),
                (s.renamed, "renamed"),
                (s.deleted, "deleted"),
            )
            if n
        ]
        parts = s.outcome_parts(show, zero_failed=False)  # in `kb sync`'s words
        if s.embedded and not counts and not parts:  # chunks an interrupted run left
            counts.append(f"{s.embedded} chunks embedded")
        what = "; ".join([", ".join(counts)] * bool(counts) + parts) or "no changes"
        where = ""
        if not self.initial and self.paths:
            more = len(self.paths) - 1
            where = f": {show(self.paths[0])}" + (f" and {more} more" if more else "")
            there = [p for p in self.paths if os.path.lexists(p)]
            if s.renamed == 1 and len(self.paths) == 2 and len(there) == 1:
                (gone,) = set(self.paths) - set(there)
                where = f": {show(gone)} -> {show(there[0])}"
        label = "initial sync, " if self.initial else ""
        stamp = time.strftime("%H:%M:%S")
        return f"{stamp} {label}{what}{where} ({s.seconds:.2f} s)"

    def to_dict(self) -> dict:
        return {
            "event": "initial_sync" if self.initial else "sync",
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "events": self.events,
            "paths": self.paths[:50],
            "paths_total": len(self.paths),
            "vanished": self.vanished,
            **self.summary.to_dict(),
        }


def plan_targets(conn: Connection, paths: list[Path] | None) -> WatchPlan:
    """What to watch: every remembered root when `paths` is None, else the given files and
    folders, which must be under added roots. Files added by name outside every root are
    synced by the first full sync but not followed: watching their folders recursively
    (a home directory, say) could cost more than the rest of the knowledge base."""
    roots = load_roots(conn)
    targets: list[WatchTarget] = []
    missing: list[str] = []
    redirected: list[str] = []
    if paths is None:
        for root in [r for r in roots if not any(o in r.parents for o in roots)]:
            if root_change(root) is not None:
                redirected.append(str(root))  # the first sync says where it leads
            elif root.is_dir():
                targets.append(WatchTarget(root, root))
            else:
                missing.append(str(root))
        unfollowed = sum(
            1
            for key in document_paths(conn)
            if os.path.isabs(key) and deepest_root(Path(key), roots) is None
        )
        sync_paths = None
    else:
        unfollowed, sync_paths = 0, []
        for given in paths:
            plain = Path(os.path.abspath(Path(given).expanduser()))
            root = deepest_root(plain, roots)
            why = root_change(root) if root is not None else None
            if why is not None:
                raise UserInputError(f"{given}: the folder added as {root} is {why}: not followed")
            path = plain.resolve()
            if deepest_root(path, roots) is None:
                raise SyncError(
                    f"{given} is not under a folder added with `kb add`: kb watch follows"
                    " added folders (`kb sync` rescans files added by name)"
                )
            if not path.exists():
                raise UserInputError(f"{given}: no such file or directory")
            targets.append(WatchTarget(path if path.is_dir() else path.parent, path))
            sync_paths.append(path)
    if not targets:
        absent = missing + [f"{r} (a symlink now, not followed)" for r in redirected]
        why = f" (not found: {', '.join(absent)})" if absent else ""
        raise UserInputError(f"nothing to watch{why}: add a folder first with `kb add PATH`")
    return WatchPlan(targets, sync_paths, missing, redirected, unfollowed)


class EventFilter:
    """Which events count: inside a watched scope, not ignored the way sync ignores files,
    and never the knowledge base's own files."""

    def __init__(self, plan: WatchPlan, roots: list[Path], data_dir: Path, db_path: Path):
        self.scopes = [t.scope for t in plan.targets]
        self.roots = roots
        self.data_dir = _real(data_dir)
        self.db_path = _real(db_path)
        self._rules: dict[Path, IgnoreRules] = {}

    def __call__(self, change: object, raw: str) -> bool:
        path = Path(raw)
        if self._own(path) or not any(s == path or s in path.parents for s in self.scopes):
            return False
        root = deepest_root(path, self.roots)
        if root is None:
            return False
        if path.name in RULE_FILES:
            self._rules.pop(root, None)  # its patterns are read again
            return True
        rules = self._rules.setdefault(root, IgnoreRules(root))
        if path.is_dir():
            return not rules.ignored_dir(path)
        return not rules.ignored_path(path)

    def _own(self, path: Path) -> bool:
        if path == self.data_dir or self.data_dir in path.parents:
            return True
        return path.parent == self.db_path.parent and path.name.startswith(self.db_path.name)


def _real(path: Path) -> Path:
    return Path(os.path.abspath(Path(path).expanduser())).resolve()


def batch_paths(changed: Iterable[str], roots: list[Path]) -> list[Path]:
    """The paths one batch syncs: a changed `.kbignore` or `.gitignore` stands for its folder,
    paths inside a changed folder go with it, and a flood (a checkout, an unpacked archive)
    becomes a rescan of the roots it touched."""
    paths = {Path(p).parent if Path(p).name in RULE_FILES else Path(p) for p in changed}
    paths = {p for p in paths if deepest_root(p, roots) is not None}
    dirs = {p for p in paths if p.is_dir()}
    kept = sorted(p for p in paths if not any(d in p.parents for d in dirs))
    if len(kept) > MAX_PATHS:
        kept = sorted({deepest_root(p, roots) or p for p in kept})
    return kept


def light_batch(paths: list[Path]) -> bool:
    """A save or two of small plain-text files. Starting a parser process costs more than
    parsing them (0.7-1.5 s of the 2 s a change may take on a busy 2-core machine), so such a
    batch is parsed in this process; anything else (PDFs, archives, office files, big files,
    folders, floods) goes to parser processes with their time and memory limits, as in
    `kb sync`."""
    from kb_search.formats.registry import detect_type

    if len(paths) > LIGHT_FILES:
        return False
    for path in paths:
        try:
            st = path.stat()
        except FileNotFoundError:
            continue  # a deletion: nothing to parse
        except OSError:
            return False
        if not stat.S_ISREG(st.st_mode) or st.st_size > LIGHT_BYTES:
            return False
        if detect_type(path, sniff=False) not in LIGHT_TYPES:
            return False
    return True


def _without_vanished(summary: SyncSummary) -> list[str]:
    """Drop failures of files that are gone now: they vanished between the event and the
    read (an editor's temporary file); their deletion is the next batch's business."""
    gone = [f for f in summary.failed if not os.path.lexists(f.path)]
    keep: list[Failure] = [f for f in summary.failed if f not in gone]
    summary.failed = keep
    return [f.path for f in gone]


@dataclass
class Retry:
    """Paths whose sync failed: tried again with the next batch, or once the pause (doubled
    on each failure, at most a minute) is over."""

    paths: list[str] = field(default_factory=list)
    pause: float = 0.0
    at: float = 0.0

    def due(self, batch_waiting: bool) -> bool:
        return bool(self.paths) and (batch_waiting or time.monotonic() >= self.at)

    def take(self) -> list[str]:
        paths, self.paths = self.paths, []
        return paths

    def later(self, paths: list[Path]) -> float:
        self.paths = [str(p) for p in paths]
        self.pause = min(60.0, max(2.0, self.pause * 2))
        self.at = time.monotonic() + self.pause
        return self.pause

    def succeeded(self) -> None:
        self.pause = 0.0


def follow(
    plan: WatchPlan,
    event_filter: Callable[[object, str], bool],
    roots: list[Path],
    sync: Callable[[list[Path] | None], SyncSummary],
    on_batch: Callable[[WatchBatch], None],
    stop: threading.Event,
    *,
    on_ready: Callable[[], None] | None = None,
    step_ms: int = STEP_MS,
    debounce_ms: int = DEBOUNCE_MS,
    embed_step: Callable[[], int] | None = None,
) -> None:
    """Watch until `stop` is set; each batch is synced whole before `stop` is looked at, so
    stopping never cuts one short (each document is its own transaction besides). `sync`
    writes text only (keyword-searchable at once); `embed_step()` embeds a few chunks without
    vectors on each idle tick, so file events never wait for a long embedding phase."""
    from watchfiles import watch

    initial_done = False
    retry = Retry()
    unembedded = embed_step is not None  # chunks may lack vectors (until a step embeds none)
    for changes in watch(
        *plan.directories,
        watch_filter=event_filter,
        step=step_ms,
        debounce=debounce_ms,
        stop_event=stop,
        rust_timeout=POLL_MS,
        yield_on_timeout=True,
        raise_interrupt=False,
    ):
        if not initial_done:
            # The watcher is listening now: a full sync cannot miss a change.
            initial_done = True
            summary = sync(plan.sync_paths)
            scopes = [path_text(t.scope) for t in plan.targets]
            vanished = _without_vanished(summary)
            on_batch(WatchBatch(summary, len(changes), scopes, True, vanished))
            if on_ready is not None:
                on_ready()
            continue
        names = [p for _, p in changes]
        if retry.due(bool(names)):
            names += retry.take()
        paths = batch_paths(names, roots)
        if not paths:
            if unembedded and embed_step is not None:
                unembedded = _embed_step(embed_step, on_batch)
            continue
        try:
            summary = sync(paths)
        except (KbError, DatabaseError) as exc:
            # The DB locked for too long, a folder that turned into a file...: keep watching
            # and try these paths again (with the next batch, or after a pause).
            wait = retry.later(paths)
            why = f"{str(exc).splitlines()[0]}; trying again in {wait:g} s"
            summary = SyncSummary(failed=[Failure(path_text(paths[0]), why)])
            on_batch(WatchBatch(summary, len(changes), [path_text(p) for p in paths]))
            continue
        retry.succeeded()
        unembedded = embed_step is not None
        vanished = _without_vanished(summary)
        on_batch(WatchBatch(summary, len(changes), [path_text(p) for p in paths], False, vanished))
        if stop.is_set():
            break


def _embed_step(embed_step: Callable[[], int], on_batch: Callable[[WatchBatch], None]) -> bool:
    """One idle tick's embedding; whether chunks may still lack vectors. A failure (a model
    server down) is reported once as a batch line and retried after the next change."""
    try:
        return embed_step() > 0
    except (KbError, DatabaseError) as exc:
        why = f"embedding paused: {str(exc).splitlines()[0]}; tried again after the next change"
        on_batch(WatchBatch(SyncSummary(failed=[Failure("vectors", why)]), 0, []))
        return False


def watch(
    conn: Connection,
    paths: list[Path] | None,
    sync: Callable[[list[Path] | None, int | None], SyncSummary],
    on_batch: Callable[[WatchBatch], None],
    stop: threading.Event,
    *,
    workers: int | None,
    ignored: tuple[Path, Path],
    on_ready: Callable[[WatchPlan], None] | None = None,
    embed_step: Callable[[], int] | None = None,
) -> WatchPlan:
    """Follow the roots (or `paths` under them) until `stop` is set, each batch synced by
    `sync(paths, workers)` (text first) and chunks without vectors embedded a few at a time
    by `embed_step()` while idle; `ignored`: the data dir and the database, whose own writes
    must not start a batch."""
    plan = plan_targets(conn, paths)
    roots = load_roots(conn)

    def sync_batch(batch: list[Path] | None) -> SyncSummary:
        chosen = workers
        if chosen is None and batch is not None and light_batch(batch):
            chosen = 0  # parse a small save here: a parser process costs more
        return sync(batch, chosen)

    follow(
        plan,
        EventFilter(plan, roots, *ignored),
        roots,
        sync_batch,
        on_batch,
        stop,
        on_ready=(lambda: on_ready(plan)) if on_ready else None,
        embed_step=embed_step,
    )
    return plan


class WatchThread:
    """`kb serve --watch`: a daemon thread that runs `watch(stop)` (a KnowledgeBase.watch with
    its own writer) and reports a failure instead of dying silently."""

    def __init__(
        self, watch: Callable[[threading.Event], object], report: Callable[[str], None]
    ):
        self.stop = threading.Event()
        self._watch = watch
        self._report = report
        self._thread = threading.Thread(target=self._run, name="kb-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            self._watch(self.stop)
        except Exception as exc:  # noqa: BLE001 - the server goes on serving what is indexed
            self._report(f"watching stopped: {type(exc).__name__}: {exc}".splitlines()[0])

    def close(self, timeout: float = 30.0) -> bool:
        """Stop after the batch in progress; False when it did not end within `timeout`."""
        self.stop.set()
        self._thread.join(timeout)
        return not self._thread.is_alive()


def describe(plan: WatchPlan, show: Callable[[str], str] = str) -> str:
    """`Watching 2 folders (notes, ...)`, and what is not watched."""
    dirs = sum(1 for t in plan.targets if t.scope == t.directory)
    files = len(plan.targets) - dirs
    parts = [plural(dirs, "folder")] if dirs else []
    if files:
        parts.append(plural(files, "file"))
    first = show(path_text(plan.targets[0].scope))
    text = f"Watching {' and '.join(parts)} ({first}{', ...' if len(plan.targets) > 1 else ''})"
    if plan.missing:
        text += f"; {plural(len(plan.missing), 'root')} not found (first: {plan.missing[0]})"
    if plan.redirected:
        first = show(plan.redirected[0])
        text += (
            f"; {plural(len(plan.redirected), 'root')} not followed, a symlink or moved now"
            f" (first: {first})"
        )
    if plan.unfollowed:
        text += (
            f"; {plural(plan.unfollowed, 'file')} added by name outside the folders not"
            " followed (`kb sync` rescans them)"
        )
    return text
