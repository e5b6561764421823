"""Plugins from installed packages' entry points, loaded one way for every registry.

The target types and assertion kinds (``tamesu.targets``, ``tamesu.assertions``), the custom
assertions (``tamesu.assertions``) and the red-team playbooks (``tamesu.playbooks``) are found
here. A plugin that fails to load, or registers something that is not what its group holds, is a
``ConfigError`` naming the plugin, its package and its error: the command stops (exit 2) instead
of running as if the plugin's names did not exist, and never shows a traceback. The installed
entry points are read once per import path (each read scans every package's metadata).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from tamesu.errors import ConfigError

__all__ = ["PluginError", "load_group"]


class PluginError(ConfigError):
    """An installed plugin could not be loaded, or gave something its group does not hold."""


def _installed() -> Any:
    import sys

    return _read(tuple(sys.path))


@functools.lru_cache(maxsize=4)
def _read(path: tuple[str, ...]) -> Any:
    """Every installed entry point, read once per import path (a folder added to ``sys.path`` may
    hold a distribution of its own)."""
    from importlib.metadata import entry_points

    return entry_points()


def _named(ep: Any, group: str) -> str:
    dist = f" of {ep.dist.name}" if getattr(ep, "dist", None) is not None else ""
    return f"the plugin {ep.name} ({ep.value}){dist} in {group}"


def load_group(group: str, *, convert: Callable[[Any], Any] | None = None) -> list[tuple[str, Any]]:
    """(name, object) of every entry point of ``group``, in order; ``convert`` turns what an entry
    point names into what the group holds, raising (``ValueError``: why) when it cannot. Raises
    ``PluginError`` for the first plugin that fails to load or convert, naming it."""
    out = []
    for ep in _installed().select(group=group):
        try:
            loaded = ep.load()
        except Exception as exc:
            raise PluginError(
                f"{_named(ep, group)} failed to load: {type(exc).__name__}: {exc}",
                hint="fix or uninstall the plugin",
            ) from None
        if convert is not None:
            try:
                loaded = convert(loaded)
            except Exception as exc:
                why = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
                raise PluginError(
                    f"{_named(ep, group)} is not usable: {why}", hint="fix or uninstall the plugin"
                ) from None
        out.append((ep.name, loaded))
    return out
