"""Chinese, Japanese and Korean text: what the unicode61 tokenizer cannot segment."""

from __future__ import annotations

import re
from functools import cache
from itertools import product
from typing import Any

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


# A run whose characters have more spellings than this between them is searched as written,
# in its new forms and in its old forms only (every mix of forms would be too many phrases).
MAX_FORMS = 16
# The ideographs OpenCC's table is read for: the unified block, extension A, compatibility.
_IDEOGRAPHS = ((0x3400, 0x4DC0), (0x4E00, 0xA000), (0xF900, 0xFB00))


@cache
def _kanji_forms() -> tuple[Any, Any, dict[str, str]]:
    """OpenCC's converters to the new (shinjitai) and old (kyujitai) Japanese forms, and each
    ideograph's other spellings as a string (澤 -> 沢澤, 沢 -> 沢澤). Built on the first CJK
    query (~25 ms): searches of other text never load OpenCC."""
    import opencc

    to_new, to_old = opencc.OpenCC("t2jp.json"), opencc.OpenCC("jp2t.json")
    chars = [chr(c) for low, high in _IDEOGRAPHS for c in range(low, high)]
    # One character a line: the phrase table must not join neighbours.
    folded = to_new.convert("\n".join(chars)).split("\n")
    groups: dict[str, set[str]] = {}
    for char, new in zip(chars, folded, strict=True):
        if char != new and len(new) == 1:
            groups.setdefault(new, {new}).add(char)
    spellings = {c: "".join(sorted(group)) for group in groups.values() for c in group}
    return to_new, to_old, spellings


def kanji_variants(run: str) -> list[str]:
    """`run` and its spellings with old and new kanji forms folded (宮沢 <-> 宮澤, 國 <-> 国),
    `run` first: what a CJK substring search looks for, so a question in one form finds a
    text in the other. The forms are OpenCC's Japanese variant tables."""
    if not has_cjk(run):
        return [run]
    to_new, to_old, spellings = _kanji_forms()
    choices = [spellings.get(c, c) for c in run]
    count = 1
    for choice in choices:
        count *= len(choice)
    if count > MAX_FORMS:
        forms = [run, to_new.convert(run), to_old.convert(run)]
    else:
        forms = [run, *("".join(p) for p in product(*choices))]
    return list(dict.fromkeys(forms))
