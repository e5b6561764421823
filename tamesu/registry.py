"""One small registry type behind every extensible kind (targets, assertions, providers, ...).

Entries are filled by decorators in the modules that define them; a module path may be registered
instead of the object so that heavy modules load only when their entry is first used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

__all__ = ["Registry"]


class Registry(Generic[T]):
    """Name -> object, with lazy entries given as ``"package.module:attr"`` strings."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T | str] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def deco(obj: T) -> T:
            self._items[name] = obj
            return obj

        return deco

    def add(self, name: str, obj: T | str) -> None:
        """Register an object, or a lazy ``module:attr`` reference to it."""
        self._items[name] = obj

    def get(self, name: str) -> T:
        try:
            item = self._items[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; known: {', '.join(sorted(self._items))}") from None
        if isinstance(item, str):
            module, _, attr = item.partition(":")
            loaded = getattr(importlib.import_module(module), attr)
            self._items[name] = loaded
            return loaded  # type: ignore[no-any-return]
        return item

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
