"""The standing adversarial suite: Hypothesis profiles and the shared indexes it attacks.

Profiles (chosen by environment, so `make test` needs no option):
- `ci` (default): derandomized (the same examples on every machine and run), 20 examples per
  test, no deadline; the whole folder stays around a minute on a slow CI core.
- `long`: `KB_FUZZ_EXAMPLES=N` (e.g. 2000) turns it on: N examples per test, random seeds (pass
  `--hypothesis-seed=S` to replay a run), failures kept in `KB_FUZZ_DB`
  (default /tmp/kb-fuzz-examples) so a rerun starts from them.
Every failure prints the minimal example and a `@reproduce_failure` blob.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fuzz_kb import make_kb, write_corpus
from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

from kb_search.knowledge_base import KnowledgeBase

# The chunker's invariant helpers live with the ingest tests.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "chunking"))

_SLOW_IS_FINE = [
    HealthCheck.too_slow,
    HealthCheck.function_scoped_fixture,
    HealthCheck.data_too_large,
    HealthCheck.filter_too_much,
]

settings.register_profile(
    "ci",
    max_examples=int(os.environ.get("KB_FUZZ_CI_EXAMPLES", "20")),
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=_SLOW_IS_FINE,
)
settings.register_profile(
    "long",
    max_examples=int(os.environ.get("KB_FUZZ_EXAMPLES") or "1000"),
    derandomize=False,
    database=DirectoryBasedExampleDatabase(
        os.environ.get("KB_FUZZ_DB", "/tmp/kb-fuzz-examples")
    ),
    deadline=None,
    print_blob=True,
    suppress_health_check=_SLOW_IS_FINE,
)
settings.load_profile("long" if os.environ.get("KB_FUZZ_EXAMPLES") else "ci")


@pytest.fixture(scope="module")
def corpus_kb(tmp_path_factory) -> Iterator[KnowledgeBase]:
    """A small index of varied text (CJK, RTL, emoji, code, tables, front matter tags) that the
    query and filter properties search; read-only for them."""
    root = tmp_path_factory.mktemp("adversarial")
    docs = root / "docs"
    write_corpus(docs)
    with make_kb(root) as kb:
        kb.add([docs / "notes"], tags=["notes"])
        kb.add([docs], doc_type=None)
        yield kb
