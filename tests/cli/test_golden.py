"""Golden output on the bundled sample: the JSON contract and the human output of every reading
command, byte for byte (after masking what legitimately varies: temp paths, times, sizes).

A deliberate change of output is recorded with `KB_UPDATE_GOLDEN=1 pytest tests/cli/test_golden.py`
and reviewed in the diff of tests/data/golden_sample.json.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parents[1] / "data" / "golden_sample.json"
VARYING = {"indexed_at", "seconds", "db_bytes", "index_seconds"}

SEARCHES = [
    ["install git from source"],
    ["install git from source", "--mode", "lexical"],
    ["install git from source", "--mode", "vector"],
    ["how do I retry a failed request", "--top", "5"],
    ["exponential backoff jitter", "--type", "code"],
    ["backup -rsync", "--mode", "lexical"],
    ['"sourdough starter"'],
    ["夜景"],
    ["timeouts lang:go"],
    ["backup", "--path", "my notes/code/*"],
    ["meeting decisions", "--tag", "admin"],
    ["'git NEAR(install source)'", "--mode", "lexical"],
    ["zzqx nonsense wordz"],
    ["retry", "--min-score", "0.9"],
]


def _mask(value, root: str):
    if isinstance(value, dict):
        return {k: ("<varies>" if k in VARYING else _mask(v, root)) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v, root) for v in value]
    if isinstance(value, str):
        return value.replace(root, "<TMP>")
    if isinstance(value, float):
        return round(value, 4)  # vector scores may differ in the last digits between CPUs
    return value


def _mask_json(data: dict, root: str) -> dict:
    data = _mask(data, root)
    if "timings_ms" in data:
        data["timings_ms"] = sorted(data["timings_ms"])
    return data


def _mask_text(text: str, root: str) -> str:
    return re.sub(r"\d+(\.\d+)? ?(MB|ms|s)\b", "<n>", text.replace(root, "<TMP>"))


def session(kb, sample: Path) -> dict:
    root = str(sample.parent)
    out: dict = {}
    kb("add", str(sample))
    kb("tag", str(sample / "notes" / "meeting-2026-03-04.txt"), "admin")
    for args in SEARCHES:
        key = "search " + " ".join(args)
        out[key] = _mask_json(kb.json("search", *args), root)
        human = kb("search", *args, "--format", "human").stdout
        out[key + " [human]"] = _mask_text(human, root)
    first = out["search install git from source"]["results"][0]
    doc_id = str(first["source"]["document_id"])
    chunk_id = str(first["chunk_id"])
    for name, args in {
        "show": ["show", doc_id],
        "show path": ["show", "my notes/code/retry.py"],
        "chunk": ["chunk", chunk_id, "--context", "1"],
        "list": ["list"],
        "list code": ["list", "--type", "code"],
        "tags": ["tags"],
        "stats": ["stats"],
        "similar": ["similar", doc_id],
        "similar chunk": ["similar", chunk_id, "--chunk", "--top", "3"],
    }.items():
        out[name] = _mask_json(kb.json(*args), root)
        out[name + " [human]"] = _mask_text(kb(*args, "--format", "human").stdout, root)
    return out


@pytest.mark.model
def test_sample_output_is_unchanged(kb, sample, monkeypatch):
    monkeypatch.chdir(sample.parent)
    got = session(kb, sample)
    if os.environ.get("KB_UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(got, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
        pytest.skip("golden file rewritten")
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key] == want[key], key
