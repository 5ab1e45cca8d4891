"""The indexes the adversarial suite attacks: a KnowledgeBase with the fast test embedder and
a small corpus of varied text."""

from __future__ import annotations

from pathlib import Path

from kb_search.config import load_config
from kb_search.knowledge_base import KnowledgeBase
from kb_testing import HashEmbedder


def make_kb(root: Path, **env: str) -> KnowledgeBase:
    """A KnowledgeBase on `root/data` with the fast test embedder, parsing in-process."""
    config = load_config(env={"KB_DATA_DIR": str(root / "data"), "KB_WORKERS": "0", **env})
    return KnowledgeBase(config, embedder=HashEmbedder(), cwd=root)


CORPUS = {
    "notes/git.md": "---\ntitle: Git notes\ntags: [git, tools]\n---\n# Git Admin Guide\n\n"
    "## Installing\n\nTo install git from source run make and make install.\n\n## Hooks\n\n"
    "Server hooks reject force pushes to the main branch. NEAR AND OR NOT title: are words.\n",
    "notes/pasta.txt": "Cooking pasta: boil salted water, add the spaghetti and cook nine"
    " minutes. Drain; toss with olive oil & garlic. 50% of the time it's \"al dente\".\n",
    "notes/日本語.md": "# 東京の天気\n\n今日は晴れです。明日は雨が降るでしょう。"
    "漢字とかなの混在テキスト。\n",
    "notes/rtl.md": "# שלום עולם\n\nمرحبا بالعالم — Hebrew and Arabic text, right to left. 😀🎉\n",
    "code/app.py": "def install(package: str) -> None:\n"
    "    \"\"\"Install a package from source.\"\"\"\n"
    "    print(f'installing {package}')\n\n\nclass Hook:\n    def run(self):\n        return 42\n",
    "code/main.go": "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"git\")\n}\n",
    "deep/a/b/c/d/readme.rst": "Deep folder\n===========\n\nA readme far down the tree about"
    " backups, rsync and cron jobs.\n",
    "tables.md": "# Table\n\n| name | value |\n|---|---|\n| alpha | 1 |\n| beta | 2 |\n\n"
    "```python\nprint('fenced')\n```\n",
}


def write_corpus(folder: Path) -> None:
    for rel, text in CORPUS.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
