"""Issue 33, break 12: with the schema unreadable (40 overwritten pages), `kb doctor` answered
"the database file is damaged: run `kb doctor`", advice that points at itself. Doctor now says
what works: `kb export` when what is left can be salvaged, or, when not even the schema reads,
to move the file aside and index again; and following that advice works."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

PAGE = 4096


def _db(environment) -> Path:
    return Path(environment.env["KB_DATA_DIR"]) / "kb.db"


def _overwrite(path: Path, first_page: int, pages: int, keep_header: bool = True) -> None:
    with open(path, "r+b") as f:
        for page in range(first_page, first_page + pages):
            start = page * PAGE + (100 if page == 0 and keep_header else 0)
            f.seek(start)
            f.write(os.urandom(PAGE * (page + 1) - start))


def test_doctor_on_an_unreadable_schema_gives_advice_that_works(kb, environment, sample):
    kb("add", str(sample))
    path = _db(environment)
    _overwrite(path, 0, 40)  # the schema's page and the 39 after it; the header stays

    result = kb("doctor", "--format", "json", ok=False)
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    (check,) = [c for c in report["checks"] if not c["ok"]]
    assert "kb doctor" not in check["detail"]
    assert "beyond salvage" in check["detail"] and str(path) in check["detail"]
    assert "kb add" in check["detail"]
    # `kb export` agrees: nothing to salvage, and it says the same.
    exported = kb("export", str(path.parent / "copy.db"), ok=False)
    assert exported.exit_code == 1 and "kb add" in exported.stderr

    # The advice works: the file moved aside, the folder added again, doctor is content.
    shutil.move(path, path.with_name("damaged.db"))
    kb("add", str(sample))
    kb("doctor", "--format", "json")


def test_damage_that_leaves_the_schema_readable_is_sent_to_export(kb, environment, sample):
    kb("add", str(sample))
    path = _db(environment)
    size = path.stat().st_size // PAGE
    _overwrite(path, size - 3, 3)  # data pages at the end: the schema still reads
    from kb_search.store.salvage import damage_advice

    advice = damage_advice(path)
    assert "kb export NEW.db" in advice and "kb doctor" not in advice
