"""Chinese, Japanese and Korean text: what the unicode61 tokenizer cannot segment."""

from __future__ import annotations

import re
from functools import cache

# Kana, CJK ideographs (+ extension A, compatibility) and Hangul.
CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"


@cache
def _pattern(runs: bool) -> re.Pattern[str]:
    # Compiled on the first text that is not ASCII: this class costs ~7 ms to compile, which a
    # one-shot search of English words would otherwise pay at import.
    return re.compile(f"[{CJK_CHARS}]+" if runs else f"[{CJK_CHARS}]")


def has_cjk(text: str) -> bool:
    return not text.isascii() and _pattern(False).search(text) is not None


def cjk_runs(text: str) -> list[str]:
    """The stretches of CJK characters in text, in order."""
    return [] if text.isascii() else _pattern(True).findall(text)
