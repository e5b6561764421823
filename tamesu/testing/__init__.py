"""Fakes for tests, shipped with tamesu so users can test their suites the way tamesu tests itself.

``serve_echo_agent`` runs a scripted echo agent on loopback; ``serve_a2a_agent`` a scripted A2A
agent on the a2a-sdk's server classes (the ``a2a`` extra); ``serve_model_server`` runs a
scripted model server speaking the OpenAI wire format; ``serve_realtime_server`` replays recorded
OpenAI Realtime API event sequences over a websocket; ``serve_loaded_agent`` is an agent whose delay grows with the requests in flight (a capacity
search's known answer); ``serve_livekit_server`` is a loopback LiveKit server (the ``livekit`` extra) with ``text_agent`` and ``voice_agent`` to join it. Each loads its server library only when first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tamesu.testing.a2a_agent import A2AAgent, serve_a2a_agent
    from tamesu.testing.echo_agent import EchoAgent, RecordedRequest, serve_echo_agent
    from tamesu.testing.livekit_agents import text_agent, voice_agent
    from tamesu.testing.livekit_server import LivekitServer, serve_livekit_server
    from tamesu.testing.loaded_agent import LoadedAgent, serve_loaded_agent
    from tamesu.testing.model_server import ModelServer, Reply, serve_model_server
    from tamesu.testing.realtime_server import RealtimeServer, load_recording, serve_realtime_server

__all__ = [
    "A2AAgent",
    "EchoAgent",
    "LivekitServer",
    "LoadedAgent",
    "ModelServer",
    "RealtimeServer",
    "RecordedRequest",
    "Reply",
    "load_recording",
    "serve_a2a_agent",
    "serve_echo_agent",
    "serve_livekit_server",
    "serve_loaded_agent",
    "serve_model_server",
    "serve_realtime_server",
    "text_agent",
    "voice_agent",
]

_WHERE = {
    "A2AAgent": "a2a_agent",
    "serve_a2a_agent": "a2a_agent",
    "EchoAgent": "echo_agent",
    "RecordedRequest": "echo_agent",
    "serve_echo_agent": "echo_agent",
    "ModelServer": "model_server",
    "Reply": "model_server",
    "serve_model_server": "model_server",
    "RealtimeServer": "realtime_server",
    "load_recording": "realtime_server",
    "serve_realtime_server": "realtime_server",
    "LoadedAgent": "loaded_agent",
    "serve_loaded_agent": "loaded_agent",
    "LivekitServer": "livekit_server",
    "serve_livekit_server": "livekit_server",
    "text_agent": "livekit_agents",
    "voice_agent": "livekit_agents",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'tamesu.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(f"tamesu.testing.{module}"), name)
