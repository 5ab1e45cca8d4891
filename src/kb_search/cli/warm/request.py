"""A search as the full CLI sends it to the warm server (the front door sends its argv)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class WarmRequest:
    query: str
    mode: str | None = None
    top: int | None = None
    min_score: float | None = None
    filters: dict[str, list[str]] = field(default_factory=dict)
    fusion: str | None = None
    # "json": the reply is the JSON `kb search` prints (projected to `fields` when given),
    # so the client needs no search code; "pickle": the SearchResponse, for human output
    reply: str = "pickle"
    fields: list[str] | None = None
    variants: list[str] = field(default_factory=list)
    per_file: int | None = None
    files: bool = False
    max_tokens: int | None = None
    cursor: str | None = None
