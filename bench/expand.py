"""Expansion study: `kb eval`'s hybrid+expand row with a scripted chat model, good and bad.

No generative model runs offline, so tests/model_server.py plays the chat model: for each
question it returns a scripted expansion, one of
  good      the question's own `variants` (what --also searches: hybrid+expand should match
            hybrid+variants)
  offtopic  keywords and a rephrasing about something no document is about
  oneword   the question's longest word, as keywords and as a rephrasing
  oneword-off  one word the question does not have ("configuration"), both ways
  repeat    the question itself, as keywords and as a rephrasing
and `kb eval` scores hybrid, hybrid+variants and hybrid+expand over the KB in KBDIR (file
level: hit@5, MRR@10). Bad expansions must stay within 0.01 of hybrid on both. `--as-also`
also scores each kind's phrasings given as `--also` variants (no gate: how they fused before).

    python -m bench expand --questions eval/questions/docs-qa.jsonl:/tmp/md \
        --only md_argocd_docs/ [--kinds good,offtopic] [--as-also] [--json OUT]

`--only PREFIX` keeps the questions whose relevant paths start with PREFIX (a set's part that
the KB holds). Each kind gets its own model name, so the expansion cache never mixes them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx2 as httpx

from kb_search.config import load_config
from kb_search.knowledge_base import KnowledgeBase
from kb_search.profile import Profile

SERVER = Path(__file__).resolve().parents[1] / "tests" / "model_server.py"
KINDS = ("good", "offtopic", "oneword", "oneword-off", "repeat")
OFF_TOPIC = (
    "lex: sourdough starter hydration proofing basket\n"
    "vec: how long should bread dough rise before it goes in the oven"
)


def scripted(question: dict, kind: str) -> str:
    text = question["question"]
    if kind == "good":
        return "\n".join(question.get("variants", []))
    if kind == "offtopic":
        return OFF_TOPIC
    if kind == "oneword":
        word = max(re.findall(r"\w+", text), key=len)
        return f"lex: {word}\nvec: {word}"
    if kind == "oneword-off":
        word = "configuration" if "configuration" not in text.lower() else "settings"
        return f"lex: {word}\nvec: {word}"
    return f"lex: {text}\nvec: {text}"


def fixture(questions: list[dict], kind: str) -> dict:
    return {
        "replies": [{"match": q["question"], "reply": scripted(q, kind)} for q in questions],
        "default": "",
    }


def load(path: Path, only: str | None) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    if only:
        rows = [r for r in rows if any(p.startswith(only) for p in r["relevant"])]
    return rows


class Server:
    def __init__(self, work: Path) -> None:
        (work / "fixture.json").write_text("{}")
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
        self.process = subprocess.Popen(
            [sys.executable, str(SERVER), str(work / "fixture.json"), str(work)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        line = self.process.stdout.readline()
        self.url = f"http://127.0.0.1:{int(line.split()[1])}"

    def script(self, data: dict) -> None:
        httpx.post(f"{self.url}/_fixture", json=data, timeout=30).raise_for_status()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def row(report: dict, mode: str) -> dict[str, float]:
    scores = next(s for s in report["scores"] if s.mode == mode)
    return {"hit@5": scores.file["hit@5"], "mrr@10": scores.file["mrr@10"]}


def run_set(questions_path: Path, kb_dir: Path, only: str | None, kinds: list[str], work: Path,
            server: Server, as_also: bool = False) -> dict:  # fmt: skip
    questions = load(questions_path, only)
    subset = work / f"{questions_path.stem}.jsonl"
    subset.write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    out: dict[str, dict] = {"questions": len(questions)}
    for kind in kinds:
        server.script(fixture(questions, kind))
        if "hybrid" in out:  # hybrid+variants is scored once: the rest score hybrid+expand
            bare = [{k: v for k, v in q.items() if k != "variants"} for q in questions]
            subset.write_text("".join(json.dumps(q) + "\n" for q in bare), encoding="utf-8")
        env = {
            "KB_DATA_DIR": str(kb_dir),
            "KB_LLM_MODEL": f"openai:scripted-{kind}",
            "KB_LLM_ENDPOINT": f"{server.url}/v1",
            "HOME": str(work),
        }
        with KnowledgeBase(load_config(env=env), profile=Profile.SERVE) as kb:
            report = kb.eval(subset, ["hybrid"])
        if "hybrid" not in out:
            out["hybrid"] = row(report, "hybrid")
            out["hybrid+variants"] = row(report, "hybrid+variants")
        out[f"hybrid+expand ({kind})"] = row(report, "hybrid+expand")
        print(f"  {questions_path.stem} {kind}: {out[f'hybrid+expand ({kind})']}", flush=True)
        if as_also:  # before: the same phrasings fused as --also (no gate, nothing dropped)
            out[f"as --also ({kind})"] = also_row(questions, kind, kb_dir, work, subset)
    return out


def also_row(questions: list[dict], kind: str, kb_dir: Path, work: Path, subset: Path) -> dict:
    scripted_as_variants = [
        {**q, "variants": [v for v in scripted(q, kind).splitlines() if v.strip()]}
        for q in questions
    ]
    subset.write_text("".join(json.dumps(q) + "\n" for q in scripted_as_variants), "utf-8")
    env = {"KB_DATA_DIR": str(kb_dir), "HOME": str(work)}
    with KnowledgeBase(load_config(env=env), profile=Profile.SERVE) as kb:
        report = kb.eval(subset, ["hybrid"])
    return row(report, "hybrid+variants")


def table(results: dict[str, dict]) -> str:
    lines = [
        "| set | n | row | hit@5 | MRR@10 | Δhit@5 vs hybrid | ΔMRR@10 |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, rows in results.items():
        base = rows["hybrid"]
        for label, scores in rows.items():
            if label == "questions":
                continue
            d5 = scores["hit@5"] - base["hit@5"]
            dm = scores["mrr@10"] - base["mrr@10"]
            lines.append(
                f"| {name} | {rows['questions']} | {label} | {scores['hit@5']:.3f} |"
                f" {scores['mrr@10']:.3f} | {d5:+.3f} | {dm:+.3f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", action="append", required=True, help="FILE:KBDIR")
    parser.add_argument("--only", action="append", default=[], help="PREFIX per --questions")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--as-also", action="store_true", help="also score each kind fused as --also (before)"
    )
    args = parser.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        server = Server(work)
        try:
            for number, spec in enumerate(args.questions):
                path, _, kb_dir = spec.rpartition(":")
                only = args.only[number] if number < len(args.only) and args.only[number] else None
                results[Path(path).stem] = run_set(
                    Path(path), Path(kb_dir), only, kinds, work, server, args.as_also
                )
        finally:
            server.stop()
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0
