"""The playbooks registry: built-in playbooks, and those plugins add through an entry point.

A plugin adds a playbook with ``register_playbook(Playbook(...))`` in a module it imports, or by
naming, in the entry point group ``tamesu.playbooks`` of its package, a ``Playbook`` (or a function
returning one or a list of them). Entry points load the first time a name is asked for that the
built-ins do not have, so ``tamesu validate`` pays nothing for them in the usual case.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterable
from typing import Any

from tamesu.playbooks.model import Playbook
from tamesu.registry import Registry

__all__ = [
    "BUILTIN_PLAYBOOKS",
    "ENTRY_POINT_GROUP",
    "get_playbook",
    "playbook",
    "playbook_names",
    "playbooks",
    "register_playbook",
    "unknown_names",
]

ENTRY_POINT_GROUP = "tamesu.playbooks"

BUILTIN_PLAYBOOKS = (
    "prompt_injection",
    "system_prompt_extraction",
    "pii_extraction",
    "policy_drift",
    "jailbreak",
    "excessive_agency",
    "harmful_content",
    "out_of_scope",
    "authority_impersonation",
    "encoding",
    "crescendo",
    "voice",
)
"""In the order ``tamesu playbooks`` lists them; a test keeps this in step with the registry."""

playbooks: Registry[Playbook] = Registry("playbook")
_lock = threading.Lock()
_loaded: set[str] = set()


def register_playbook(book: Playbook, *, replace: bool = False) -> Playbook:
    """Add a playbook; a second one of the same name is an error unless ``replace``."""
    if not isinstance(book, Playbook):
        raise TypeError(f"a playbook must be a Playbook, not {type(book).__name__}")
    if book.name in playbooks and not replace:
        raise ValueError(f"a playbook named {book.name!r} is registered already")
    playbooks.add(book.name, book)
    return book


def playbook(fn: Callable[[], Playbook]) -> Playbook:
    """Decorator: register the playbook the function returns."""
    return register_playbook(fn())


def _builtins() -> None:
    importlib.import_module("tamesu.playbooks.injection")
    importlib.import_module("tamesu.playbooks.misuse")


def _plugins() -> None:
    """Installed playbooks (``tamesu.plugins``): an entry point names a ``Playbook``, a list of them,
    or a function that returns either; anything else is a configuration error naming the plugin."""
    from tamesu.plugins import load_group

    for name, items in load_group(ENTRY_POINT_GROUP, convert=_playbooks_of):
        if name in playbooks:
            continue
        for item in items:
            if item.name not in playbooks:
                register_playbook(item)


def _playbooks_of(loaded: Any) -> list[Playbook]:
    if callable(loaded) and not isinstance(loaded, Playbook):
        loaded = loaded()
    items = list(loaded) if isinstance(loaded, (list, tuple)) else [loaded]
    wrong = [type(item).__name__ for item in items if not isinstance(item, Playbook)]
    if wrong:
        raise ValueError(f"it gave {', '.join(wrong)}, not a Playbook")
    return items


def _once(key: str, load: Callable[[], None]) -> None:
    with _lock:
        if key not in _loaded:
            load()
            _loaded.add(key)


def playbook_names(*, plugins: bool = True) -> list[str]:
    """Every playbook: the built-ins in their order, then the others by name."""
    _once("builtin", _builtins)
    if plugins:
        _once("plugins", _plugins)
    rest = sorted(set(playbooks.names()) - set(BUILTIN_PLAYBOOKS))
    return [name for name in BUILTIN_PLAYBOOKS if name in playbooks] + rest


def unknown_names(names: Iterable[str]) -> list[str]:
    """Of ``names``, those that are no playbook (plugins are looked up only when needed)."""
    _once("builtin", _builtins)
    unknown = [n for n in names if n not in playbooks]
    if unknown:
        _once("plugins", _plugins)
    return [n for n in names if n not in playbooks]


def get_playbook(name: str) -> Playbook:
    if name not in playbooks:
        unknown_names([name])
    return playbooks.get(name)
