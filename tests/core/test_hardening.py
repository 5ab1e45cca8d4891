"""Every input answered, every fault survived (the numbered items of the hardening issue)."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from kb_search.cli import cli
from kb_search.config import load_config
from kb_search.errors import DBError, SearchError, UserInputError
from kb_search.ingest.summary import ErrorLog, Failure
from kb_search.knowledge_base import KnowledgeBase
from kb_search.sanitize import log_field, parse_id, path_text
from kb_search.store import db
from kb_testing import HashEmbedder


def make_kb(root: Path) -> KnowledgeBase:
    config = load_config(env={"KB_DATA_DIR": str(root / "data"), "KB_WORKERS": "0"})
    return KnowledgeBase(config, embedder=HashEmbedder(), cwd=root)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good1.md").write_text("# One\n\nGit install notes and more words here.\n")
    (docs / "good2.md").write_text("# Two\n\nBackups run nightly with rsync and cron.\n")
    return docs


# 1. A file name that is not valid UTF-8 -------------------------------------------------------


def test_a_non_utf8_file_name_is_indexed_with_the_rest(folder, tmp_path):
    raw = os.path.join(os.fsencode(folder), b"caf\xe9.md")
    with open(raw, "wb") as handle:
        handle.write(b"# Cafe\n\nEspresso and croissants every morning.\n")
    with make_kb(tmp_path) as kb:
        summary = kb.add([folder])
        assert summary.added == 3 and not summary.failed
        docs = {d.rel_path for d in kb.reads.documents()}
        assert "docs/caf\\xe9.md" in docs
        hit = kb.search("espresso croissants", kb.search_options(mode="lexical")).results[0]
        assert hit.citation == hit.source.path + "#L1-L3"
        assert hit.source.path.endswith("docs/caf\\xe9.md")
        json.dumps(hit.to_dict(), ensure_ascii=False).encode("utf-8")  # valid UTF-8
        assert kb.add([folder]).skipped == 3
        assert kb.sync().changed == 0


def test_path_text_is_stable_and_valid():
    name = os.fsdecode(b"/x/caf\xe9.md")
    assert path_text(name) == "/x/caf\\xe9.md" == path_text(Path(name))
    assert path_text("/x/café.md") == "/x/café.md"


# 2. Path globs in linear time ------------------------------------------------------------------


def test_a_pathological_glob_answers_at_once(folder, tmp_path):
    with make_kb(tmp_path) as kb:
        kb.add([folder])
        for stars in (12, 20, 200):
            t0 = time.perf_counter()
            kb.search(f"git path:{'*' * stars}#", kb.search_options(mode="lexical"))
            kb.search("git", kb.search_options(mode="lexical", filters=_paths("*a" * stars)))
            assert time.perf_counter() - t0 < 1.0, stars
        with pytest.raises(SearchError, match=r"bad path pattern '\[z-a\]'"):
            kb.search("git path:[z-a]", kb.search_options(mode="lexical"))


def _paths(pattern: str):
    from kb_search.search.query import Filters

    return Filters(paths=[pattern])


def test_globs_keep_their_meaning():
    from kb_search.store.globs import path_matches

    rel, abs_ = "notes/docs/a.md", "/home/u/notes/docs/a.md"
    assert path_matches("*.md", rel, abs_) and not path_matches("*.txt", rel, abs_)
    assert path_matches("notes/**", rel, abs_) and path_matches("docs/*.md", rel, abs_)
    assert not path_matches("notes/*.md", rel, abs_)  # * stays in one folder
    assert path_matches("/home/u/**/a.md", rel, abs_) and path_matches("[ab].md", rel, abs_)
    assert not path_matches("[!a].md", rel, abs_)


# 3. Lone surrogates and bad bytes in queries ----------------------------------------------------


def test_queries_with_lone_surrogates_answer_valid_text(folder, tmp_path):
    with make_kb(tmp_path) as kb:
        kb.add([folder])
        for query in ("git \udcff", "\ud800 git", "\udcffgit\udcfe install"):
            answer = _as_utf8_json(kb.search(query, kb.search_options()))
            assert answer["query"] == re.sub("[\ud800-\udfff]", "\ufffd", query)
            assert answer["results"][0]["citation"].startswith(str(folder / "good1.md") + "#")
        # An unknown tag is an error (naming the near ones); its message is valid text too.
        with pytest.raises(SearchError, match="no tag '\ufffd' in the index") as error:
            kb.search("tag:\udcff git", kb.search_options())
        str(error.value).encode("utf-8")


def _as_utf8_json(response) -> dict:
    """The response as JSON bytes (raises on a lone surrogate) read back."""
    return json.loads(json.dumps(response.to_dict(), ensure_ascii=False).encode("utf-8"))


def test_cli_json_output_is_valid_utf8_for_a_bad_byte_query(environment, folder):
    runner = CliRunner()
    runner.invoke(cli, ["add", str(folder)], obj=environment, catch_exceptions=False)
    out = runner.invoke(cli, ["search", os.fsdecode(b"git \xff"), "--format", "json"],
                        obj=environment, catch_exceptions=False)  # fmt: skip
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout_bytes.decode("utf-8"))
    assert data["query"] == "git \ufffd"


# 4. A missing vector table can be repaired ------------------------------------------------------


def test_add_and_remove_work_after_the_vector_table_was_dropped(folder, tmp_path):
    with make_kb(tmp_path) as kb:
        kb.add([folder])
        conn = kb.writer()
        table = conn.execute("SELECT table_name FROM vector_tables").fetchone()[0]
        conn.execute(f"DROP TABLE {table}")
        assert kb.remove([str(kb.reads.documents()[0].document_id)]).removed
        (folder / "good3.md").write_text("# Three\n\nA third note about kayaks.\n")
        summary = kb.add([folder])  # the new one; the removed one stays out (kb remove)
        assert (summary.added, summary.removed) == (1, 1)
        kb.reindex()
        assert all(c.ok for c in kb.doctor())


# 5 and 6. The error log never stops a batch, and one failure is one line -----------------------


def test_an_unwritable_error_log_does_not_stop_the_batch(folder, tmp_path):
    (folder / "bad.md").write_bytes(b"\x00\x01\x02 binary")
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    log = ErrorLog(blocked / "ingest-errors.log")
    log.write(Failure("a", "b"))
    assert log.problem and "cannot write" in log.problem
    config = load_config(env={"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"})
    with KnowledgeBase(config, embedder=HashEmbedder(), cwd=tmp_path) as kb:
        kb.config.data_dir.mkdir(parents=True)
        (kb.error_log).mkdir()  # a directory where the log file should be
        summary = kb.add([folder])
        assert summary.added == 2 and len(summary.failed) == 1
        assert any("failures are in this summary only" in note for note in summary.notes)


def test_log_entries_are_one_line_whatever_the_name(tmp_path):
    log = ErrorLog(tmp_path / "errors.log")
    log.write(Failure("/x/evil\n2026-01-01T00:00:00Z\t/etc/passwd\tforged.md", "bad\nreason"))
    lines = (tmp_path / "errors.log").read_text().splitlines()
    assert len(lines) == 1 and lines[0].count("\t") == 2
    assert log_field("a\\b\x07") == "a\\\\b\\x07"


# 7. Ids and bad values are user errors in our words ---------------------------------------------


@pytest.mark.parametrize("bad", ["99999999999999999999", "9" * 5000, "²", "١", "-1", "1e3"])
def test_ids_are_ascii_numbers_within_sqlite_range(bad):
    with pytest.raises(UserInputError):
        parse_id(bad, "document id")
    assert parse_id(" 42 ", "document id") == 42


def test_cli_user_errors_are_one_line(environment, folder):
    runner = CliRunner()

    def kb(*args):
        return runner.invoke(cli, list(args), obj=environment, catch_exceptions=False)

    kb("add", str(folder))
    huge = "99999999999999999999"
    for args in (["chunk", huge], ["chunk", "١"], ["show", huge], ["similar", huge],
                 ["tag", huge, "x"], ["remove", huge], ["similar", huge, "--chunk"]):  # fmt: skip
        out = kb(*args)
        assert out.exit_code == 1, (args, out.output)
        assert out.stderr.startswith("Error: ") and "internal error" not in out.stderr, args
        assert len(out.stderr.strip().splitlines()) == 1
    assert kb("list", "--limit", huge).exit_code == 0
    assert kb("search", "git after:0001-01-01", "--format", "json").exit_code == 0
    out = kb("search", "git path:[z-a]")
    assert out.exit_code == 1 and "bad path pattern" in out.stderr


# 8. Foreign and empty files, retitled renames, UTF-16 without a BOM ------------------------------


def test_foreign_or_empty_files_are_refused_as_a_database(tmp_path):
    import sqlite3

    foreign = tmp_path / "app.db"
    other = sqlite3.connect(foreign)
    other.execute("CREATE TABLE invoices(id INTEGER)")
    other.commit()
    other.close()
    with pytest.raises(DBError, match="not a kb database"):
        db.connect(foreign)
    assert [r[0] for r in sqlite3.connect(foreign).execute("SELECT name FROM sqlite_master")] == [
        "invoices"
    ]
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    with pytest.raises(DBError, match="empty file"):
        db.connect(empty, create=True)
    db.connect(empty, create=True, adopt_empty=True).close()  # kb init may adopt it


def test_a_rename_that_changes_the_title_matches_a_clean_ingest(folder, tmp_path):
    (folder / "plain.py").write_text("def sail():\n    return 'boats'\n")
    with make_kb(tmp_path) as kb:
        kb.add([folder])
        assert kb.reads.document("docs/plain.py").title == "plain.py"
        (folder / "plain.py").rename(folder / "voyages.py")
        summary = kb.sync()
        assert summary.renamed == 1
        doc = kb.reads.document("docs/voyages.py")
        assert doc.title == "voyages.py"
    clean_root = tmp_path / "clean"
    clean_root.mkdir()
    with make_kb(clean_root) as clean:
        clean.add([folder])
        fresh = clean.reads.document(str(folder / "voyages.py"))
    with make_kb(tmp_path) as kb:
        conn = kb.reader()
        hashes = [r[0] for r in conn.execute(
            "SELECT content_hash FROM chunks WHERE document_id = ? ORDER BY chunk_index",
            (doc.document_id,))]  # fmt: skip
    with make_kb(clean_root) as clean:
        conn = clean.reader()
        want = [r[0] for r in conn.execute(
            "SELECT content_hash FROM chunks WHERE document_id = ? ORDER BY chunk_index",
            (fresh.document_id,))]  # fmt: skip
    assert hashes == want


def test_utf16_text_without_a_bom_is_read(tmp_path):
    from kb_search.ingest.parse import parse_file
    from kb_search.parsed import ChunkSettings

    path = tmp_path / "notes.txt"
    path.write_bytes("Meeting notes about the budget for next year.\n".encode("utf-16-le"))
    assert "budget" in parse_file(path, ChunkSettings()).chunks[0].text


# Read-only databases and a full disk ----------------------------------------------------------


def test_a_read_only_database_reads_and_refuses_writes_truthfully(folder, tmp_path, monkeypatch):
    with make_kb(tmp_path) as kb:
        kb.add([folder])
        db_path = kb.db_path
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode: False if Path(p) == db_path else real_access(p, mode)
    )
    with make_kb(tmp_path) as kb:
        assert kb.search("git", kb.search_options(mode="lexical")).results
        with pytest.raises(DBError, match="read-only"):
            kb.add([folder])
        checks = {c.name: c for c in kb.doctor()}
        assert checks["fts_in_sync"].ok and "read-only" in checks["fts_in_sync"].detail


def test_a_full_disk_stops_the_batch_cleanly_and_the_rerun_completes(tmp_path):
    docs = tmp_path / "many"
    docs.mkdir()
    for i in range(40):
        (docs / f"n{i:02}.md").write_text(f"# Note {i}\n\n" + "filler words here " * 400)
    with make_kb(tmp_path) as kb:
        conn = kb.writer(create=True)
        kb.add([docs / "n00.md"])
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages + 40}")
        with pytest.raises(DBError, match="disk is full"):
            kb.add([docs])
        done = len(kb.reads.documents())
        assert 1 <= done < 40
        assert all(c.ok for c in kb.doctor() if c.name != "model")
        conn.execute("PRAGMA max_page_count = 1073741823")
        summary = kb.add([docs])
        assert summary.added + summary.skipped == 40 and not summary.failed
        assert all(c.ok for c in kb.doctor())


def test_a_search_past_its_time_budget_stops_with_one_line(folder, tmp_path):
    config = load_config(
        env={"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0", "KB_SEARCH_TIMEOUT": "0"}
    )
    for i in range(200):
        (folder / f"more{i}.md").write_text(f"# More {i}\n\nGit notes, part {i}, and words.\n")
    with KnowledgeBase(config, embedder=HashEmbedder(), cwd=tmp_path) as kb:
        kb.add([folder])
        with pytest.raises(SearchError, match="past its 0 s budget"):
            kb.search("git", kb.search_options(mode="lexical"))
        with pytest.raises(SearchError, match="past its 0 s budget"):
            kb.search("git", kb.search_options())  # no leg could answer in time
