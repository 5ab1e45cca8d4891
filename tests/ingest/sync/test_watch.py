"""`kb watch`: the real watcher (watchfiles) over real files, in a thread of this process;
after each change the index must follow within FOLLOW_S (the DB or the reported batches are
polled, no fixed sleeps but where a test shows that nothing more happens)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kb_search.config import load_config
from kb_search.ingest.watch import WatchBatch
from kb_search.knowledge_base import KnowledgeBase
from kb_search.profile import Profile
from kb_search.store import db
from kb_testing import HashEmbedder

FOLLOW_S = 2.0  # issue 13: the index follows each change within 2 s


def make_kb(data_dir: Path, cwd: Path) -> KnowledgeBase:
    config = load_config(env={"KB_DATA_DIR": str(data_dir), "KB_WORKERS": "0"})
    return KnowledgeBase(config, embedder=HashEmbedder(), cwd=cwd, profile=Profile.SERVE)


class Watcher:
    """`KnowledgeBase.watch` on a thread (which owns its writer), as `kb serve --watch` runs
    it; batches are collected, `docs()` reads the DB from this thread."""

    def __init__(self, data_dir: Path, cwd: Path, paths: list[Path] | None = None):
        self.data_dir, self.cwd, self.paths = data_dir, cwd, paths
        self.batches: list[WatchBatch] = []
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            with make_kb(self.data_dir, self.cwd) as kb:
                kb.watch(self.paths, self.batches.append, self.stop, on_ready=self._ready)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc
            self.ready.set()

    def _ready(self, plan: object) -> None:
        self.plan = plan
        self.ready.set()

    def start(self) -> Watcher:
        self.thread.start()
        assert self.ready.wait(30), "the watcher did not start"
        assert self.error is None, self.error
        return self

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        assert not self.thread.is_alive(), "the watcher did not stop"
        assert self.error is None, self.error

    def docs(self) -> dict[str, tuple[int, str]]:
        """rel_path -> (document id, first chunk's text)."""
        conn = db.connect(self.data_dir / "kb.db", readonly=True)
        try:
            rows = conn.execute(
                "SELECT d.rel_path, d.id, c.text FROM documents d"
                " JOIN chunks c ON c.document_id = d.id AND c.chunk_index = 0"
            )
            return {rel: (doc_id, text) for rel, doc_id, text in rows}
        finally:
            conn.close()

    def vectors(self) -> int:
        conn = db.connect(self.data_dir / "kb.db", readonly=True)
        try:
            (table,) = conn.execute("SELECT table_name FROM vector_tables").fetchone()
            return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        finally:
            conn.close()

    def changed_batches(self) -> list[WatchBatch]:
        return [b for b in self.batches if not b.initial and b.changed]


def reported(watcher: Watcher, change: str) -> int:
    """How many changes of a kind (a SyncSummary count) the watcher has reported. A batch is
    reported after its commit: the DB can show a change whose batch is not in the list yet."""
    return sum(getattr(b.summary, change) for b in watcher.changed_batches())


def follows(condition: Callable[[], bool], seconds: float = FOLLOW_S) -> float:
    """Poll until `condition()` holds; the seconds it took. Fails after `seconds`."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < seconds, f"the index did not follow in {seconds} s"
        time.sleep(0.02)
    return time.monotonic() - started


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    (root / "projects").mkdir(parents=True)
    (root / "alpha.md").write_text("# Alpha\n\nThe alpha note talks about kayaks.\n")
    (root / "projects" / "plan.md").write_text("# Plan\n\nShip the watcher on Friday.\n")
    with make_kb(tmp_path / "data", tmp_path) as kb:
        assert kb.add([root]).added == 2
    return root


@pytest.fixture
def watcher(notes: Path, tmp_path: Path):
    running = Watcher(tmp_path / "data", tmp_path).start()
    yield running
    running.close()


def test_edit_create_rename_delete_each_follow_within_2s(watcher: Watcher, notes: Path):
    first_id = watcher.docs()["notes/alpha.md"][0]
    (notes / "alpha.md").write_text("# Alpha\n\nNow the alpha note is about canoes.\n")
    follows(lambda: "canoes" in watcher.docs()["notes/alpha.md"][1])
    assert watcher.docs()["notes/alpha.md"][0] == first_id

    (notes / "beta.md").write_text("# Beta\n\nA new note on sailing.\n")
    follows(lambda: "notes/beta.md" in watcher.docs())

    beta_id = watcher.docs()["notes/beta.md"][0]
    vectors = watcher.vectors()
    (notes / "beta.md").rename(notes / "projects" / "gamma.md")
    follows(lambda: reported(watcher, "renamed") == 1)
    docs = watcher.docs()
    assert "notes/beta.md" not in docs
    assert docs["notes/projects/gamma.md"][0] == beta_id  # moved, not re-ingested
    assert watcher.vectors() == vectors
    assert reported(watcher, "added") == 1  # beta, once

    (notes / "projects" / "gamma.md").unlink()
    follows(lambda: reported(watcher, "deleted") == 1)
    assert set(watcher.docs()) == {"notes/alpha.md", "notes/projects/plan.md"}
    assert not any(b.summary.failed for b in watcher.batches)


def test_atomic_saves_update_in_place_and_leave_no_temporary_files(
    watcher: Watcher, notes: Path
):
    target = notes / "alpha.md"
    first_id = watcher.docs()["notes/alpha.md"][0]
    # write to a temporary file, rename it over the target (most editors, `os.replace`)
    temporary = notes / ".alpha.md.tmp1234"
    temporary.write_text("# Alpha\n\nSaved atomically: herons.\n")
    os.replace(temporary, target)
    follows(lambda: "herons" in watcher.docs()["notes/alpha.md"][1])
    # vim: rename the original to a backup, write a new file, delete the backup
    target.rename(notes / "alpha.md~")
    target.write_text("# Alpha\n\nSaved the vim way: egrets.\n")
    (notes / "alpha.md~").unlink()
    follows(lambda: "egrets" in watcher.docs()["notes/alpha.md"][1])
    # a file that is gone before it can be read is neither indexed nor a failure
    for i in range(20):
        flash = notes / f"flash{i}.md"
        flash.write_text("# Flash\n\nhere and gone\n")
        flash.unlink()
    (notes / "after.md").write_text("# After\n\nthe flashes are over\n")
    follows(lambda: "notes/after.md" in watcher.docs())
    docs = watcher.docs()
    assert set(docs) == {"notes/alpha.md", "notes/projects/plan.md", "notes/after.md"}
    assert docs["notes/alpha.md"][0] == first_id
    assert not any(b.summary.failed for b in watcher.batches)


def test_a_renamed_folder_moves_its_documents_and_stays_watched(watcher: Watcher, notes: Path):
    plan_id = watcher.docs()["notes/projects/plan.md"][0]
    (notes / "projects").rename(notes / "work")
    follows(lambda: "notes/work/plan.md" in watcher.docs())
    assert watcher.docs()["notes/work/plan.md"][0] == plan_id
    assert "notes/projects/plan.md" not in watcher.docs()
    # events inside the renamed folder carry its new path
    (notes / "work" / "plan.md").write_text("# Plan\n\nShip it on Monday instead.\n")
    follows(lambda: "Monday" in watcher.docs()["notes/work/plan.md"][1])
    (notes / "work" / "new").mkdir()
    (notes / "work" / "new" / "deep.md").write_text("# Deep\n\nin a new folder\n")
    follows(lambda: "notes/work/new/deep.md" in watcher.docs())


def test_a_burst_of_50_files_is_debounced_into_few_batches(watcher: Watcher, notes: Path):
    burst = notes / "burst"
    burst.mkdir()
    for i in range(50):
        (burst / f"note{i:02}.md").write_text(f"# Note {i}\n\nburst word{i}\n")
    follows(lambda: reported(watcher, "added") >= 50, seconds=10)
    assert reported(watcher, "added") == 50 and len(watcher.docs()) == 52
    batches = watcher.changed_batches()
    assert len(batches) <= 5, [b.summary.added for b in batches]


def test_ignored_files_and_its_own_writes_start_no_batch(tmp_path: Path, notes: Path):
    # the data dir inside the watched folder, under a name sync does not ignore by itself
    data = notes / "kbdata"
    with make_kb(data, tmp_path) as kb:
        kb.add([notes])
    watcher = Watcher(data, tmp_path).start()
    try:
        (notes / "hidden").mkdir()
        (notes / ".kbignore").write_text("hidden/\n*.log\n")
        (notes / ".cache").mkdir()
        (notes / ".cache" / "x.md").write_text("# Cached\n")
        (notes / "hidden" / "secret.md").write_text("# Secret\n")
        (notes / "run.log").write_text("a log line\n")
        (notes / "seen.md").write_text("# Seen\n\nthis one counts\n")
        follows(lambda: reported(watcher, "added") == 1)
        assert "notes/seen.md" in watcher.docs()
        time.sleep(0.6)  # long enough for a loop on the DB's own writes to show
        settled = len(watcher.batches)
        outside = db.connect(data / "kb.db")  # writes the main file, as a checkpoint does
        outside.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        outside.close()
        (data / "stray.md").write_text("# Stray\n\nin the data dir\n")
        (notes / "alpha.md").write_text("# Alpha\n\nedited once: plovers\n")
        follows(lambda: reported(watcher, "updated") == 1)
        assert "plovers" in watcher.docs()["notes/alpha.md"][1]
        time.sleep(0.6)
        assert len(watcher.batches) == settled + 1, [b.paths for b in watcher.batches]
        assert set(watcher.docs()) == {"notes/alpha.md", "notes/projects/plan.md", "notes/seen.md"}
        # a changed .kbignore rescans its folder: what it now ignores leaves the index
        (notes / ".kbignore").write_text("hidden/\n*.log\nprojects/\n")
        follows(lambda: "notes/projects/plan.md" not in watcher.docs())
        follows(lambda: any(b.summary.excluded for b in watcher.batches))
        lines = [b.line() for b in watcher.batches if b.summary.excluded]
        said = "1 document left the index, their files left out now: 1 ignored"
        assert said in lines[0], lines  # as `kb sync` says it
    finally:
        watcher.close()
    for batch in watcher.batches:
        assert not any("kbdata" in p for p in batch.paths), batch.paths


def test_files_gone_before_the_read_are_not_failures(tmp_path: Path):
    from kb_search.ingest.summary import Failure
    from kb_search.ingest.sync import SyncSummary
    from kb_search.ingest.watch import _without_vanished

    kept = tmp_path / "broken.pdf"
    kept.write_bytes(b"%PDF-1.7 not really")
    gone = str(tmp_path / ".note.md.swx")
    summary = SyncSummary(failed=[Failure(str(kept), "bad PDF"), Failure(gone, "cannot stat")])
    assert _without_vanished(summary) == [gone]
    assert [f.path for f in summary.failed] == [str(kept)]


def test_watching_one_folder_leaves_the_rest_alone(tmp_path: Path, notes: Path):
    watcher = Watcher(tmp_path / "data", tmp_path, paths=[notes / "projects"]).start()
    try:
        (notes / "elsewhere.md").write_text("# Elsewhere\n\nnot watched\n")
        (notes / "projects" / "next.md").write_text("# Next\n\nwatched\n")
        follows(lambda: "notes/projects/next.md" in watcher.docs())
        assert "notes/elsewhere.md" not in watcher.docs()
    finally:
        watcher.close()


def test_changes_made_while_not_watching_are_synced_first(tmp_path: Path, notes: Path):
    (notes / "alpha.md").unlink()
    (notes / "offline.md").write_text("# Offline\n\nwritten while nothing watched\n")
    watcher = Watcher(tmp_path / "data", tmp_path).start()
    try:
        initial = watcher.batches[0]
        assert initial.initial
        assert (initial.summary.added, initial.summary.deleted) == (1, 1)
        assert set(watcher.docs()) == {"notes/offline.md", "notes/projects/plan.md"}
    finally:
        watcher.close()


def test_nothing_to_watch_is_a_user_error(tmp_path: Path):
    from kb_search.errors import UserInputError

    with make_kb(tmp_path / "data", tmp_path) as kb:
        kb.writer(create=True)
        with pytest.raises(UserInputError, match="nothing to watch"):
            kb.watch(None, lambda batch: None, threading.Event())
        with pytest.raises(UserInputError, match="not under a folder added"):
            kb.watch([tmp_path], lambda batch: None, threading.Event())


def test_only_a_small_save_of_plain_text_is_parsed_in_process(tmp_path: Path):
    from kb_search.ingest.watch import LIGHT_BYTES, light_batch

    note, code, pdf, big = (tmp_path / n for n in ("a.md", "b.py", "c.pdf", "d.txt"))
    note.write_text("# A\n")
    code.write_text("def f():\n    return 1\n")
    pdf.write_bytes(b"%PDF-1.7\n")
    big.write_text("x" * (LIGHT_BYTES + 1))
    assert light_batch([note, code, tmp_path / "deleted.md"])
    assert not light_batch([note, pdf])  # parser processes: time and memory limits
    assert not light_batch([big])
    assert not light_batch([tmp_path])  # a folder may hold anything
    assert not light_batch([note] * 17)


def test_a_batch_whose_sync_fails_is_tried_again(tmp_path: Path, notes: Path, monkeypatch):
    from kb_search.errors import DBError

    calls: list[object] = []
    real_sync = KnowledgeBase.sync

    def sync_failing_once(self, paths=None, **options):
        calls.append(paths)
        if len(calls) == 2:  # the first batch after the initial sync
            raise DBError("database is locked")
        return real_sync(self, paths, **options)

    monkeypatch.setattr(KnowledgeBase, "sync", sync_failing_once)
    watcher = Watcher(tmp_path / "data", tmp_path).start()
    try:
        (notes / "late.md").write_text("# Late\n\nsynced on the second try\n")
        follows(lambda: "notes/late.md" in watcher.docs(), seconds=FOLLOW_S + 2)
    finally:
        watcher.close()
    failed = [b for b in watcher.batches if b.summary.failed]
    assert len(failed) == 1
    assert "database is locked; trying again in 2 s" in failed[0].summary.failed[0].reason
    assert calls[1] == calls[2]  # the same paths, again


def test_files_added_by_name_are_synced_first_but_not_followed(tmp_path: Path, notes: Path):
    from kb_search.ingest.watch import describe

    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "todo.md").write_text("# Todo\n\nbuy milk\n")
    with make_kb(tmp_path / "data", tmp_path) as kb:
        kb.add([loose / "todo.md"])
    (loose / "todo.md").write_text("# Todo\n\nbuy oat milk\n")
    watcher = Watcher(tmp_path / "data", tmp_path).start()
    try:
        assert "oat" in watcher.docs()["loose/todo.md"][1]  # the first, full sync
        assert describe(watcher.plan).endswith(
            "1 file added by name outside the folders not followed (`kb sync` rescans them)"
        )
        assert watcher.plan.directories == [notes]  # not its folder, which may be huge
    finally:
        watcher.close()


def test_batches_write_text_only_and_idle_ticks_embed_the_rest(watcher: Watcher, notes: Path):
    """A batch's sync writes its files' text (searchable at once) and embeds nothing itself:
    chunks get their vectors a few at a time while no batch waits, so a later save is never
    held behind an embedding phase."""
    burst = notes / "many"
    burst.mkdir()
    for i in range(40):
        (burst / f"n{i:02}.md").write_text(f"# N {i}\n\nmany word{i}\n")
    follows(lambda: reported(watcher, "added") >= 40, seconds=10)
    assert all(b.summary.embedded == 0 for b in watcher.changed_batches())
    conn = db.connect(watcher.data_dir / "kb.db", readonly=True)
    try:
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    finally:
        conn.close()
    follows(lambda: watcher.vectors() == chunks, seconds=20)


def test_watching_drops_a_dotfile_with_a_secret_an_older_kb_indexed(
    tmp_path: Path, notes: Path, monkeypatch
):
    """The secrets rule reaches documents already stored: the first batch (a full sync)
    takes out a `.bashrc` an older kb indexed, token and all, and says why."""
    (notes / ".bashrc").write_text("export GITHUB_TOKEN=ghp_ZyXw0123456789ZyXw0123456789zyxwvu\n")
    monkeypatch.setattr("kb_search.formats.secrets.holds_secret", lambda text: False)
    with make_kb(tmp_path / "data", tmp_path) as kb:
        assert kb.add([notes]).added == 1  # as the kb before the rule read it
    monkeypatch.undo()
    watcher = Watcher(tmp_path / "data", tmp_path).start()
    try:
        initial = watcher.batches[0]
        assert initial.summary.excluded == {"unsupported": 1}
        assert "notes/.bashrc" not in watcher.docs()
    finally:
        watcher.close()
