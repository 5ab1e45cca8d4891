"""Files a tool wrote for machines: left out of the index by default, counted by reason.

By name: lock files, logs (`check.log`, `config.log`: what a build or test run printed),
`*.min.*`, source maps, Sphinx's `searchindex.js`, and what lies in a
Sphinx build's `_static`/`_sources` (theme assets; copies of the sources the HTML already
holds). By content: a minified file, whose text is mostly lines of thousands of characters
with almost no spaces (prose with long lines has a space every few words). Only code and
plain text are judged by content: a Markdown or HTML file is a document however it is
wrapped. `--include-generated` (setting `ingestion.include_generated`) indexes them all.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from kb_search.formats.reader import decode_bytes

LOCK_FILE = "lock file"
MINIFIED = "minified"
SOURCE_MAP = "source map"
SEARCH_INDEX = "search index"
BUILD_ASSET = "build asset"
LOG = "log"
REASONS = (MINIFIED, SOURCE_MAP, SEARCH_INDEX, LOCK_FILE, BUILD_ASSET, LOG)

LOCK_FILES = frozenset({
    "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lock",
    "poetry.lock", "pipfile.lock", "pdm.lock", "uv.lock", "cargo.lock", "gemfile.lock",
    "composer.lock", "go.sum", "mix.lock", "flake.lock", "podfile.lock", "packages.lock.json",
    "pubspec.lock", "gradle.lockfile", "conda-lock.yml",
})  # fmt: skip
SEARCH_INDEXES = frozenset({"searchindex.js", "search_index.json", "lunr-index.json"})
SPHINX_COPIES = frozenset({"_static", "_sources"})  # next to a searchindex.js
LONG_LINE = 1000  # characters: no person writes code or notes with lines this long
MINIFIED_SHARE = 0.5  # of the text in long lines...
MAX_SPACE_SHARE = 0.08  # ...with fewer spaces than this: prose has one every ~6 characters
MIN_CHARS = 2000  # a small file is never judged minified


def reason_by_name(path: Path) -> str | None:
    """Why the file's name (or the folder it lies in) says a tool wrote it, or None."""
    name = path.name.lower()
    if name in LOCK_FILES:
        return LOCK_FILE
    if name in SEARCH_INDEXES:
        return SEARCH_INDEX
    if name.endswith(".map") and "." in name[:-4]:
        return SOURCE_MAP  # app.js.map, site.css.map
    if ".min." in name:
        return MINIFIED
    if name.endswith(".log"):
        return LOG
    if _in_sphinx_build(path.parent):
        return BUILD_ASSET
    return None


def _in_sphinx_build(folder: Path) -> bool:
    for current in (folder, *list(folder.parents)[:3]):
        if current.name in SPHINX_COPIES:
            return _has_search_index(current.parent)
    return False


@lru_cache(maxsize=256)
def _has_search_index(folder: Path) -> bool:
    return (folder / "searchindex.js").is_file()


def is_minified(head: bytes) -> bool:
    """Mostly lines of LONG_LINE+ characters with few spaces (a bundle, a data dump)."""
    text = decode_bytes(head)
    if len(text) < MIN_CHARS:
        return False
    long_lines = [line for line in text.split("\n") if len(line) >= LONG_LINE]
    long_chars = sum(len(line) for line in long_lines)
    if long_chars < MINIFIED_SHARE * len(text):
        return False
    spaces = sum(line.count(" ") + line.count("\t") for line in long_lines)
    return spaces < MAX_SPACE_SHARE * long_chars
