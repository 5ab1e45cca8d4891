"""Validate the question sets in this folder (stdlib only; pypdfium2 is used when importable).

Usage: python eval/questions/check.py DATA_ROOT [FILE.jsonl ...]

Without DATA_ROOT checks only the format. With it, every relevant path must exist under
DATA_ROOT, line ranges must lie inside the file and pages inside the PDF. Prints counts per
corpus and per kind. Exit status 0 when everything passes, 1 otherwise.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPORA = ("md_argocd_docs", "pdfs", "code_scrapy_py", "code_argocd_go")
# `html`: the PostgreSQL 15 manual of pg-qa.jsonl (apt-get install postgresql-doc-15; its data
# root is /usr/share/doc/postgresql-doc-15), not one of the shared corpora above.
# `texlive-doc`: the TeX Live documentation of pdf-qa.jsonl (apt-get install texlive-latex-extra-doc
# texlive-humanities-doc; its data root is /usr/share/doc, see README.md).
OTHER_CORPORA = ("html", "texlive-doc")
KINDS = ("howto", "concept", "troubleshoot", "reference", "identifier", "code-where", "code-how")
MAX_QUESTIONS_PER_FILE = 3
# A relevant entry: corpus/path, optionally #L<start>-L<end> or #page=<n>.
RELEVANT_RE = re.compile(
    r"^(?P<path>[^#\s]+)(?:#L(?P<start>\d+)-L(?P<end>\d+)|#page=(?P<page>\d+))?$"
)
ID_RE = re.compile(r"^[a-z]+-[a-z]*\d{3}$")
# Sets whose every entry must point at a location (a function, a passage).
LOCATED_SETS = ("code-qa.jsonl",)


@dataclass(frozen=True)
class Relevant:
    path: str
    start: int | None = None
    end: int | None = None
    page: int | None = None

    @property
    def corpus(self) -> str:
        return self.path.split("/", 1)[0]


@dataclass
class Question:
    source: str
    line: int
    id: str
    question: str
    relevant: list[Relevant]
    grade: list[int] | None
    kind: str | None


@dataclass
class Report:
    questions: list[Question] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def parse_relevant(text: str) -> Relevant | str:
    """A Relevant, or an error message when the entry is malformed."""
    m = RELEVANT_RE.match(text)
    if not m:
        return f"malformed relevant entry {text!r}"
    path = m["path"]
    if path.split("/", 1)[0] not in CORPORA + OTHER_CORPORA or "/" not in path:
        return f"relevant path {path!r} must start with one of {', '.join(CORPORA + OTHER_CORPORA)}"
    if ".." in path.split("/"):
        return f"relevant path {path!r} must not contain '..'"
    if m["start"]:
        start, end = int(m["start"]), int(m["end"])
        if start < 1 or end < start:
            return f"bad line range in {text!r}"
        return Relevant(path, start, end)
    if m["page"]:
        page = int(m["page"])
        if page < 1:
            return f"bad page in {text!r}"
        return Relevant(path, page=page)
    return Relevant(path)


def parse_line(source: str, lineno: int, raw: str) -> Question | list[str]:
    """A Question, or the list of problems with this line."""
    where = f"{source}:{lineno}"
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        return [f"{where}: not JSON ({exc})"]
    if not isinstance(obj, dict):
        return [f"{where}: not a JSON object"]
    errors: list[str] = []
    unknown = set(obj) - {"id", "question", "relevant", "grade", "kind", "variants"}
    if unknown:
        errors.append(f"{where}: unknown keys {sorted(unknown)}")
    qid, question, relevant = obj.get("id"), obj.get("question"), obj.get("relevant")
    if not isinstance(qid, str) or not ID_RE.match(qid):
        errors.append(f"{where}: id {qid!r} must look like 'argo-012'")
    if not isinstance(question, str) or len(question.split()) < 2:
        errors.append(f"{where}: question must be a string of at least two words")
    if (
        not isinstance(relevant, list)
        or not relevant
        or not all(isinstance(r, str) for r in relevant)
    ):
        errors.append(f"{where}: relevant must be a non-empty list of strings")
        relevant = []
    if len(set(relevant)) != len(relevant):
        errors.append(f"{where}: duplicate relevant entries")
    parsed: list[Relevant] = []
    for text in relevant:
        rel = parse_relevant(text)
        if isinstance(rel, str):
            errors.append(f"{where}: {rel}")
        else:
            parsed.append(rel)
    grade = obj.get("grade")
    if grade is not None and (
        not isinstance(grade, list)
        or len(grade) != len(relevant)
        or not all(g in (1, 2) for g in grade)
        or 2 not in grade
    ):
        errors.append(f"{where}: grade must be a list of 1/2 parallel to relevant, with a 2")
    variants = obj.get("variants")
    if variants is not None and (
        not isinstance(variants, list)
        or len(variants) > 4
        or not all(isinstance(v, str) and v.strip() for v in variants)
    ):
        errors.append(f"{where}: variants must be a list of up to 4 non-empty strings")
    kind = obj.get("kind")
    if kind is not None and kind not in KINDS:
        errors.append(f"{where}: kind {kind!r} not one of {', '.join(KINDS)}")
    if Path(source).name in LOCATED_SETS and any(r.start is None for r in parsed):
        errors.append(f"{where}: every entry of {Path(source).name} needs a #Lstart-Lend location")
    if errors:
        return errors
    return Question(source, lineno, qid, question, parsed, grade, kind)


def check_format(files: list[Path]) -> Report:
    """Parse every file; ids unique across files; no file relevant to too many questions."""
    report = Report()
    for path in files:
        for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not raw.strip():
                report.errors.append(f"{path.name}:{lineno}: blank line")
                continue
            result = parse_line(path.name, lineno, raw)
            if isinstance(result, Question):
                report.questions.append(result)
            else:
                report.errors.extend(result)
    ids = Counter(q.id for q in report.questions)
    report.errors += [f"duplicate id {qid}" for qid, n in ids.items() if n > 1]
    texts = Counter(q.question.strip().lower() for q in report.questions)
    report.errors += [f"duplicate question {t!r}" for t, n in texts.items() if n > 1]
    per_file: Counter[str] = Counter()
    for q in report.questions:
        per_file.update({r.path for r in q.relevant})
    report.errors += [
        f"{path} is relevant to {n} questions (at most {MAX_QUESTIONS_PER_FILE})"
        for path, n in per_file.items()
        if n > MAX_QUESTIONS_PER_FILE
    ]
    return report


def _pdf_page_count(path: Path) -> int | None:
    try:
        import pypdfium2  # type: ignore[import-not-found]
    except ImportError:
        return None
    pdf = pypdfium2.PdfDocument(str(path))
    try:
        return len(pdf)
    finally:
        pdf.close()


def check_data(report: Report, root: Path) -> list[str]:
    """Every relevant path exists under root, with its lines or page inside it."""
    errors: list[str] = []
    line_counts: dict[str, int] = {}
    page_counts: dict[str, int | None] = {}
    for q in report.questions:
        for rel in q.relevant:
            where = f"{q.source}:{q.line} ({q.id})"
            target = root / rel.path
            if not target.is_file():
                errors.append(f"{where}: {rel.path} does not exist under {root}")
                continue
            if rel.start is not None:
                if rel.path not in line_counts:
                    line_counts[rel.path] = len(target.read_bytes().splitlines())
                if rel.end is not None and rel.end > line_counts[rel.path]:
                    errors.append(
                        f"{where}: {rel.path} has {line_counts[rel.path]} lines, cited L{rel.end}"
                    )
            if rel.page is not None:
                if target.suffix.lower() != ".pdf":
                    errors.append(f"{where}: #page= on a file that is not a PDF: {rel.path}")
                    continue
                if rel.path not in page_counts:
                    page_counts[rel.path] = _pdf_page_count(target)
                pages = page_counts[rel.path]
                if pages is not None and rel.page > pages:
                    errors.append(f"{where}: {rel.path} has {pages} pages, cited page {rel.page}")
    return errors


def summary(report: Report) -> str:
    """Counts per set, corpus (a question counts once per corpus it cites) and kind."""
    lines = []
    for source in sorted({q.source for q in report.questions}):
        qs = [q for q in report.questions if q.source == source]
        corpora: Counter[str] = Counter()
        for q in qs:
            corpora.update({r.corpus for r in q.relevant})
        kinds = Counter(q.kind or "-" for q in qs)
        located = sum(all(r.start or r.page for r in q.relevant) for q in qs)
        files = len({r.path for q in qs for r in q.relevant})
        lines.append(
            f"{source}: {len(qs)} questions, {files} distinct files, {located} fully located"
        )
        lines.append("  per corpus: " + ", ".join(f"{c} {n}" for c, n in sorted(corpora.items())))
        lines.append("  per kind:   " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
        words = sorted(len(q.question.split()) for q in qs)
        median = words[len(words) // 2]
        lines.append(f"  words per question: min {words[0]}, median {median}, max {words[-1]}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else None
    files = [Path(a) for a in argv[1:]] or sorted(HERE.glob("*.jsonl"))
    report = check_format(files)
    errors = list(report.errors)
    pdf_note = ""
    if root is not None:
        if not root.is_dir():
            print(f"data root {root} is not a directory", file=sys.stderr)
            return 1
        errors += check_data(report, root)
        if not _pdf_importable():
            pdf_note = " (pypdfium2 not importable: PDF page numbers not checked)"
    for error in errors:
        print(f"ERROR {error}")
    print(summary(report))
    status = "FAIL" if errors else "OK"
    scope = "format and data" if root is not None else "format only"
    print(f"{status}: {len(report.questions)} questions, {len(errors)} errors ({scope}){pdf_note}")
    return 1 if errors else 0


def _pdf_importable() -> bool:
    try:
        import pypdfium2  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
