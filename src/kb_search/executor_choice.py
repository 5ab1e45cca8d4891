"""Where ingestion's heavy work runs, as the face chose it: an executor's name (an entry of
`ingest.executor.EXECUTORS`: "local", "ray") and its options, built once and passed down to
the executor unchanged. An executor's options are its `ingestion.NAME_*` settings without the
prefix (Ray's: `address`, `stall_s`), each replaceable by a flag."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from kb_search.config import Config


@dataclass(frozen=True)
class ExecutorChoice:
    name: str = "local"
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    def option(self, key: str, default: Any = None) -> Any:
        return self.options.get(key, default)

    @classmethod
    def configured(cls, config: Config, name: str | None = None, **given: Any) -> ExecutorChoice:
        """`name` (default: `ingestion.executor`) with its settings; `given` values that are
        not None (`--address`) replace them."""
        name = name or config["ingestion.executor"]
        prefix = f"ingestion.{name}_"
        options = {
            key.removeprefix(prefix): value
            for key, value in config.values.items()
            if key.startswith(prefix)
        }
        options.update({key: value for key, value in given.items() if value is not None})
        return cls(name, options)
