"""Target adapters, one wing (sub-package) per target type: ``tamesu.targets.<type>.settings`` is the
type's config model, registered with ``@target_type`` naming its adapter (``<type>.adapter``, or the
wing's other modules), and the registry imports the adapter on first use.

This package and every wing's ``__init__`` import nothing, so reading a wing's settings (``tamesu
validate``) never loads an adapter; the public names below are imported when first asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tamesu.targets.base import TargetAdapter, TargetContext, target, targets

__all__ = ["TargetAdapter", "TargetContext", "target", "targets"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("tamesu.targets.base"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
