"""The PostgreSQL manual subset that pg-qa is scored on when the whole manual is too slow to
embed twice: the pages the questions cite plus every third other page (name order), 300 of
them. Copies them to TARGET/html (kb add TARGET/html: rel paths stay `html/<page>`).

    python -m bench pg_subset /usr/share/doc/postgresql-doc-15/html /tmp/pg-subset
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

QUESTIONS = Path(__file__).resolve().parents[1] / "eval" / "questions" / "pg-qa.jsonl"
OTHERS = 300


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    source, target = Path(args[0]), Path(args[1]) / "html"
    cited = set()
    for line in QUESTIONS.read_text(encoding="utf-8").splitlines():
        cited.update(entry.split("/", 1)[1] for entry in json.loads(line)["relevant"])
    pages = sorted(path.name for path in source.glob("*.html"))
    others = [name for name in pages if name not in cited][::3][:OTHERS]
    target.mkdir(parents=True, exist_ok=True)
    for name in sorted(cited) + others:
        shutil.copy2(source / name, target / name)
    print(f"{len(cited)} cited + {len(others)} other pages in {target}")


if __name__ == "__main__":
    main()
