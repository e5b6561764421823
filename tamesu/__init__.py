"""tamesu: test conversational and voice AI agents the way users would.

The public functions load lazily so that ``import tamesu`` (and ``tamesu --help``) stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tamesu.version import __version__

__all__ = ["__version__", "run", "validate"]

_LAZY = {
    "run": ("tamesu.runner.api", "run"),
    "validate": ("tamesu.config.loader", "validate"),
}

if TYPE_CHECKING:
    from tamesu.config.loader import validate
    from tamesu.runner.api import run


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tamesu' has no attribute {name!r}")
