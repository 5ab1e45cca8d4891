"""Format guards for the committed question sets (eval/questions); no shared data needed."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

QUESTIONS_DIR = Path(__file__).resolve().parents[2] / "eval" / "questions"
SETS = {"docs-qa.jsonl": 130, "code-qa.jsonl": 45, "pdf-qa-heldout3.jsonl": 45}


def _load_checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("question_check", QUESTIONS_DIR / "check.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


check = _load_checker()


@pytest.fixture(scope="module")
def report():
    return check.check_format([QUESTIONS_DIR / name for name in SETS])


def test_sets_parse_without_errors(report):
    assert report.errors == []


@pytest.mark.parametrize(("name", "minimum"), SETS.items())
def test_each_set_has_enough_questions(report, name, minimum):
    assert sum(q.source == name for q in report.questions) >= minimum


def test_docs_set_covers_every_corpus(report):
    docs = [q for q in report.questions if q.source == "docs-qa.jsonl"]
    corpora = {r.corpus for q in docs for r in q.relevant}
    assert corpora == set(check.CORPORA)


def test_code_set_points_at_code_with_locations(report):
    code = [q for q in report.questions if q.source == "code-qa.jsonl"]
    for q in code:
        assert all(r.corpus.startswith("code_") and r.start is not None for r in q.relevant), q.id


def test_code_questions_are_not_repeated_in_docs_set(report):
    docs = {q.question.lower() for q in report.questions if q.source == "docs-qa.jsonl"}
    code = {q.question.lower() for q in report.questions if q.source == "code-qa.jsonl"}
    assert docs.isdisjoint(code)


def _line(**fields) -> str:
    base = {"id": "argo-999", "question": "how do I do a thing", "relevant": ["pdfs/a.pdf#page=2"]}
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not None})


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("{not json", "not JSON"),
        (_line(id="Argo_1"), "id"),
        (_line(relevant=[]), "non-empty list"),
        (_line(relevant=["elsewhere/a.md"]), "must start with one of"),
        (_line(relevant=["md_argocd_docs/a.md#L9-L3"]), "bad line range"),
        (_line(relevant=["md_argocd_docs/a.md#L1"]), "malformed"),
        (_line(relevant=["pdfs/a.pdf#page=0"]), "bad page"),
        (_line(relevant=["md_argocd_docs/../x.md"]), "'..'"),
        (_line(grade=[2, 1]), "grade"),
        (_line(grade=[1]), "grade"),
        (_line(kind="vibes"), "kind"),
        (_line(extra=1), "unknown keys"),
    ],
)
def test_malformed_lines_are_reported(raw, fragment):
    result = check.parse_line("docs-qa.jsonl", 1, raw)
    assert isinstance(result, list)
    assert any(fragment in error for error in result), result


def test_code_set_requires_locations():
    raw = _line(relevant=["code_scrapy_py/scrapy/a.py"])
    assert isinstance(check.parse_line("code-qa.jsonl", 1, raw), list)
    assert isinstance(check.parse_line("docs-qa.jsonl", 1, raw), check.Question)


def test_duplicates_and_overused_files_are_reported(tmp_path):
    rel = "md_argocd_docs/docs/a.md"
    lines = [
        _line(id=f"argo-00{i}", question=f"question number {i}", relevant=[rel]) for i in range(4)
    ]
    lines.append(_line(id="argo-000", question="question number 0 again", relevant=["pdfs/b.pdf"]))
    path = tmp_path / "docs-qa.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    errors = check.check_format([path]).errors
    assert "duplicate id argo-000" in errors
    assert any(rel in e and "at most" in e for e in errors)


def test_data_check_reports_missing_files_and_ranges(tmp_path):
    corpus = tmp_path / "md_argocd_docs"
    corpus.mkdir()
    (corpus / "a.md").write_text("one\ntwo\nthree\n", encoding="utf-8")
    lines = [
        _line(id="argo-001", question="inside the file", relevant=["md_argocd_docs/a.md#L1-L3"]),
        _line(id="argo-002", question="past the end", relevant=["md_argocd_docs/a.md#L2-L4"]),
        _line(id="argo-003", question="no such file", relevant=["md_argocd_docs/b.md"]),
    ]
    path = tmp_path / "docs-qa.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    errors = check.check_data(check.check_format([path]), tmp_path)
    assert len(errors) == 2
    assert any("argo-002" in e and "3 lines" in e for e in errors)
    assert any("argo-003" in e and "does not exist" in e for e in errors)
