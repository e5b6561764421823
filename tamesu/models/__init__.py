"""Model roles, providers, retries and fallbacks, usage and budgets, and the response cache.

Nothing here imports a model SDK at import time; pydantic-ai and the provider clients load on the
first call.
"""

from __future__ import annotations

from tamesu.models.cache import ResponseCache
from tamesu.models.refs import ModelRef, missing_credentials, parse_ref
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
