"""docs/configuration.md documents every setting as the schema defines it (issue 36): one
table row per setting, with its environment variables, what it allows and whether a project
file needs trust for it. A setting added to settings.py without its row fails here."""

from __future__ import annotations

import re
from pathlib import Path

from kb_search.config import PLACES, needs_trust
from kb_search.settings import SETTINGS

DOC = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text("utf-8")
ROW = re.compile(r"^\| `(?P<key>[^`]+)` \|(?P<cells>.*)\|$", re.MULTILINE)


def rows() -> dict[str, list[str]]:
    return {m["key"]: [c.strip() for c in m["cells"].split("|")] for m in ROW.finditer(DOC)}


def test_every_setting_has_its_row():
    documented = rows()
    keys = [s.key for s in (*PLACES.values(), *SETTINGS)]
    missing = [key for key in keys if key not in documented]
    assert not missing, f"settings missing from docs/configuration.md: {missing}"
    unknown = [key for key in documented if key not in keys]
    assert not unknown, f"docs/configuration.md documents settings kb does not have: {unknown}"


def test_each_row_says_what_the_schema_says():
    documented = rows()
    for setting in (*PLACES.values(), *SETTINGS):
        _default, allowed, env, project, what = documented[setting.key]
        assert allowed == setting.convert.allowed, setting.key
        assert env == ", ".join(f"`{name}`" for name in setting.env), setting.key
        assert project == ("needs trust" if needs_trust(setting.key) else "yes"), setting.key
        assert what, setting.key
