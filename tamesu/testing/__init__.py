"""Fakes for tests, shipped with tamesu so users can test their suites the way tamesu tests itself.

``serve_echo_agent`` runs a scripted echo agent on loopback; ``serve_model_server`` runs a
scripted model server speaking the OpenAI wire format. Both load aiohttp only when first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tamesu.testing.agents import EchoAgent, RecordedRequest, serve_echo_agent
    from tamesu.testing.model_server import ModelServer, Reply, serve_model_server

__all__ = ["EchoAgent", "ModelServer", "RecordedRequest", "Reply", "serve_echo_agent", "serve_model_server"]

_WHERE = {
    "EchoAgent": "agents",
    "RecordedRequest": "agents",
    "serve_echo_agent": "agents",
    "ModelServer": "model_server",
    "Reply": "model_server",
    "serve_model_server": "model_server",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'tamesu.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(f"tamesu.testing.{module}"), name)
