"""How long the process that holds a knowledge base lives, chosen by the face that builds it.

- ONE_SHOT: one `kb` command. Loads the model fast and keeps nothing; vectors are searched by
  sqlite-vec.
- WARM: the warm search server (`cli/warm/server.py`). Lives long but must answer exactly as
  a one-shot call would: the model without prepacked kernels (they round differently), and
  sqlite-vec's answers shortlisted from memory instead of a full scan.
- SERVE: `kb serve`, `kb watch`, `kb eval`. Keeps every model once loaded (weights
  prepacked, warmed up) and holds the vectors in memory (the live matrix).
"""

from __future__ import annotations

from enum import Enum


class Profile(Enum):
    ONE_SHOT = "one-shot"
    WARM = "warm"
    SERVE = "serve"

    @property
    def keeps_models(self) -> bool:
        """Models are loaded for many calls and kept (prepacked, warmed up)."""
        return self is Profile.SERVE

    @property
    def answers_as_one_shot(self) -> bool:
        """Answers must match a one-shot call's to the last digit."""
        return self is Profile.WARM
