"""Target adapters, one module per target type; a type's config model names its adapter
(``tamesu.config.targets``) and the registry imports it on first use."""

from __future__ import annotations

from tamesu.targets.base import TargetAdapter, TargetContext, target, targets

__all__ = ["TargetAdapter", "TargetContext", "target", "targets"]
