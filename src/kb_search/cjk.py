"""Chinese, Japanese and Korean text: what the unicode61 tokenizer cannot segment."""

from __future__ import annotations

import re

# Kana, CJK ideographs (+ extension A, compatibility) and Hangul.
CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK = re.compile(f"[{CJK_CHARS}]")


def has_cjk(text: str) -> bool:
    return bool(_CJK.search(text))
