"""Added folders a person can see (`kb roots`) and undo (`kb remove FOLDER`)."""

from __future__ import annotations

from pathlib import Path


def make_folder(root: Path, names: list[str]) -> Path:
    root.mkdir(parents=True)
    for name in names:
        (root / name).write_text(f"# {name}\n\nNotes about {name.split('.')[0]} and burrows.\n")
    return root


def test_roots_lists_added_folders_with_counts(kb, tmp_path):
    notes = make_folder(tmp_path / "notes", ["a.md", "b.md"])
    docs = make_folder(tmp_path / "docs", ["c.md"])
    kb("add", str(notes), str(docs), "--tag", "mine")
    rows = kb.json("roots")["roots"]
    assert [(r["path"], r["documents"], r["tags"]) for r in rows] == [
        (str(docs.resolve()), 1, ["mine"]),
        (str(notes.resolve()), 2, ["mine"]),
    ]
    assert all(r["chunks"] >= r["documents"] and r["exists"] for r in rows)
    assert "notes" in kb("roots", "--format", "human").stdout


def test_remove_folder_removes_its_documents_and_forgets_it(kb, tmp_path):
    notes = make_folder(tmp_path / "notes", ["a.md", "b.md"])
    docs = make_folder(tmp_path / "docs", ["c.md"])
    kb("add", str(notes), str(docs))
    result = kb.json("remove", str(notes))
    assert len(result["removed"]) == 2
    assert result["forgotten_roots"] == [str(notes.resolve())]
    assert [d["path"] for d in kb.json("list")["documents"]] == [str((docs / "c.md").resolve())]
    assert [r["path"] for r in kb.json("roots")["roots"]] == [str(docs.resolve())]
    # A plain sync no longer rescans the forgotten folder.
    synced = kb.json("sync")
    assert synced["added"] == 0
    assert len(kb.json("list")["documents"]) == 1


def test_remove_several_paths_removes_matches_and_reports_the_rest(kb, tmp_path):
    notes = make_folder(tmp_path / "notes", ["a.md", "b.md"])
    kb("add", str(notes))
    result = kb.json("remove", str(notes / "a.md"), str(tmp_path / "nowhere.md"))
    assert len(result["removed"]) == 1
    assert result["not_found"] == [str(tmp_path / "nowhere.md")]
    human = kb("remove", str(notes / "b.md"), "ghost.md", "--format", "human").stdout
    assert "Removed 1 document." in human and "Not indexed: ghost.md" in human
    assert kb.json("list")["documents"] == []


def test_remove_nothing_matching_is_an_error_and_changes_nothing(kb, tmp_path):
    notes = make_folder(tmp_path / "notes", ["a.md"])
    kb("add", str(notes))
    result = kb("remove", "ghost.md", str(tmp_path / "elsewhere"), ok=False)
    assert result.exit_code == 1
    assert "nothing indexed matches" in result.stderr
    assert len(kb.json("list")["documents"]) == 1
    assert len(kb.json("roots")["roots"]) == 1


def test_remove_is_one_transaction(kb, tmp_path, monkeypatch):
    """A failure part-way through removes nothing: no half-removed folder."""
    import kb_search.ingest.remove as documents  # where `kb remove` calls it from

    notes = make_folder(tmp_path / "notes", ["a.md", "b.md", "c.md"])
    kb("add", str(notes))
    real, calls = documents.delete_document, []

    def failing(conn, doc_id):
        calls.append(doc_id)
        if len(calls) == 2:
            raise RuntimeError("disk gone")
        return real(conn, doc_id)

    monkeypatch.setattr(documents, "delete_document", failing)
    try:
        kb("remove", str(notes), ok=False)
    except RuntimeError:
        pass
    monkeypatch.setattr(documents, "delete_document", real)
    assert len(calls) == 2
    assert len(kb.json("list")["documents"]) == 3
    assert len(kb.json("roots")["roots"]) == 1


def test_no_database_error_points_to_kb_add(kb, tmp_path):
    result = kb("--db", str(tmp_path / "none.db"), "search", "burrows", ok=False)
    assert result.exit_code == 1
    assert "`kb add FOLDER` creates it" in result.stderr


def test_unknown_command_and_option_suggest_the_near_one(kb):
    command = kb("serach", "burrows", ok=False)
    assert command.exit_code == 2 and "Did you mean 'search'?" in command.stderr
    option = kb("search", "burrows", "--topp", "3", ok=False)
    assert option.exit_code == 2 and "did you mean --top?" in option.stderr
    word = kb("search", "burrows", "--draft", ok=False)
    assert "put the query after '--'" in word.stderr


def test_unknown_filter_values_are_errors_with_suggestions(kb, tmp_path):
    notes = make_folder(tmp_path / "notes", ["a.md"])
    kb("add", str(notes), "--tag", "git")
    typo = kb("search", "burrows", "--type", "mrakdown", ok=False)
    assert typo.exit_code == 1 and "did you mean 'markdown'?" in typo.stderr
    inline = kb("search", "burrows tag:gti", ok=False)
    assert inline.exit_code == 1 and "did you mean 'git'?" in inline.stderr
    # One rule for every filter: a type kb reads but the index does not hold is an error that
    # lists what the index holds (not an empty answer, not the 19 types kb can read).
    absent = kb("search", "burrows", "--type", "pdf", ok=False)
    assert absent.exit_code == 1
    assert (
        "no type 'pdf' in the index: kb reads pdf files, but none was added."
        " It has types: markdown" in absent.stderr
    )
    pfd = kb("search", "burrows", "--type", "pfd", ok=False)
    assert "no type 'pfd' in the index. It has types: markdown" in pfd.stderr
    lang = kb("search", "burrows", "--lang", "en", ok=False)
    assert "no language 'en' in the index. It has languages of code: none" in lang.stderr
    assert kb.json("search", "burrows", "--tag", "git")["results"]


def test_kb_list_filters_by_type_as_kb_search_does(kb, tmp_path):
    """Old code: `kb list --type pfd` (a typo) and `--type rst` (reST indexed as text) both
    answered an empty list, exit 0: the reader took the index to hold no such file."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.rst").write_text("Guide\n=====\n\nRabbit burrows in reST.\n")
    (docs / "notes.txt").write_text("Rabbit burrows in plain text.\n")
    (docs / "intro.md").write_text("# Intro\n\nRabbit burrows in Markdown.\n")
    kb("add", str(docs))
    listed = kb.json("list", "--type", "rst")
    assert [Path(d["path"]).name for d in listed["documents"]] == ["guide.rst"]
    assert kb.json("list", "--type", "rst", "--limit", "1")["total"] == 1
    typo = kb("list", "--type", "mardown", ok=False)
    assert typo.exit_code == 1
    assert "no type 'mardown' in the index; did you mean 'markdown'?" in typo.stderr
    assert [Path(d["path"]).name for d in kb.json("list", "--type", "text")["documents"]] == [
        "guide.rst",
        "notes.txt",
    ]


def test_a_type_named_by_its_extension_is_the_files_of_that_extension(kb, tmp_path):
    """Old code: `--type rst` was "no type 'rst' in the index" on an index of reST files (kb
    stores them as type text). A type named by an extension kb reads is the files of that
    extension (compressed ones too), a note says how it was read, and none is an error."""
    import gzip

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.rst").write_text("Guide\n=====\n\nRabbit burrows in reST.\n")
    (docs / "notes.txt").write_text("Rabbit burrows in plain text.\n")
    (docs / "intro.md").write_text("# Intro\n\nRabbit burrows in Markdown.\n")
    (docs / "book.adoc").write_text("= Book\n\nRabbit burrows in AsciiDoc.\n")
    (docs / "changes.rst.gz").write_bytes(gzip.compress(b"Changes\n=======\n\nBurrows.\n"))
    kb("add", str(docs))

    def names(*args):
        answer = kb.json("search", "burrows", "--mode", "lexical", *args)
        return {Path(r["source"]["path"]).name for r in answer["results"]}, answer.get("notes")

    found, notes = names("--type", "rst")
    assert found == {"guide.rst", "changes.rst.gz"}
    assert "type 'rst' read as the files named *.rst (kb indexes them as type text)" in notes
    both = {"guide.rst", "changes.rst.gz", "intro.md"}
    assert names("--type", ".RST", "--type", "markdown")[0] == both
    assert names("--type", "text")[0] == {"guide.rst", "changes.rst.gz", "notes.txt"}
    assert kb.json("search", "burrows type:adoc", "--mode", "lexical")["results"][0]["source"][
        "path"
    ].endswith("book.adoc")
    hybrid = kb.json("search", "rabbit burrows", "--type", "rst")["results"]
    assert {Path(r["source"]["path"]).name for r in hybrid} <= {"guide.rst", "changes.rst.gz"}
    absent = kb("search", "burrows", "--type", "tex", ok=False)
    assert absent.exit_code == 1
    assert (
        "no type 'tex' in the index: kb reads .tex files (as type latex), but none was added."
        " It has types: asciidoc, markdown, text" in absent.stderr
    )


def test_language_filters_take_the_names_people_use(kb, tmp_path):
    """Old code: `--lang js` was "no language 'js' in the index; did you mean 'json'?" on an
    index of JavaScript; the common names of a language (extension, alias, interpreter) are
    kb's name for it, and an absent one kb reads says so and lists what the index has."""
    code = tmp_path / "code"
    code.mkdir()
    (code / "app.js").write_text("function burrows() { return 'rabbit burrows'; }\n")
    (code / "tool.py").write_text("def burrows():\n    return 'rabbit burrows'\n")
    (code / "run.sh").write_text("#!/bin/sh\necho rabbit burrows\n")
    (code / "deploy.yml").write_text("burrows: rabbit\n")
    (code / "main.go").write_text("package main\n\n// burrows of rabbits\nfunc main() {}\n")
    (code / "lib.cpp").write_text("// rabbit burrows\nint burrows() { return 1; }\n")
    kb("add", str(code))
    for alias, suffix in (
        ("js", ".js"), ("JavaScript", ".js"), ("py", ".py"), ("python3", ".py"),
        ("sh", ".sh"), ("shell", ".sh"), ("yml", ".yml"), ("golang", ".go"), ("c++", ".cpp"),
        ("cxx", ".cpp"),
    ):  # fmt: skip
        results = kb.json("search", "burrows", "--lang", alias, "--mode", "lexical")["results"]
        assert results, alias
        assert {Path(r["source"]["path"]).suffix for r in results} == {suffix}, alias
    ts = kb("search", "burrows", "--lang", "ts", ok=False)
    assert ts.exit_code == 1
    assert (
        "no language 'ts' (typescript) in the index: kb reads typescript files, but none was"
        " added. It has languages of code: bash, cpp, go, javascript, python, yaml" in ts.stderr
    )
    typo = kb("search", "burrows", "--lang", "pyhton", ok=False)
    assert "did you mean 'python'?" in typo.stderr


def test_lang_shell_means_every_shell_kb_reads(kb, tmp_path):
    """Old code: `--lang shell` meant bash alone, so a person's zsh scripts were filtered out,
    and on an index of zsh only it said "no language 'shell' (bash)... It has: zsh"."""
    code = tmp_path / "dotfiles"
    code.mkdir()
    (code / "setup.sh").write_text("#!/bin/bash\necho rabbit burrows\n")
    (code / "prompt.zsh").write_text("# rabbit burrows\nautoload -U compinit\n")
    (code / "tool.py").write_text("def burrows():\n    return 'rabbit burrows'\n")
    kb("add", str(code))
    results = kb.json("search", "burrows", "--lang", "shell", "--mode", "lexical")["results"]
    assert {Path(r["source"]["path"]).suffix for r in results} == {".sh", ".zsh"}
    kb("remove", str(code))
    absent = kb("search", "burrows", "--lang", "shell", ok=False)
    assert "no language 'shell' (bash and zsh) in the index: kb reads bash and zsh files" in (
        absent.stderr
    )


def test_shell_expanded_query_warns_with_quoting_advice(kb, tmp_path, environment, monkeypatch):
    notes = make_folder(tmp_path / "notes", ["pg_dump.md", "pg_restore.md"])
    kb("add", str(notes))
    environment.cwd = notes
    result = kb("search", "tips", "for", "pg_dump.md", "pg_restore.md", "--format", "json")
    assert "did the shell expand a * or ?" in result.stderr
    plain = kb("search", "tips", "for", "pg", "--format", "json")
    assert "shell expand" not in plain.stderr
