"""`kb eval QUESTIONS.jsonl`: file- and chunk-level scores over the indexed KB."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from kb_search.config import load_config
from kb_search.errors import EvalError
from kb_search.evaluate.questions import Target, gain_metrics, load_questions
from kb_search.knowledge_base import KnowledgeBase
from kb_testing import HashEmbedder

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample"


def write_questions(path: Path, items: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(i) for i in items) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def kb(tmp_path: Path):
    shutil.copytree(SAMPLE, tmp_path / "notes")
    config = load_config(env={"KB_DATA_DIR": str(tmp_path / "data"), "KB_WORKERS": "0"})
    with KnowledgeBase(config, embedder=HashEmbedder(), cwd=tmp_path) as knowledge_base:
        knowledge_base.add([tmp_path / "notes"])
        yield knowledge_base


def test_target_locations_parse():
    assert Target.parse("docs/a.md#L10-L24") == Target("docs/a.md", (10, 24))
    assert Target.parse("docs/a.md#L7") == Target("docs/a.md", (7, 7))
    assert Target.parse("x/p.pdf#page=3", 2) == Target("x/p.pdf", None, 3, 2)
    assert Target.parse("/abs/tail/file.py").path == "abs/tail/file.py"


def test_gain_metrics_by_hand():
    scores = gain_metrics([0, 2, 0, 1], [2, 1])
    assert scores["hit@1"] == 0.0 and scores["hit@5"] == 1.0
    assert scores["mrr@10"] == 0.5
    dcg = 2 / math.log2(3) + 1 / math.log2(5)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert scores["ndcg@10"] == pytest.approx(dcg / idcg)
    assert gain_metrics([0] * 20, [1])["hit@10"] == 0.0


def test_bad_question_files_are_one_line_errors(tmp_path):
    with pytest.raises(EvalError, match=":1: not a question line"):
        load_questions(write_questions(tmp_path / "q.jsonl", [{"question": "x"}]))
    dup = [{"id": "a", "question": "x", "relevant": ["a.md"]}] * 2
    with pytest.raises(EvalError, match="duplicate id 'a'"):
        load_questions(write_questions(tmp_path / "d.jsonl", dup))
    (tmp_path / "e.jsonl").write_text("\n")
    with pytest.raises(EvalError, match="no questions"):
        load_questions(tmp_path / "e.jsonl")


def test_questions_score_files_and_chunks_and_list_misses(kb, tmp_path):
    git = kb.reads.document("notes/docs/git-admin.md")
    source = next(c for c in git.chunks if "From source" in (c.heading or ""))
    lines = f"#L{source.lines[0]}-L{source.lines[1]}"
    questions = write_questions(
        tmp_path / "q.jsonl",
        [
            {"id": "git", "question": "install git from source", "relevant": [
                f"notes/docs/git-admin.md{lines}"]},
            {"id": "tail", "question": "sourdough starter", "relevant": ["notes/recipes.rst"]},
            {"id": "gone", "question": "nightly backup window", "relevant": ["nowhere/x.md"]},
        ],
    )  # fmt: skip
    report = kb.eval(questions, ["lexical", "hybrid"])
    assert report["kind"] == "questions" and report["questions"] == 3
    lexical = report["scores"][0]
    assert lexical.mode == "lexical" and lexical.chunk_questions == 1
    assert lexical.file["hit@1"] == pytest.approx(2 / 3)
    assert lexical.chunk["hit@1"] == 1.0 and lexical.chunk["ndcg@10"] == pytest.approx(1.0)
    (miss,) = lexical.misses
    assert miss["id"] == "gone" and miss["not_indexed"] == ["nowhere/x.md"]
    assert miss["file_rank"] is None and miss["top"]


def test_cli_eval_of_a_questions_file(kb, tmp_path, environment, sample):
    from click.testing import CliRunner

    from kb_search.cli import cli

    questions = write_questions(
        tmp_path / "mine.jsonl",
        [{"id": "1", "question": "install git", "relevant": ["my notes/docs/git-admin.md"]}],
    )
    runner = CliRunner()
    runner.invoke(cli, ["add", str(sample)], obj=environment, catch_exceptions=False)
    out = runner.invoke(
        cli, ["eval", str(questions), "--format", "human"], obj=environment, catch_exceptions=False
    )
    assert out.exit_code == 0, out.output
    assert "1 questions (0 with located answers)" in out.stdout
    assert "hybrid" in out.stdout and "hit@5" in out.stdout
    data = json.loads(
        runner.invoke(cli, ["eval", str(questions), "--format", "json"], obj=environment).stdout
    )
    assert {s["mode"] for s in data["scores"]} == {"lexical", "vector", "hybrid"}
    assert data["scores"][0]["file"]["hit@10"] == 1.0


def test_variants_are_scored_as_written_and_plain_with_coverage_per_grade(kb, tmp_path):
    questions = write_questions(
        tmp_path / "v.jsonl",
        [
            {"id": "git", "question": "install git", "relevant": ["notes/docs/git-admin.md"],
             "variants": ["lex: configure make prefix", "vec: build git from its source code"]},
            {"id": "bread", "question": "sourdough", "relevant": ["notes/recipes.rst"],
             "variants": ["lex: starter flour"]},
        ],
    )  # fmt: skip
    report = kb.eval(questions, ["hybrid"])
    modes = [s.mode for s in report["scores"]]
    assert modes == ["hybrid", "hybrid+variants", "hybrid+plain-variants"]
    for scores in report["scores"]:
        graded = scores.coverage
        assert sum(row["answers"] for row in graded.values()) == 2
        assert set(graded) <= {"strong", "partial", "weak"}
        assert all(0.0 <= row["hit@1"] <= row["hit@5"] <= 1.0 for row in graded.values())
        assert "coverage" in scores.to_dict()


def test_plain_variant_takes_the_prefix_off():
    from kb_search.evaluate.questions import plain_variant

    assert plain_variant("lex: max_connections") == "max_connections"
    assert plain_variant("VEC:how much memory") == "how much memory"
    assert plain_variant("note: a plain one") == "note: a plain one"
