"""`kb sync`: bring the index in line with the files under the roots given to `kb add`.

New files are ingested, changed ones re-ingested (size+mtime first, the content hash
confirms), vanished ones deleted and renamed ones moved in place: a vanished document and
a new file with the same content hash keep the document's id, chunks and vectors.

A document chunked by an older kb (or under other chunking settings) is read again, as
`kb add` does: first judged by today's rules (`registry.classify`), so one whose file is now
generated or of no type kb reads leaves the index, then re-chunked (unchanged chunk texts
keep their vectors). A document whose file is still there but ignored now (`.kbignore`,
`.gitignore`) leaves too. Both are counted by reason (`excluded`), apart from deletions.

Nothing is read on a no-op run: one query loads every (path, size, mtime) and one walk
stats the files. Each change commits on its own, so a killed sync resumes by running again.
Documents are only deleted when their root is there to prove them gone: an unmounted drive
or an unreadable directory never empties the index.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kb_search.errors import SyncError  # noqa: F401 - re-exported
from kb_search.formats.reader import read_user_file
from kb_search.ingest.batch_writer import embed_pending
from kb_search.ingest.changes import chunking_fingerprint
from kb_search.ingest.executor import AddOptions, VectorSource
from kb_search.ingest.left_out import IGNORED, remove_left_out, under
from kb_search.ingest.ocr_phase import read_queued_scans
from kb_search.ingest.pipeline import ingest_files
from kb_search.ingest.roots import deepest_root, root_change
from kb_search.ingest.sketches import update_copies
from kb_search.ingest.summary import (
    AddSummary,
    ErrorLog,
    Failure,
    count_unsupported,
    counted_on_stop,
    dropped_parts,
    empty_parts,
    excluded_parts,
    failed_part,
    generated_parts,
    left_out_parts,
    leftover_parts,
    ocr_parts,
    rechunked_parts,
    unsupported_parts,
)
from kb_search.ingest.walk import Found, IgnoreRules, WalkError, rel_path_for, walk_tree
from kb_search.progress import NoProgress, Progress
from kb_search.sanitize import path_text
from kb_search.store.db import Connection
from kb_search.store.documents import (
    content_hash,
    delete_document,
    move_document,
    touch_document,
)
from kb_search.store.inventory import document_state, document_states
from kb_search.store.roots import load_roots
from kb_search.store.skipped import forget, load_skipped
from kb_search.text import plural

if TYPE_CHECKING:
    from kb_search.ingest.executor import Executor


@dataclass
class UnfollowedRoot:
    """A root that is not the folder the user added any more; its documents stay as they
    were indexed, and are neither refreshed nor deleted, until the folder is back."""

    root: str
    reason: str
    documents: int  # kept as they were


def unfollowed_part(roots: list[UnfollowedRoot], show: Callable[[str], str] = str) -> str:
    first = roots[0]
    kept = sum(r.documents for r in roots)
    return (
        f"{plural(len(roots), 'root')} not followed (first: {show(first.root)}: "
        f"{show(first.reason)}); {plural(kept, 'document')} kept as indexed, not refreshed:"
        " put the folder back, or `kb remove` it (and `kb add` the folder it leads to if you"
        " mean to index that)"
    )


@dataclass
class SyncSummary:
    added: int = 0  # new files ingested
    updated: int = 0  # changed files re-ingested
    renamed: int = 0  # moved in place, nothing re-parsed or re-embedded
    deleted: int = 0  # documents whose file is gone (or now ignored)
    unchanged: int = 0
    ignored: int = 0  # new files of unsupported types, empty files, files outside every root
    empty: int = 0  # files with nothing to index (now, or before and unchanged since)
    failed: list[Failure] = field(default_factory=list)
    known_failures: int = 0  # failed before and unchanged since: not read again
    removed: int = 0  # removed with `kb remove`: left out until added by name
    dropped: int = 0  # documents whose file now has no text, or none kb can read: removed
    # Documents chunked by an older kb (or other chunking settings), read again unchanged
    rechunked: int = 0
    # Documents that left the index because their file is left out now, by reason: "ignored"
    # (.kbignore, .gitignore), "unsupported", or one of `generated.REASONS`
    excluded: dict[str, int] = field(default_factory=dict)
    chunks: int = 0
    embedded: int = 0  # chunks that got a vector in this run (also ones an earlier run left)
    keyword_seconds: float = 0.0  # until every change was written: keyword-searchable
    ocr_pages: int = 0  # scanned PDF pages read by OCR after the keyword phase
    seconds: float = 0.0
    missing_roots: list[str] = field(default_factory=list)
    # Roots that resolve elsewhere now (a symlink): not followed, their documents kept.
    unfollowed_roots: list[UnfollowedRoot] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    model_loaded: bool = False  # whether this run loaded the embedding model
    # New generated files left out, by reason (`formats/generated.py`)
    left_out: dict[str, int] = field(default_factory=dict)
    # New files of no type kb reads (also counted in `ignored`), as `kb add` counts them
    unsupported: int = 0
    unsupported_files: list[str] = field(default_factory=list)  # the first few, by path
    unsupported_kinds: dict[str, int] = field(default_factory=dict)

    @property
    def changed(self) -> int:
        gone = self.deleted + self.dropped + sum(self.excluded.values())
        return self.added + self.updated + self.renamed + self.rechunked + gone

    def line(self, show: Callable[[str], str] = str) -> str:
        """One line for a person; `show` turns a stored path into the one to print."""
        counts = (
            f"Synced: {self.added} added, {self.updated} updated, {self.renamed} renamed, "
            f"{self.deleted} deleted, {self.unchanged} unchanged"
        )
        parts = [counts, *self.outcome_parts(show), *leftover_parts(self.embedded, self.chunks)]
        return ". ".join(parts) + "."

    def outcome_parts(
        self, show: Callable[[str], str] = str, zero_failed: bool = True
    ) -> list[str]:
        """What happened besides the counts of added, updated, renamed and deleted files, in
        the words `kb add` uses for the same outcome (`kb watch`'s batch lines say them too);
        "0 failed" unless `zero_failed` is False."""
        failed = [failed_part(self.failed, show)] if self.failed or zero_failed else []
        parts = [
            *rechunked_parts(self.rechunked),
            *failed,
            *left_out_parts(self.known_failures, self.removed, "`kb sync --retry-failed`"),
            *dropped_parts(self.dropped),
            *excluded_parts(self.excluded),
            *empty_parts(self.empty),
            *unsupported_parts(self, show),
        ]
        if self.missing_roots:
            first = show(self.missing_roots[0])
            parts.append(
                f"{plural(len(self.missing_roots), 'root')} not found (first: {first});"
                " their documents are kept"
            )
        if self.unfollowed_roots:
            parts.append(unfollowed_part(self.unfollowed_roots, show))
        return parts + generated_parts(self.left_out) + ocr_parts(self.ocr_pages)

    def to_dict(self) -> dict:
        return {
            "added": self.added,
            "updated": self.updated,
            "renamed": self.renamed,
            "deleted": self.deleted,
            "unchanged": self.unchanged,
            "ignored": self.ignored,
            "left_out": dict(sorted(self.left_out.items())),
            "unsupported": self.unsupported,
            "unsupported_files": self.unsupported_files,
            "unsupported_kinds": dict(sorted(self.unsupported_kinds.items())),
            "empty": self.empty,
            "failed": [f.__dict__ for f in self.failed],
            "known_failures": self.known_failures,
            "removed": self.removed,
            "dropped": self.dropped,
            "rechunked": self.rechunked,
            "excluded": dict(sorted(self.excluded.items())),
            "chunks": self.chunks,
            "embedded": self.embedded,
            "keyword_seconds": round(self.keyword_seconds, 3),
            "ocr_pages": self.ocr_pages,
            "missing_roots": self.missing_roots,
            "unfollowed_roots": [r.__dict__ for r in self.unfollowed_roots],
            "notes": self.notes,
            "seconds": round(self.seconds, 3),
            "model_loaded": self.model_loaded,
        }


@dataclass
class Row:
    id: int
    size: int
    mtime: float
    content_hash: str
    chunking: str = ""


@dataclass
class Scan:
    """What the rescan saw: files present, and which stored paths it speaks for."""

    seen: dict[str, Found] = field(default_factory=dict)
    prefixes: list[str] = field(default_factory=list)  # directories rescanned in full
    exact: set[str] = field(default_factory=set)  # single files rescanned
    protected: list[str] = field(default_factory=list)  # unreadable dirs: nothing is deleted
    ignored: int = 0
    outside: set[str] = field(default_factory=set)  # indexed files under no root: named ones

    def covers(self, path: str) -> bool:
        if any(under(path, p) for p in self.protected):
            return False
        return path in self.exact or any(under(path, p) for p in self.prefixes)


def _abs(path: Path | str) -> Path:
    return Path(os.path.abspath(Path(path).expanduser())).resolve()


def load_rows(conn: Connection) -> dict[str, Row]:
    return {r[0]: Row(r[1], r[2], r[3], r[4], r[5]) for r in document_states(conn)}


def scan(
    conn: Connection,
    paths: list[Path] | None,
    rows: dict[str, Row],
    follow_symlinks: bool,
    summary: SyncSummary,
) -> Scan:
    """Walk the remembered roots (paths=None) or the given files and directories."""
    roots = load_roots(conn)
    result = Scan()
    changed = _unfollowed(roots, rows, summary)
    result.protected += [path_text(root) for root in changed]
    if paths is None:
        outer = [r for r in roots if not any(o in r.parents for o in roots)]
        for root in outer:
            if root not in changed:
                _scan_dir(root, root, roots, follow_symlinks, result, summary)
        for path in rows:
            if os.path.isabs(path) and deepest_root(Path(path), roots) is None:
                _scan_file(Path(path), None, rows, result, guard=True)
        return result
    for given in paths:
        plain = Path(os.path.abspath(Path(given).expanduser()))
        if deepest_root(plain, roots) in changed:
            continue  # reported above; never resolved through the link
        path = _abs(given)
        if path != plain and not follow_symlinks and deepest_root(plain, roots) is not None:
            # A symlink inside an added folder: the walk never follows one, so neither does
            # a rescan of it; what the index holds under its own path is gone.
            result.prefixes.append(path_text(plain))
            continue
        root = deepest_root(path, roots)
        prefix = path_text(path) + "/"
        if path.is_dir() or (not path.exists() and any(p.startswith(prefix) for p in rows)):
            if root is None:
                raise SyncError(f"{given} was never added: run `kb add {given}` first")
            _scan_dir(root, path, roots, follow_symlinks, result, summary)
        elif not path.exists() and path_text(path) not in rows and root is None:
            # A deleted file the index knows is a deletion to apply; this is neither.
            raise SyncError(f"{given} does not exist and is not in the index")
        else:
            _scan_file(path, root, rows, result, guard=False)
    return result


def _unfollowed(roots: list[Path], rows: dict[str, Row], summary: SyncSummary) -> set[Path]:
    """Roots that resolve elsewhere now: reported, never walked, and their documents kept
    (a nested one is protected from the rescan of the folder around it)."""
    changed = set()
    for root in roots:
        why = root_change(root)
        if why is None:
            continue
        changed.add(root)
        prefix = path_text(root) + "/"
        kept = sum(1 for path in rows if path.startswith(prefix))
        summary.unfollowed_roots.append(UnfollowedRoot(path_text(root), why, kept))
    return changed


def _scan_dir(
    root: Path,
    start: Path,
    roots: list[Path],
    follow_symlinks: bool,
    result: Scan,
    summary: SyncSummary,
) -> None:
    if not root.is_dir():
        summary.missing_roots.append(str(root))
        return
    result.prefixes.append(str(start))
    if not start.is_dir():
        return  # removed below a root that is there: its documents go
    nested = [r for r in roots if root in r.parents]
    for item in walk_tree(root, start, follow_symlinks=follow_symlinks):
        if isinstance(item, WalkError):
            summary.failed.append(Failure(path_text(item.path), item.reason))
            result.protected.append(path_text(item.path))
            continue
        if nested:
            item.root = deepest_root(item.path, roots) or root
        result.seen[path_text(item.path)] = item


def _scan_file(
    path: Path, root: Path | None, rows: dict[str, Row], result: Scan, guard: bool
) -> None:
    key = path_text(path)
    if (guard and not path.parent.is_dir()) or (root is not None and not root.is_dir()):
        return  # on a drive that is not mounted, say: keep its documents
    result.exact.add(key)
    if root is not None and IgnoreRules(root).ignored_path(path):
        return
    if root is None and key not in rows:
        result.ignored += path.is_file()
        return
    if root is None:
        result.outside.add(key)
    try:
        st = path.stat()
    except OSError:
        return
    if not os.path.isfile(path):
        return
    result.seen[key] = Found(path, root or path.parent, st.st_size, st.st_mtime)


@dataclass
class Plan:
    new: list[Found] = field(default_factory=list)
    changed: list[Found] = field(default_factory=list)
    rechunk: list[Found] = field(default_factory=list)  # unchanged, chunked by an older kb
    vanished: dict[str, Row] = field(default_factory=dict)
    renames: list[tuple[str, Row, Found]] = field(default_factory=list)
    excluded: dict[str, str] = field(default_factory=dict)  # stored path -> why it leaves


def plan(
    rows: dict[str, Row],
    result: Scan,
    summary: SyncSummary,
    include_generated: bool = False,
    chunking: str | None = None,
) -> Plan:
    """What to do with each file: new, changed, re-chunked, excluded, vanished or renamed.
    `chunking` is today's fingerprint: a document chunked otherwise is judged and read again
    (None: never, as the caller cannot say)."""
    from kb_search.formats.registry import UNSUPPORTED, classify
    from kb_search.formats.secrets import is_settings_file

    todo = Plan()
    for key, item in result.seen.items():
        row = rows.get(key)
        same = row is not None and row.size == item.size and row.mtime == item.mtime
        if row is None:
            verdict = classify(item.path, include_generated, root=item.root)
            if verdict.format is None:
                summary.ignored += 1
                count_unsupported(summary, str(item.path), verdict.kind or UNSUPPORTED)
            elif verdict.left_out is not None:
                left_out = summary.left_out
                left_out[verdict.left_out] = left_out.get(verdict.left_out, 0) + 1
            else:
                todo.new.append(item)
        elif chunking is not None and row.chunking != chunking:
            # Indexed by an older kb: today's rules decide first (a named file, under no
            # root, was read by the user's choice and stays).
            verdict = classify(
                item.path, include_generated, named=key in result.outside, root=item.root
            )
            if verdict.left_out is not None:
                todo.excluded[key] = verdict.left_out
            else:
                (todo.rechunk if same else todo.changed).append(item)
        elif same and not is_settings_file(item.path):
            summary.unchanged += 1
        else:
            # A changed file is judged again, as `kb add` judges it: a `.bashrc` that gained
            # a token leaves (a settings file, changed or not: an older kb may have read it).
            verdict = classify(
                item.path, include_generated, named=key in result.outside, root=item.root
            )
            if verdict.left_out is not None:
                todo.excluded[key] = verdict.left_out
            elif same:
                summary.unchanged += 1
            else:
                todo.changed.append(item)
    for path, row in rows.items():
        if path in result.seen or not result.covers(path):
            continue
        if os.path.isfile(path):
            todo.excluded[path] = IGNORED  # still there, but the walk leaves it out now
        else:
            todo.vanished[path] = row
    todo.renames = match_renames(todo.vanished, todo.new)
    for old_path, _, item in todo.renames:
        del todo.vanished[old_path]
        todo.new.remove(item)
    return todo


def match_renames(vanished: dict[str, Row], new: list[Found]) -> list[tuple[str, Row, Found]]:
    """Pair vanished documents with new files of the same content. Only new files whose size
    matches a vanished document's are read; among copies of one text, the one with the same
    extension is paired first. A pair whose extension changed (`notes.rst` -> `notes.md`) is
    a rename too, read again as its new type (`_apply_renames`)."""
    if not vanished or not new:
        return []
    by_size: dict[int, list[tuple[str, Row]]] = {}
    for path, row in vanished.items():
        by_size.setdefault(row.size, []).append((path, row))
    pairs = []
    for item in new:
        options = by_size.get(item.size or 0)
        if not options:
            continue
        try:
            digest = content_hash(read_user_file(item.path))
        except OSError:
            continue
        suffix = item.path.suffix.lower()
        same = [i for i, (_, row) in enumerate(options) if row.content_hash == digest]
        if same:
            index = next((i for i in same if Path(options[i][0]).suffix.lower() == suffix), same[0])
            path, row = options.pop(index)
            pairs.append((path, row, item))
    return pairs


def sync(
    conn: Connection,
    paths: list[Path] | None,
    options: AddOptions,
    vectors: VectorSource | None = None,
    error_log: ErrorLog | None = None,
    progress: Progress | None = None,
    executor: Executor | None = None,
    embed: bool = True,
) -> SyncSummary:
    """Rescan `paths` (files or directories under added roots), or every remembered root:
    the changes written first (keyword-searchable), then, with `embed`, every chunk without a
    vector embedded (`kb watch` embeds between its batches instead).

    Pass a `models.writing.LazyVectors` as `vectors` so that a sync with nothing to embed never
    loads the embedding model.
    """
    summary = SyncSummary()
    with counted_on_stop(conn, summary, vectors):
        _sync(conn, paths, options, summary, vectors, error_log, progress, executor, embed)
    return summary


def _sync(
    conn: Connection,
    paths: list[Path] | None,
    options: AddOptions,
    summary: SyncSummary,
    vectors: VectorSource | None,
    error_log: ErrorLog | None,
    progress: Progress | None,
    executor: Executor | None,
    embed: bool,
) -> None:
    started = time.perf_counter()
    progress = progress or NoProgress()
    log = error_log or ErrorLog(None)
    rows = load_rows(conn)
    result = scan(conn, paths, rows, options.follow_symlinks, summary)
    summary.ignored += result.ignored
    for failure in summary.failed:
        log.write(failure)
    current = chunking_fingerprint(options)
    todo = plan(rows, result, summary, options.include_generated, current)
    todo.changed = _drop_touched(conn, todo.changed, rows, summary, current)
    _forget_vanished(conn, result)
    steps = len(todo.renames) + len(todo.vanished) + len(todo.excluded)
    progress.start(steps + len(todo.changed) + len(todo.new) + len(todo.rechunk))
    left, retitled = _apply_renames(conn, todo.renames, summary, progress)
    _apply_deletes(conn, todo.vanished, summary, progress)
    _apply_exclusions(conn, todo.excluded, rows, summary, progress)
    to_ingest = todo.changed + todo.new + left + todo.rechunk
    if to_ingest:
        counted = retitled | {item.path for item in todo.rechunk}
        try:
            _ingest(conn, to_ingest, options, summary, log, vectors, progress, executor, counted)
        finally:
            summary.renamed += _reread(conn, retitled)
        summary.rechunked += _rechunked(conn, todo.rechunk, current)
    summary.keyword_seconds = time.perf_counter() - started
    _read_scans(conn, options, summary, log, vectors, progress)
    update_copies(conn)
    if embed:
        embed_pending(conn, vectors, progress, summary)
    summary.seconds = time.perf_counter() - started


def _read_scans(
    conn: Connection,
    options: AddOptions,
    summary: SyncSummary,
    log: ErrorLog,
    vectors: VectorSource | None,
    progress: Progress,
) -> None:
    """The OCR phase (also for pages an earlier, interrupted run left queued)."""
    read = AddSummary()
    read_queued_scans(conn, options, read, log, vectors, progress)
    summary.added += read.added
    summary.chunks += read.chunks
    summary.failed.extend(read.failed)
    summary.ocr_pages += read.ocr_pages


def _forget_vanished(conn: Connection, result: Scan) -> None:
    """Files kb remembered as skipped that the rescan proves gone: forget them."""
    gone = [path for path in load_skipped(conn) if path not in result.seen and result.covers(path)]
    forget(conn, gone)


def _drop_touched(
    conn: Connection,
    changed: list[Found],
    rows: dict[str, Row],
    summary: SyncSummary,
    chunking: str,
) -> list[Found]:
    """Files whose mtime moved but whose bytes did not (a checkout, `touch`): record the new
    mtime and leave them out, so that the model is not even loaded for them. One chunked by
    an older kb stays in: its bytes are the same, its chunks are not today's."""
    still = []
    for item in changed:
        row = rows[path_text(item.path)]
        if item.size == row.size and row.chunking == chunking:
            try:
                same = content_hash(read_user_file(item.path)) == row.content_hash
            except OSError:
                same = False
            if same:
                touch_document(conn, row.id, row.size, item.mtime or 0.0)
                summary.unchanged += 1
                continue
        still.append(item)
    return still


def _apply_renames(
    conn: Connection,
    renames: Iterable[tuple[str, Row, Found]],
    summary: SyncSummary,
    progress: Progress,
) -> tuple[list[Found], set[Path]]:
    """Move documents in place; returns the files that must be ingested after all (those
    another writer took, those whose title was their old file name and those whose extension
    changed) and the paths of the latter two: renamed once read again (`_reread`), never
    updated; one that then fails or is empty is counted so, its document removed (dropped),
    as an edit that leaves a file unreadable is."""
    left = []
    retitled = set()
    for old_path, row, item in renames:
        moved = move_document(
            conn,
            row.id,
            old_path,
            path_text(item.path),
            rel_path_for(item.path, item.root),
            item.size,
            item.mtime,
            reparse=Path(old_path).suffix.lower() != item.path.suffix.lower(),
        )
        if moved == "moved":
            summary.renamed += 1
            progress.advance(1)
        else:
            left.append(item)  # read again: one step of the ingest
        if moved == "retitled":
            retitled.add(item.path)
    return left, retitled


def _reread(conn: Connection, paths: set[Path]) -> int:
    """How many of the renamed files read again are indexed now (a document read whole has
    its content hash again; `move_document` cleared it)."""
    done = 0
    for path in paths:
        state = document_state(conn, path_text(path))
        done += state is not None and bool(state[1])
    return done


def _apply_deletes(
    conn: Connection,
    vanished: dict[str, Row],
    summary: SyncSummary,
    progress: Progress,
) -> None:
    for row in vanished.values():
        if delete_document(conn, row.id):
            summary.deleted += 1
        progress.advance(1)


def _apply_exclusions(
    conn: Connection,
    excluded: dict[str, str],
    rows: dict[str, Row],
    summary: SyncSummary,
    progress: Progress,
) -> None:
    """Documents whose files are left out now (ignored, generated, unsupported): removed,
    counted by reason."""
    documents = {path: (rows[path].id, reason) for path, reason in excluded.items()}
    remove_left_out(conn, documents, summary.excluded, progress.advance)


def _rechunked(conn: Connection, items: list[Found], chunking: str) -> int:
    """How many of the files read again only to re-chunk them are indexed so now (one that
    failed or turned out empty is counted as such)."""
    done = 0
    for item in items:
        state = document_state(conn, path_text(item.path))
        done += state is not None and state[4] == chunking
    return done


def _ingest(
    conn: Connection,
    found: list[Found],
    options: AddOptions,
    summary: SyncSummary,
    log: ErrorLog,
    vectors: VectorSource | None,
    progress: Progress,
    executor: Executor | None = None,
    renamed: set[Path] | frozenset[Path] = frozenset(),
) -> None:
    added = AddSummary()
    try:
        ingest_files(
            conn, found, options, added, log, vectors, progress, executor=executor, renamed=renamed
        )
    finally:  # also what an interrupted run did
        _count_in(summary, added)


def _count_in(summary: SyncSummary, added: AddSummary) -> None:
    summary.added += added.added
    summary.updated += added.updated
    summary.rechunked += added.rechunked  # touched as well: new mtime, same bytes
    summary.unchanged += added.skipped  # touched: new mtime, same content
    summary.known_failures += added.known_failures
    summary.removed += added.removed
    summary.dropped += added.dropped
    summary.ignored += added.empty
    summary.empty += added.empty
    summary.chunks += added.chunks
    summary.embedded += added.embedded
    summary.failed.extend(added.failed)
