"""Random sequences of file operations (write, modify, copy, rename, delete) and kb commands
(add a folder or a file, sync, remove, reindex) against a model of what the index must hold:
after every step the documents are exactly the ones the model says, with the content the last
add/sync saw; at the end the index matches a clean index of the same files chunk for chunk
(titles, hashes, vectors) and the database passes its consistency checks."""

from __future__ import annotations

import itertools
import shutil
import tempfile
from pathlib import Path

from fuzz_kb import make_kb
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kb_search.doctor import storage_checks
from kb_search.store.documents import content_hash
from kb_testing import db_signature

NAMES = ["a.md", "b.md", "c.txt", "sub/d.md", "sub/e.txt", "sub/ü ñ.txt", "sub/deep/f.md"]
FOLDER = "docs"
CONSISTENCY = {"sqlite", "schema", "integrity_check", "fts_in_sync", "chunk_counts",
               "vectors_in_sync"}  # fmt: skip
VOCABULARY = ["backup", "rsync", "kayak", "harbour", "lantern", "quartz", "meadow", "vector"]
_markers = itertools.count()

names = st.sampled_from(NAMES)


@st.composite
def contents(draw) -> str:
    """A small note; a unique marker word keeps two writes apart unless copied."""
    title = draw(st.sampled_from(["", "# Title one\n\n", "# Другой заголовок\n\n", "# T\n\n"]))
    body = " ".join(draw(st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=40)))
    return f"{title}Marker m{next(_markers)} {body}\n"


class IndexOperations(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="kb-fuzz-ops-"))
        self.folder = self.root / FOLDER
        self.folder.mkdir()
        self.kb = make_kb(self.root)
        self.disk: dict[str, str] = {}  # name -> text on disk
        self.indexed: dict[str, str] = {}  # name -> text the index must hold
        self.removed: set[str] = set()  # removed with `kb remove`: left out until added by name

    # ---- files ------------------------------------------------------------------------------

    def _write(self, name: str, text: str) -> None:
        path = self.folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        self.disk[name] = text

    @initialize(files=st.dictionaries(names, contents(), min_size=1, max_size=4))
    def start(self, files: dict[str, str]) -> None:
        for name, text in files.items():
            self._write(name, text)
        self.kb.add([self.folder])
        self.indexed = dict(self.disk)

    @rule(name=names, text=contents())
    def write(self, name: str, text: str) -> None:
        self._write(name, text)

    @precondition(lambda self: self.disk)
    @rule(data=st.data())
    def modify_same_size(self, data) -> None:
        """An edit that keeps the size (one word swapped for another of the same length)."""
        name = data.draw(st.sampled_from(sorted(self.disk)))
        text = self.disk[name]
        swapped = text.replace("rsync", "kayak", 1) if "rsync" in text else text + "x"
        self._write(name, swapped)

    @precondition(lambda self: self.disk)
    @rule(data=st.data(), target_name=names)
    def copy(self, data, target_name: str) -> None:
        source = data.draw(st.sampled_from(sorted(self.disk)))
        self._write(target_name, self.disk[source])

    @precondition(lambda self: self.disk)
    @rule(data=st.data(), target_name=names)
    def rename(self, data, target_name: str) -> None:
        source = data.draw(st.sampled_from(sorted(self.disk)))
        if source == target_name:
            return
        target = self.folder / target_name
        target.parent.mkdir(parents=True, exist_ok=True)
        (self.folder / source).rename(target)
        self.disk[target_name] = self.disk.pop(source)

    @precondition(lambda self: self.disk)
    @rule(data=st.data())
    def delete(self, data) -> None:
        name = data.draw(st.sampled_from(sorted(self.disk)))
        (self.folder / name).unlink()
        del self.disk[name]

    # ---- kb ---------------------------------------------------------------------------------

    @rule()
    def sync(self) -> None:
        summary = self.kb.sync()
        assert not summary.failed, summary.failed
        self.removed &= set(self.disk)  # a removed file that is gone is forgotten
        self.indexed = {n: t for n, t in self.disk.items() if n not in self.removed}

    @rule()
    def add_folder(self) -> None:
        summary = self.kb.add([self.folder])
        assert not summary.failed, summary.failed
        # `kb add` adds and updates; documents of files that are gone wait for `kb sync`.
        self.indexed.update({n: t for n, t in self.disk.items() if n not in self.removed})

    @precondition(lambda self: self.disk)
    @rule(data=st.data())
    def add_file(self, data) -> None:
        name = data.draw(st.sampled_from(sorted(self.disk)))
        summary = self.kb.add([self.folder / name])
        assert not summary.failed, summary.failed
        self.removed.discard(name)
        self.indexed[name] = self.disk[name]

    @precondition(lambda self: self.indexed)
    @rule(data=st.data())
    def remove(self, data) -> None:
        name = data.draw(st.sampled_from(sorted(self.indexed)))
        ref = str(self.folder / name) if data.draw(st.booleans()) else f"{FOLDER}/{name}"
        assert self.kb.remove([ref]).removed, ref
        del self.indexed[name]
        self.removed.add(name)

    @rule(full=st.booleans())
    def reindex(self, full: bool) -> None:
        self.kb.reindex(full=full)

    # ---- what must hold ---------------------------------------------------------------------

    @invariant()
    def index_holds_what_the_model_says(self) -> None:
        rows = self.kb.reader().execute("SELECT rel_path, content_hash FROM documents")
        got = {rel: digest for rel, digest in rows}
        want = {f"{FOLDER}/{n}": content_hash(t.encode()) for n, t in self.indexed.items()}
        assert got == want

    def teardown(self) -> None:
        try:
            self.kb.sync()
            self.indexed = {n: t for n, t in self.disk.items() if n not in self.removed}
            self.index_holds_what_the_model_says()
            checks = {c.name: c for c in storage_checks(self.kb.writer())}
            bad = [f"{n}: {checks[n].detail}" for n in CONSISTENCY if not checks[n].ok]
            assert not bad, bad
            self._compare_with_a_clean_index()
        finally:
            self.kb.close()
            shutil.rmtree(self.root, ignore_errors=True)

    def _compare_with_a_clean_index(self) -> None:
        clean_root = self.root / "clean"
        clean_root.mkdir()
        with make_kb(clean_root) as clean:
            if self.disk:
                clean.add([self.folder])
            clean_db = clean.db_path
        if not self.disk:
            return
        got_docs, got_chunks = db_signature(self.kb.db_path)
        want_docs, want_chunks = db_signature(clean_db)
        keep = {f"{FOLDER}/{n}" for n in self.indexed}
        want_docs = {k: v for k, v in want_docs.items() if k in keep}
        want_chunks = {k: v for k, v in want_chunks.items() if k[0] in keep}
        assert got_docs == want_docs
        assert set(got_chunks) == set(want_chunks)
        for key, (*fields, vector) in got_chunks.items():
            *want_fields, want_vector = want_chunks[key]
            assert fields == want_fields, key
            assert vector is not None and want_vector is not None, key
            assert (vector == want_vector).all(), key


IndexOperations.TestCase.settings = settings(
    settings.default,
    max_examples=max(5, settings.default.max_examples // 3),
    stateful_step_count=25,
)
test_operation_sequences_keep_the_index_true = IndexOperations.TestCase
