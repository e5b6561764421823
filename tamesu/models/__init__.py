"""Model roles, providers, retries and fallbacks, usage and budgets, and the response cache.

Nothing here imports a model SDK at import time; pydantic-ai and the provider clients load on the
first call. The names below load on first use too, so ``tamesu.models.refs`` (what validate reads
to check a model reference) never pulls in the router, asyncio or an HTTP client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tamesu.models.refs import ModelRef, missing_credentials, parse_ref
    from tamesu.models.reply_cache import ResponseCache
    from tamesu.models.router import ChatMessage, Completion, ModelRouter, RetryPolicy, ToolSpec
    from tamesu.models.usage import CallUsage, UsageLedger

__all__ = [
    "CallUsage",
    "ChatMessage",
    "Completion",
    "ModelRef",
    "ModelRouter",
    "ResponseCache",
    "RetryPolicy",
    "ToolSpec",
    "UsageLedger",
    "missing_credentials",
    "parse_ref",
]

_LAZY: dict[str, str] = {
    "ResponseCache": "tamesu.models.reply_cache",
    "ModelRef": "tamesu.models.refs",
    "missing_credentials": "tamesu.models.refs",
    "parse_ref": "tamesu.models.refs",
    "ChatMessage": "tamesu.models.router",
    "Completion": "tamesu.models.router",
    "ModelRouter": "tamesu.models.router",
    "RetryPolicy": "tamesu.models.router",
    "ToolSpec": "tamesu.models.router",
    "CallUsage": "tamesu.models.usage",
    "UsageLedger": "tamesu.models.usage",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tamesu.models' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
