"""One `kb search`, built once from the command's click parameters (`SearchRequest.from_params`)
and run the same way by each of its three paths: in-process, by the warm server for the CLI's
warm client (sent as JSON: `to_dict` / `from_dict`), and by the warm server for the front door
(which sends its argv: the front door imports no click, so the server parses it with the
command's own options and builds the request with the same `from_params`). Both give
`KnowledgeBase.search_options` the request's `search_values`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import click

from kb_search.search.fields import FieldsConflict, chosen_fields
from kb_search.search.query import Filters


@dataclass
class SearchRequest:
    query: str
    mode: str | None = None
    top: int | None = None
    min_score: float | None = None
    filters: dict[str, list[str]] = field(default_factory=dict)
    fusion: str | None = None
    fields: list[str] | None = None  # --fields or --compact: the projection of the JSON
    variants: list[str] = field(default_factory=list)
    per_file: int | None = None
    files: bool = False
    max_tokens: int | None = None
    cursor: str | None = None
    fmt: str | None = None  # --format as given (None: by terminal)
    # what only the in-process search does
    explain: str | None = None
    expand: bool = False
    sync_stale: bool = False

    @classmethod
    def from_params(cls, p: Mapping[str, Any]) -> SearchRequest:
        """From `kb search`'s click parameters; a --fields/--compact conflict is a usage
        error."""
        try:
            selected = chosen_fields(p["fields"], p["compact"], ("--fields", "--compact"))
        except FieldsConflict as exc:
            raise click.UsageError(str(exc)) from None
        filters = (p[name] for name in ("types", "tags", "paths", "languages", "after", "before"))
        return cls(
            " ".join(p["query"]),
            mode=p["mode"],
            top=p["top"],
            min_score=p["min_score"],
            filters=filter_params(*filters),
            fusion=p["fusion"],
            fields=selected,
            variants=list(p["variants"]),
            per_file=p["per_file"],
            files=p["files"],
            max_tokens=p["max_tokens"],
            cursor=p["cursor"],
            fmt=p["fmt"],
            explain=p["explain"],
            expand=p["expand"],
            sync_stale=p["sync_stale"],
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SearchRequest:
        """The request `to_dict` sent (a warm client's, over the socket)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def warm_can_answer(self) -> bool:
        """--explain, --expand and --sync-stale run in-process only."""
        return self.explain is None and not self.expand and not self.sync_stale

    def search_values(self) -> dict[str, Any]:
        """What it asks of `KnowledgeBase.search_options` (None: the KB's default)."""
        return dict(
            mode=self.mode,
            top=self.top,
            filters=Filters(**{k: list(v) for k, v in self.filters.items()}),
            min_score=self.min_score,
            fusion=self.fusion,
            variants=tuple(self.variants),
            per_file=self.per_file,
            files=self.files,
            max_tokens=self.max_tokens,
            cursor=self.cursor,
            fields=tuple(self.fields) if self.fields else None,
        )


def filter_params(
    types: Iterable[str],
    tags: Iterable[str],
    paths: Iterable[str],
    languages: Iterable[str],
    after: str | None,
    before: str | None,
) -> dict[str, list[str]]:
    """The filter options (--type, --tag, --path, --lang, --after, --before) of `kb search`
    and `kb ask`, as `Filters` takes them."""
    return {
        "types": list(types),
        "tags": list(tags),
        "paths": list(paths),
        "languages": list(languages),
        "after": [after] if after else [],
        "before": [before] if before else [],
    }
