"""Named implementations of one kind (executors, vector index backends, rerankers, embedding
models, file parsers), each written as "module:attribute" and imported only when chosen: a local
run never imports Ray, a lexical search never imports numpy. Every entry of a registry has the
one signature its kind states. An entry made in process (a test's model, a plugin's reranker)
is registered as the object itself."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, MutableMapping
from functools import reduce
from typing import Generic, TypeVar

from kb_search.errors import KbError

T = TypeVar("T")


class Registry(MutableMapping[str, "str | T"], Generic[T]):
    """`kind` names what is registered in the error for an unknown name ("executor"), which
    is raised as `error` and lists the names there are."""

    def __init__(self, kind: str, entries: Mapping[str, str | T], error: type[KbError]):
        self.kind = kind
        self.error = error
        self._entries: dict[str, str | T] = {}
        for name, entry in entries.items():
            self[name] = entry

    def __setitem__(self, name: str, entry: str | T) -> None:
        if isinstance(entry, str):
            module, _, attribute = entry.partition(":")
            if not module or not attribute:
                raise ValueError(f"a {self.kind} is 'module:attribute', not {entry!r}")
        self._entries[name] = entry

    def __getitem__(self, name: str) -> str | T:
        return self._entries[name]

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def where(self, name: str) -> str | T:
        """The "module:attribute" of `name` (the object itself for one made in process)."""
        if name not in self._entries:
            raise self.error(
                f"unknown {self.kind} {name!r}: use one of {', '.join(sorted(self._entries))}"
            )
        return self._entries[name]

    def load(self, name: str) -> T:
        """The object `name` registers, its module imported now (once: Python keeps it)."""
        entry = self.where(name)
        if not isinstance(entry, str):
            return entry
        module, _, attribute = entry.partition(":")
        return reduce(getattr, attribute.split("."), importlib.import_module(module))
