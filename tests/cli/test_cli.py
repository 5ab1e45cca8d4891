import json
import os
from importlib import resources
from pathlib import Path

import jsonschema
import pytest


def schema():
    text = resources.files("kb_search").joinpath("schemas/search_response.schema.json").read_text()
    return json.loads(text)


def test_add_search_show_chunk_roundtrip(kb, sample):
    out = kb("add", str(sample)).stdout
    data = json.loads(out)
    assert data["summary"] == (
        "Added 9 documents (26 chunks). 0 failed. 0 skipped (already indexed)."
    )
    again = json.loads(kb("add", str(sample)).stdout)
    assert again["summary"] == "Added 0 documents. 0 failed. 9 skipped (already indexed)."

    res = kb.json("search", "install git from source", "--mode", "lexical", "--top", "3")
    jsonschema.validate(res, schema())
    top = res["results"][0]
    assert top["source"]["title"] == "Git Admin Guide"
    assert top["source"]["heading"] == "Git Admin Guide > Installing > From source"
    assert top["citation"].startswith(str(sample / "docs/git-admin.md") + "#L")
    assert top["source"]["tags"] == ["admin", "git"]
    assert res["returned"] == 3 and res["total_matches"] >= 3

    doc = kb.json("show", str(top["source"]["document_id"]))
    assert doc["title"] == "Git Admin Guide"
    assert [c["chunk_index"] for c in doc["chunks"]] == list(range(doc["chunk_count"]))
    by_path = kb.json("show", top["source"]["path"])
    assert by_path["document_id"] == doc["document_id"]

    ctx = kb.json("chunk", str(top["chunk_id"]), "--context", "1")
    ids = [c["chunk_id"] for c in ctx["chunks"]]
    assert top["chunk_id"] in ids and 2 <= len(ids) <= 3


def test_search_code_and_cjk_and_filters(kb, sample):
    kb("add", str(sample))
    res = kb.json("search", "exponential backoff jitter", "--mode", "lexical", "--type", "code")
    jsonschema.validate(res, schema())
    assert res["results"][0]["source"]["symbol"] == "Retrier.delay"
    assert res["results"][0]["source"]["language"] == "python"
    cjk = kb.json("search", "夜景", "--mode", "lexical")
    assert cjk["results"][0]["source"]["title"].startswith("東京旅行")
    go = kb.json("search", "timeouts lang:go", "--mode", "lexical")
    assert {r["source"]["language"] for r in go["results"]} == {"go"}
    glob = kb.json("search", "backup", "--mode", "lexical", "--path", "my notes/code/*")
    assert glob["results"] and all("/code/" in r["source"]["path"] for r in glob["results"])


def test_human_format(kb, sample):
    kb("add", str(sample))
    out = kb("search", "sourdough starter", "--mode", "lexical", "--format", "human").stdout
    assert out.startswith('Search "sourdough starter" (lexical): ')
    assert "1. Kitchen notes" in out and "my notes/notes/recipes.rst:" in out


def test_hybrid_without_model_says_so(kb, sample, environment):
    environment.env["KB_MODEL"] = "kb-test/no-such-model"
    added = kb("add", str(sample))
    assert "Warning: no embedding model" in added.stderr
    res = kb.json("search", "git hooks")
    jsonschema.validate(res, schema())
    assert res["legs"]["lexical"] == "ok"
    assert res["legs"]["vector"].startswith("error: ")


@pytest.mark.parametrize("query", ['"', "*", "NEAR(", "-", ":", "'NEAR(('", "---", "x" * 3000])
def test_hostile_queries_give_results_or_one_line_error(kb, sample, query):
    kb("add", str(sample))
    result = kb("search", "--mode", "lexical", "--", query, ok=False)
    assert result.exit_code in (0, 1)
    if result.exit_code == 1:
        assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1
        assert "Traceback" not in result.stderr
    else:
        jsonschema.validate(json.loads(result.stdout), schema())


def test_bad_files_are_logged_and_the_batch_goes_on(kb, tmp_path, environment):
    root = tmp_path / "bad files"
    root.mkdir()
    (root / "good.md").write_text("# Good\n\nfine content about zebras\n")
    (root / "binary.txt").write_bytes(b"\x00\x01\x02" * 500)
    (root / "latin1.txt").write_bytes("caf\xe9 cr\xe8me br\xfbl\xe9e".encode("latin-1"))
    (root / "empty.md").write_text("")
    (root / "huge.txt").write_text("word " * 400_000)
    (root / "loop").symlink_to(root)
    (root / "dangling.md").symlink_to(root / "missing.md")
    environment.env["KB_MAX_FILE_MB"] = "1"
    data = json.loads(kb("add", str(root)).stdout)
    failed = {Path(f["path"]).name: f["reason"] for f in data["failed"]}
    assert data["added"] == 2, data  # good.md and latin1.txt
    assert set(failed) == {"binary.txt", "huge.txt"}
    assert data["empty"] == 1
    assert "too large" in failed["huge.txt"]
    log = (tmp_path / "data dir" / "ingest-errors.log").read_text().splitlines()
    assert len(log) == 2 and all(line.count("\t") == 2 for line in log)
    res = kb.json("search", "crème", "--mode", "lexical")
    assert res["results"][0]["source"]["path"].endswith("latin1.txt")
    assert res["results"][0]["source"]["title"] == "café crème brûlée"


def test_unreadable_file(kb, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads everything")
    path = tmp_path / "secret.md"
    path.write_text("# x\n")
    path.chmod(0)
    data = json.loads(kb("add", str(path)).stdout)
    assert len(data["failed"]) == 1


def test_changed_file_is_reingested_and_removed(kb, tmp_path):
    note = tmp_path / "note.md"
    note.write_text("# Note\n\nabout walruses\n")
    kb("add", str(note))
    note.write_text("# Note\n\nabout narwhals now\n")
    os.utime(note, (1, 1))
    data = json.loads(kb("add", str(note)).stdout)
    assert data["updated"] == 1
    assert kb.json("search", "walruses", "--mode", "lexical")["results"] == []
    hit = kb.json("search", "narwhals", "--mode", "lexical")["results"][0]
    removed = kb.json("remove", str(note))
    assert removed["removed"] == [hit["source"]["document_id"]]
    assert kb.json("search", "narwhals", "--mode", "lexical")["results"] == []
    assert kb.json("stats")["documents"] == 0


def test_tags_list_stats_doctor(kb, sample):
    kb("add", str(sample / "notes"), "--tag", "personal")
    listing = kb.json("list", "--tag", "personal")
    assert listing["count"] == 3
    doc_id = str(listing["documents"][0]["document_id"])
    kb("tag", doc_id, "urgent")
    assert kb.json("list", "--tag", "urgent")["count"] == 1
    kb("untag", doc_id, "urgent")
    assert kb.json("list", "--tag", "urgent")["count"] == 0
    tags = kb.json("tags")["tags"]
    assert {"tag": "personal", "documents": 3} in tags
    stats = kb.json("stats")
    assert stats["documents"] == 3 and stats["chunks"] >= 3
    doctor = kb.json("doctor")
    assert doctor["ok"], doctor


def test_user_errors_exit_1_with_one_line(kb, tmp_path):
    result = kb("search", "x", ok=False)
    assert result.exit_code == 1
    assert "kb add FOLDER" in result.stderr and result.stderr.count("\n") == 1
    kb("init")
    result = kb("show", "12345", ok=False)
    assert result.exit_code == 1 and result.stderr.startswith("Error: no indexed document")
    result = kb("search", "x", "--mode", "nope", ok=False)
    assert result.exit_code == 2
    not_db = tmp_path / "not-a-db.db"
    not_db.write_text("hello, I am not SQLite" * 100)
    result = kb("--db", str(not_db), "stats", ok=False)
    assert result.exit_code == 1 and "Traceback" not in result.stderr


def test_config_show_names_sources(kb, environment):
    environment.env["KB_DEFAULT_TOP"] = "4"
    data = kb.json("config", "show")
    assert data["search.default_top"] == {"value": 4, "source": "env KB_DEFAULT_TOP"}
    assert data["search.rrf_k"]["source"] == "default"


def test_a_file_added_on_its_own_keeps_its_folder_citation(kb, sample):
    kb("add", str(sample))
    path = sample / "docs" / "git-admin.md"
    before = kb.json("show", str(path))["rel_path"]
    path.write_text(path.read_text() + "\nOne more line.\n")
    kb("add", str(path))
    assert kb.json("show", str(path))["rel_path"] == before == "my notes/docs/git-admin.md"


def test_same_citation_path_in_two_roots_is_ambiguous(kb, tmp_path):
    for name in ("r1", "r2"):
        (tmp_path / name / "notes").mkdir(parents=True)
        (tmp_path / name / "notes" / "x.txt").write_text(f"note in {name}\n")
    kb("add", str(tmp_path / "r1" / "notes"), str(tmp_path / "r2" / "notes"))
    result = kb("show", "notes/x.txt", ok=False)
    assert result.exit_code == 1 and "ambiguous" in result.stderr
    assert kb.json("show", str(tmp_path / "r2" / "notes" / "x.txt"))["path"].endswith(
        "r2/notes/x.txt"
    )


def test_a_file_the_roots_kbignore_excludes_is_refused_not_added(kb, sample):
    (sample / ".kbignore").write_text("notes/recipes.rst\n")
    kb("add", str(sample))
    result = kb("add", str(sample / "notes" / "recipes.rst"), ok=False)
    data = json.loads(result.stdout)
    assert data["added"] == 0 and "ignored by .kbignore" in data["failed"][0]["reason"]
    assert result.exit_code == 1 and "nothing added: " in result.stderr  # nothing it asked for
