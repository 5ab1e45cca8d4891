"""Named implementations of one kind (executors, vector index backends, ...), each written as
"module:attribute" and imported only when chosen: a local run never imports Ray, a lexical
search never imports numpy. Every entry of a registry has the one signature its kind states."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from functools import reduce
from typing import Generic, TypeVar

from kb_search.errors import KbError

T = TypeVar("T")


class Registry(Generic[T]):
    """`kind` names what is registered in the error for an unknown name ("executor"), which
    is raised as `error` and lists the names there are."""

    def __init__(self, kind: str, entries: Mapping[str, str], error: type[KbError]):
        for where in entries.values():
            module, _, attribute = where.partition(":")
            if not module or not attribute:
                raise ValueError(f"a {kind} is 'module:attribute', not {where!r}")
        self.kind = kind
        self.error = error
        self._entries = dict(entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def where(self, name: str) -> str:
        """The "module:attribute" of `name`."""
        if name not in self._entries:
            raise self.error(
                f"unknown {self.kind} {name!r}: use one of {', '.join(sorted(self._entries))}"
            )
        return self._entries[name]

    def load(self, name: str) -> T:
        """The object `name` registers, its module imported now (once: Python keeps it)."""
        module, _, attribute = self.where(name).partition(":")
        return reduce(getattr, attribute.split("."), importlib.import_module(module))
