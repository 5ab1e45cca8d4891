"""Vendored libraries (a third party's code copied into a project) are left out like
generated files, counted as "vendored library": by folder (`vendor`, `third_party`...), by a
library's licence banner, and as the parts of a folder that is mostly a library's files;
a person's own scripts stay (formats/generated.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb_search.formats.generated import VENDORED, has_library_banner
from kb_search.formats.registry import classify
from kb_search.ingest.executor import AddOptions
from kb_search.ingest.pipeline import candidates

BODY = "(function (root) {\n  root.stem = function (w) { return w.slice(0, 4); };\n})(this);\n"
LUNR_PART = """/*!
 * Lunr languages, `{lang}` language
 * https://github.com/MihaiValentin/lunr-languages
 *
 * Copyright 2014, Mihai Valentin
 * http://www.mozilla.org/MPL/
 */
"""
JQUERY = "/*! jQuery v3.6.0 | (c) OpenJS Foundation and contributors | jquery.org/license */\n"
LICENSED = """/**
 * lunr - http://lunrjs.com - A bit like Solr, but much smaller - 2.3.9
 * Copyright (C) 2020 Oliver Nightingale
 * @license MIT
 */
"""
OWN = [
    "/**\n * Opens the menu on the notes page.\n */\nfunction openMenu() { return 1; }\n",
    "// Copyright 2024 Ada. Licensed MIT, https://ada.example/notes\nconst x = 1;\n",
    "/*! notes page helpers */\nexport const y = 2;\n",
    "/* Copyright (c) 2024 Ada, version 1.2 of my page */\nlet z = 3;\n",
]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("head", [LUNR_PART.format(lang="Danish"), JQUERY, LICENSED])
def test_a_library_banner_is_recognised(head):
    assert has_library_banner((head + BODY).encode())


@pytest.mark.parametrize("text", OWN)
def test_a_persons_own_script_is_not_vendored(tmp_path, text):
    assert not has_library_banner(text.encode())
    script = write(tmp_path / "site" / "js" / "page.js", text)
    assert classify(script).left_out is None


def test_a_library_bundle_folder_is_left_out_whole(tmp_path):
    """mkdocs' lunr-language: most parts carry the banner, a few (lunr.jp.js, tinyseg.js)
    do not; all are the library's. Old code indexed them all (1,189 chunks of 11,100)."""
    folder = tmp_path / "mkdocs" / "contrib" / "search" / "lunr-language"
    for lang in ("da", "de", "fr", "ru", "es", "it", "nl", "pt"):  # 8 of 10 with a banner
        write(folder / f"lunr.{lang}.js", LUNR_PART.format(lang=lang) + BODY)
    write(folder / "lunr.jp.js", "// jp is the country code, ja the language code\n" + BODY)
    write(folder / "tinyseg.js", "/**\n * export the module via AMD or CommonJS\n */\n" + BODY)
    own = write(tmp_path / "mkdocs" / "contrib" / "search" / "main.js", OWN[0])
    for script in folder.iterdir():
        assert classify(script).left_out == VENDORED, script.name
        assert classify(script, include_generated=True).left_out is None
        assert classify(script, named=True).left_out is None  # named on its own: read
    assert classify(own).left_out is None


def test_a_persons_scripts_beside_a_few_libraries_stay(tmp_path):
    folder = tmp_path / "site" / "js"
    libraries = [write(folder / f"lib{n}.js", JQUERY + BODY) for n in range(3)]
    mine = [write(folder / f"page{n}.js", text) for n, text in enumerate(OWN[:2])]
    assert all(classify(p).left_out == VENDORED for p in libraries)  # each by its banner
    assert all(classify(p).left_out is None for p in mine)  # 3 of 5: not a library's folder


def test_code_in_a_vendor_folder_is_vendored_and_its_documents_are_not(tmp_path):
    go = write(tmp_path / "app" / "vendor" / "github.com" / "x" / "y" / "y.go", "package y\n")
    pip = write(tmp_path / "pip" / "_vendor" / "rich" / "text.py", "def render():\n    pass\n")
    readme = write(tmp_path / "app" / "vendor" / "github.com" / "x" / "y" / "README.md", "# Y\n")
    mine = write(tmp_path / "app" / "main.go", "package main\n")
    assert classify(go).left_out == VENDORED and classify(pip).left_out == VENDORED
    assert classify(readme).left_out is None and classify(mine).left_out is None
    # a folder a person added from deep inside one: only the nearest folders count
    deep = write(tmp_path / "vendor" / "a" / "b" / "c" / "d" / "tool.py", "x = 1\n")
    assert classify(deep).left_out is None


def test_a_folder_walk_counts_vendored_libraries(tmp_path):
    folder = tmp_path / "lunr-language"
    for lang in ("da", "de", "fr"):
        write(folder / f"lunr.{lang}.js", LUNR_PART.format(lang=lang) + BODY)
    write(tmp_path / "notes.md", "# Notes\n\nMine.\n")
    found = candidates([tmp_path], AddOptions())
    assert [item.path.name for item in found.found] == ["notes.md"]
    assert found.left_out == {VENDORED: 3}
    assert len(candidates([tmp_path], AddOptions(include_generated=True)).found) == 4


def test_the_add_summary_counts_vendored_libraries(kb, tmp_path):
    folder = tmp_path / "project"
    write(folder / "README.md", "# Project\n\nThe zebra option turns on stripes.\n")
    write(folder / "third_party" / "lib.js", "function lib() { return 'zebra'; }\n")
    write(folder / "static" / "jquery.js", JQUERY + BODY)
    data = kb.json("add", str(folder))
    assert data["left_out"] == {VENDORED: 2}
    assert "2 generated files left out: 2 vendored libraries (" in data["summary"]


ANGULAR = """/**
 * @license
 * Copyright Google LLC All Rights Reserved.
 *
 * Use of this source code is governed by an MIT-style license that can be
 * found in the LICENSE file at https://angular.io/license
 */
"""
APACHE = """/**
 * @license
 * Copyright 2018 Google LLC. All Rights Reserved.
 * Licensed under the Apache License, Version 2.0 (the "License");
 * you may not use this file except in compliance with the License.
 * You may obtain a copy of the License at
 *
 * http://www.apache.org/licenses/LICENSE-2.0
 */
"""


@pytest.mark.parametrize("header", [ANGULAR, APACHE])
def test_a_projects_own_sources_with_a_licence_header_stay(tmp_path, header):
    """Angular and tfjs open every source file with `/** @license ... <licence URL> */`:
    a person indexing their checkout (or a project with that convention) keeps its code.
    The old code left every such file out as a vendored library."""
    folder = tmp_path / "packages" / "core" / "src"
    files = [write(folder / f"part{n}.ts", header + BODY) for n in range(5)]
    assert not has_library_banner(files[0].read_bytes())
    assert all(classify(p).left_out is None for p in files)


def test_a_folder_is_judged_again_once_it_changes(tmp_path):
    """A long-running `kb watch` judges a folder again when scripts are added to it; the old
    cache (keyed by the folder alone) kept its first answer for the life of the process."""
    folder = tmp_path / "static" / "lunr-language"
    part = write(folder / "tinyseg.js", "/**\n * export the module\n */\n" + BODY)
    assert classify(part).left_out is None  # alone: a person's script
    for lang in ("da", "de", "fr", "ru"):
        write(folder / f"lunr.{lang}.js", LUNR_PART.format(lang=lang) + BODY)
    assert classify(part).left_out == VENDORED  # now among a library's parts


def test_a_folder_added_from_inside_a_vendor_folder_is_read(tmp_path):
    """`kb add app/vendor/github.com/x/y` asks for that dependency's code: only folders below
    the added one say "vendored". The old code judged the absolute path and left it all out."""
    dependency = tmp_path / "app" / "vendor" / "github.com" / "x" / "y"
    write(dependency / "y.go", "package y\n")
    write(dependency / "internal" / "z.go", "package internal\n")
    write(dependency / "third_party" / "w.go", "package w\n")  # its own vendored code
    found = candidates([dependency], AddOptions())
    assert sorted(item.path.name for item in found.found) == ["y.go", "z.go"]
    assert found.left_out == {VENDORED: 1}
    whole = candidates([tmp_path / "app"], AddOptions())  # from above: vendored, as before
    assert whole.found == [] and whole.left_out == {VENDORED: 3}


def test_a_persons_script_beside_several_libraries_stays(tmp_path):
    """A small site's `js/`: jQuery, Bootstrap, popper and lodash beside the person's own
    app.js. Four banners of five scripts made the old code take app.js for a library's part;
    a library's parts name one source, these four name four."""
    folder = tmp_path / "site" / "static" / "js"
    banners = {
        "jquery.js": JQUERY,
        "bootstrap.js": "/*!\n * Bootstrap v5.3.2 (https://getbootstrap.com/)\n * MIT\n */\n",
        "popper.js": "/*!\n * @popperjs/core v2.11.8 - MIT License\n */\n",
        "lodash.js": "/**\n * @license\n * Lodash <https://lodash.com/>\n * MIT license\n"
        " * Based on Underscore.js 1.8.3 <http://underscorejs.org/LICENSE>\n */\n",
    }
    libraries = [write(folder / name, text + BODY) for name, text in banners.items()]
    mine = write(folder / "app.js", OWN[0])
    assert all(classify(p).left_out == VENDORED for p in libraries)
    assert classify(mine).left_out is None


def test_explain_says_why_a_deep_vendored_package_is_left_out(kb, tmp_path):
    """Go's vendored packages lie deep (`vendor/github.com/x/y/internal/`): `kb add` leaves
    them out, and `--explain` says so as the walk judged it (from the added folder), not
    "not indexed yet"."""
    app = tmp_path / "app"
    write(app / "main.go", "package main\n\nfunc zebra() {}\n")
    deep = write(app / "vendor" / "github.com" / "x" / "y" / "internal" / "z.go", "package z\n")
    assert kb.json("add", str(app))["left_out"] == {VENDORED: 1}
    explain = kb.json("search", "zebra", "--explain", str(deep))["explain"]
    assert explain["reason"].startswith(f"left out as generated ({VENDORED})"), explain


def test_code_in_a_deps_folder_is_vendored(tmp_path):
    """C projects keep the libraries they bundle in `deps/` (ujson's `deps/double-conversion`,
    Redis's `deps/jemalloc`, Node's `deps/v8`). The old code indexed ujson's copy of
    double-conversion: 87 files, 19,700 of the sdist's 20,900 chunks."""
    project = tmp_path / "ujson"
    bundled = write(project / "src" / "deps" / "double-conversion" / "strtod.cc", "int f();\n")
    notes = write(project / "src" / "deps" / "double-conversion" / "README.md", "# DC\n")
    own = write(project / "src" / "decode.c", "int decode(void) { return 0; }\n")
    assert classify(bundled, root=project).left_out == VENDORED
    assert classify(notes, root=project).left_out is None  # a document stays
    assert classify(own, root=project).left_out is None
    assert classify(bundled, root=bundled.parent).left_out is None  # added itself: read


def test_a_file_right_in_a_deps_folder_is_the_projects_own(tmp_path):
    """Redis's `deps/Makefile` and `deps/update-jemalloc.sh` are Redis's own, the glue that
    builds and updates what it bundles (old code: left out as vendored libraries); a bundled
    library lies in a folder of its own (`deps/jemalloc/`)."""
    project = tmp_path / "redis"
    make = write(project / "deps" / "Makefile", "all:\n\t$(MAKE) -C jemalloc\n")
    update = write(project / "deps" / "update-jemalloc.sh", "#!/bin/sh\nVER=$1\n")
    bundled = write(project / "deps" / "jemalloc" / "src" / "arena.c", "int arena(void);\n")
    for own in (make, update):
        assert classify(own, root=project).left_out is None
        assert classify(own).left_out is None  # no root known: the nearest folders
    assert classify(bundled, root=project).left_out == VENDORED
    assert classify(bundled).left_out == VENDORED
