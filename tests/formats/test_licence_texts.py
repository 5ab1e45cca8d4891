"""Well-known licence texts (LICENSE, COPYING) are one short chunk naming the licence, so their
boilerplate never takes slots from documentation, and a question about the licence finds it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb_search.formats.licences import recognise
from kb_search.ingest.parse import parse_file
from kb_search.parsed import ChunkSettings

MIT = """MIT License

Copyright (c) 2021 Ann Example

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT.
"""
BSD3 = """Copyright (c) Example developers.
All rights reserved.

Redistribution and use in source and binary forms, with or without modification,
are permitted provided that the following conditions are met:

    1. Redistributions of source code must retain the above copyright notice,
       this list of conditions, and the following disclaimer.

    3. Neither the name of Example nor the names of its contributors may be used
       to endorse or promote products derived from this software without
       specific prior written permission.

THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND
ANY EXPRESS OR IMPLIED WARRANTIES ARE DISCLAIMED.
"""
ISC = """ISC License

Copyright 2021 (c) npm, Inc.

Permission to use, copy, modify, and/or distribute this software for
any purpose with or without fee is hereby granted, provided that the
above copyright notice and this permission notice appear in all copies.

THE SOFTWARE IS PROVIDED "AS IS" AND THE COPYRIGHT HOLDER DISCLAIMS
ALL WARRANTIES WITH REGARD TO THIS SOFTWARE.
"""
_APACHE_SECTIONS = [
    'Definitions. "License" shall mean the terms and conditions for use, reproduction, and'
    " distribution as defined by Sections 1 through 9 of this document.",
    "Grant of Copyright License. Subject to the terms and conditions of this License, each"
    " Contributor hereby grants to You a perpetual, worldwide, non-exclusive, no-charge,"
    " royalty-free, irrevocable copyright license to reproduce, prepare Derivative Works of,"
    " publicly display, publicly perform, sublicense, and distribute the Work.",
    "Trademarks. This License does not grant permission to use the trade names, trademarks,"
    " service marks, or product names of the Licensor.",
    "Redistribution. You may add Your own copyright statement to Your modifications and may"
    " provide additional or different license terms and conditions for use, reproduction, or"
    " distribution of Your modifications, or for any such Derivative Works as a whole.",
    "Limitation of Liability. In no event and under no legal theory, whether in tort"
    " (including negligence), contract, or otherwise, unless required by applicable law,"
    " shall any Contributor be liable to You for damages, including any direct, indirect,"
    " special, incidental, or consequential damages of any character arising as a result of"
    " this License, limited to damages for loss of goodwill, work stoppage, computer failure"
    " or malfunction, or any and all other commercial damages or losses.",
    "Accepting Warranty or Additional Liability. While redistributing the Work or Derivative"
    " Works thereof, You may choose to offer, and charge a fee for, acceptance of support,"
    " warranty, indemnity, or other liability obligations and/or rights consistent with this"
    " License.",
]
# An Apache-2.0 LICENSE as projects ship it: the full terms (here its sections, three times
# over, ~900 words) and the project's copyright line in its appendix.
APACHE = (
    "\n                                 Apache License\n"
    "                           Version 2.0, January 2004\n"
    "                        http://www.apache.org/licenses/\n\n"
    "   TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION\n\n"
    + "\n\n".join(f"   {n}. {text}" for n, text in enumerate(_APACHE_SECTIONS * 3, start=1))
    + "\n\n   END OF TERMS AND CONDITIONS\n\n   Copyright 2017-2018 The Example Authors\n"
)
PROSE = (
    "This guide explains how the repo server limits concurrent manifest generation and how"
    " to add your own plugin to the command line tool. "
)


@pytest.mark.parametrize(
    "text, ids",
    [(MIT, ["MIT"]), (BSD3, ["BSD-3-Clause"]), (ISC, ["ISC"]), (APACHE, ["Apache-2.0"])],
)
def test_well_known_licence_texts_are_recognised(text: str, ids: list[str]) -> None:
    found = recognise(text)
    assert found is not None and found.ids == ids


def test_two_licences_in_one_file_are_both_named() -> None:
    found = recognise(MIT + "\n-----\n\n" + BSD3)
    assert found is not None and found.ids == ["MIT", "BSD-3-Clause"]


@pytest.mark.parametrize(
    "text",
    [
        # a README that ends with its licence opens with its own prose
        "# Example\n\n" + PROSE * 4 + "\n\n## License\n\n" + MIT,
        # a document much longer than the licence it opens with
        MIT + "\n\n## Notes\n\n" + PROSE * 12,
        # a text that only names a licence
        "This project is under the MIT License; see the Apache License for the server.\n",
    ],
)
def test_text_that_only_holds_or_names_a_licence_stays_whole(text: str) -> None:
    assert recognise(text) is None


def test_a_licence_file_is_one_chunk_over_all_its_lines(tmp_path: Path) -> None:
    path = tmp_path / "LICENSE"
    path.write_text(APACHE, encoding="utf-8")
    document = parse_file(path, ChunkSettings())
    assert len(document.chunks) == 1
    chunk = document.chunks[0]
    assert (chunk.line_start, chunk.line_end) == (1, len(APACHE.rstrip("\n").split("\n")))
    assert chunk.text.startswith("Licence: Apache License 2.0 (Apache-2.0)")
    assert "Copyright 2017-2018 The Example Authors" in chunk.text
    # its clauses by their titles, never their legal text
    assert (
        "Sections: Definitions; Grant of Copyright License; Trademarks; Redistribution;"
        in chunk.text
    )
    assert "In no event and under no legal theory" not in chunk.text
    assert document.title == "Apache License 2.0"
    assert document.metadata["licences"] == ["Apache-2.0"]
    assert 0 < chunk.token_count <= ChunkSettings().max_tokens


def test_a_short_preface_before_the_licence_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "README.md"
    path.write_text("# autopunc\n\nPunctuates lists in LuaLaTeX.\n\n# License\n\n" + MIT)
    document = parse_file(path, ChunkSettings())
    assert len(document.chunks) == 1
    assert "Punctuates lists in LuaLaTeX." in document.chunks[0].text
    assert document.doc_type == "markdown"


def _files(results: list[dict]) -> list[str]:
    return [Path(r["source"]["path"]).name for r in results]


def test_licence_boilerplate_takes_no_slots_but_answers_what_licence(kb, tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "LICENSE").write_text(APACHE, encoding="utf-8")
    docs = {
        "plugins.md": "# Plugins\n\nAdd your own subcommand to the CLI as a separate executable"
        " named with the tool's prefix on your PATH.\n",
        "server.md": "# Repo server\n\nThe parallelism limit caps concurrent manifest"
        " generation; requests over the limit wait.\n",
        "install.md": "# Install\n\nDownload the release and put the binary on your PATH.\n",
    }
    for name, text in docs.items():
        (folder / name).write_text(text, encoding="utf-8")
    kb("add", str(folder))

    def top(query: str) -> list[str]:
        return _files(kb.json("search", query, "--mode", "lexical", "--top", "5")["results"])

    # unrelated questions whose words the legal text is full of: documentation only
    assert "LICENSE" not in top("add my own subcommand as a separate executable")
    # (a clause title, "Limitation of Liability", may match: once, below the documentation)
    limits = top("limit on concurrent manifest generation")
    assert limits[0] == "server.md" and limits.count("LICENSE") <= 1
    # ...and the licence answers a question about the licence
    assert top("what license is this under")[0] == "LICENSE"
    assert top("Apache License permissions")[0] == "LICENSE"
    assert top("may I use the trademarks")[0] == "LICENSE"  # a clause, by its title
    shown = kb.json("search", "licence Apache", "--mode", "lexical")["results"]
    assert _files(shown)[0] == "LICENSE" and shown[0]["text"].startswith("Licence: Apache")


def test_one_licence_shipped_by_two_projects_is_one_result(kb, tmp_path: Path) -> None:
    for project, holder in (("alpha", "Alpha Authors"), ("beta", "Beta Authors")):
        folder = tmp_path / "src" / project
        folder.mkdir(parents=True)
        text = APACHE.replace("The Example Authors", f"The {holder}")
        (folder / "LICENSE").write_text(text, encoding="utf-8")
        (folder / "README.md").write_text(f"# {project}\n\nA tool named {project}.\n")
    kb("add", str(tmp_path / "src"))
    results = kb.json("search", "Apache License", "--mode", "lexical")["results"]
    licences = [r for r in results if r["source"]["path"].endswith("LICENSE")]
    assert len(licences) == 1
    assert [Path(a["path"]).parent.name for a in licences[0]["also_at"]] in (["alpha"], ["beta"])


APACHE_HEADER = """<!--
Copyright 2023 Example Authors

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
-->
"""


def test_a_short_page_under_an_apache_header_is_the_page(tmp_path: Path) -> None:
    """The notice's word budget (120 + 80) swallowed a 60-word page below an Apache header
    comment: its one chunk was the notice, and `keyctl rotate` was found nowhere."""
    page = tmp_path / "rotate-keys.md"
    page.write_text(APACHE_HEADER + """
# Rotating the signing keys

Run `keyctl rotate --grace 24h` on the primary node. The old key keeps verifying
tokens for the grace period, then is removed from the keyring. Followers pick
the new key up on their next sync; check with `keyctl status` that every node
reports the same key id before you close the change ticket.
""")
    document = parse_file(page, ChunkSettings())
    assert document.title == "Rotating the signing keys"
    assert "keyctl rotate" in " ".join(chunk.text for chunk in document.chunks)
    assert "licences" not in document.metadata


def test_the_apache_notice_alone_with_a_pointer_to_the_full_text_is_a_licence() -> None:
    """Debian's "the full text ... can be found in /usr/share/common-licenses" after the
    notice names a licence: it is not the document's own prose."""
    text = APACHE_HEADER.strip("<!->\n") + (
        "\n\nOn Debian systems, the full text of the Apache License version 2.0 can be\n"
        "found in the file `/usr/share/common-licenses/Apache-2.0`.\n"
    )
    found = recognise(text)
    assert found is not None and found.ids == ["Apache-2.0"]


def test_a_page_in_another_script_under_a_licence_stays_whole() -> None:
    """Only a-z words were counted: 20 KB of Chinese below the MIT text passed as the
    licence's own length, and the page became one licence chunk."""
    page = MIT + "\n" + "本项目的使用说明：先安装依赖，再运行服务。\n" * 800
    assert recognise(page) is None
    assert recognise(MIT) is not None


def test_a_large_text_is_ruled_out_before_its_words_are_gathered() -> None:
    """Every text and Markdown file is checked: a 13 MB text took 5 s and 200 MB of words
    before the size rule ruled it out; the bound is checked first."""
    import time

    text = ("the quick brown fox jumps over the lazy dog " * 12 + "\n") * 25_000
    started = time.perf_counter()
    assert recognise(MIT + text) is None
    assert time.perf_counter() - started < 0.5


def test_a_readme_of_one_line_and_its_licence_keeps_its_own_title(tmp_path: Path) -> None:
    """TeX Live's autopuncitems README: a title, one sentence, then the MIT text. It is one
    licence chunk (the sentence kept in it), but was titled "MIT License" alone."""
    readme = tmp_path / "README.md"
    readme.write_text(
        "# autopuncitems\n\nAutomatically punctuate lists by passing the autopunc option to "
        "enumitem lists. Requires LuaLaTeX.\n\n# License\n\n" + MIT.split("\n", 2)[2]
    )
    document = parse_file(readme, ChunkSettings())
    assert document.metadata["licences"] == ["MIT"]
    assert document.title == "autopuncitems: MIT License"
    assert "Automatically punctuate lists" in document.chunks[0].text
    licence = tmp_path / "LICENSE"
    licence.write_text(MIT)
    assert parse_file(licence, ChunkSettings()).title == "MIT License"
    # a preface line that is a comment or a sentence is no title
    licence.write_text("/* zlib.h -- interface of the zlib library\n\n" + MIT)
    assert parse_file(licence, ChunkSettings()).title == "MIT License"
