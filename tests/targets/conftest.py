"""Loopback servers and a ready TargetContext for target tests (real sockets on 127.0.0.1:0)."""

from __future__ import annotations

import importlib.util
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tamesu.http import make_client
from tamesu.kernel.messages import AgentTurn, Message, UserTurn
from tamesu.limits import DEFAULT_LIMITS, Limits
from tamesu.secrets import Redactor
from tamesu.targets.base import TargetAdapter, TargetContext, targets
from tamesu.templates import Scope

from ..virtual_time import LoopClock

ROOT = Path(__file__).resolve().parents[2]

Serve = Callable[[web.Application], Awaitable[str]]


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    """Serve an aiohttp app on a free loopback port; returns its base URL."""
    runners: list[web.AppRunner] = []

    async def start(app: web.Application) -> str:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        runners.append(runner)
        return f"http://127.0.0.1:{runner.addresses[0][1]}"

    yield start
    for runner in reversed(runners):
        await runner.cleanup()


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def load_demo_agent() -> Any:
    """examples/demo_agent/agent.py as a module (examples/ is not a package)."""
    name = "tamesu_demo_agent"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / "demo_agent" / "agent.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture
async def demo_url(serve: Serve) -> str:
    """The demo support agent on a free port (base URL)."""
    return await serve(load_demo_agent().create_app())


class Harness:
    """Builds targets with a real context (clock, HTTP client, redactor, scope) and stops them."""

    def __init__(self) -> None:
        self.http = make_client()
        self.redactor = Redactor()
        self.started: list[TargetAdapter] = []

    def context(
        self,
        *,
        session: str = "sess-1",
        secrets: dict[str, str] | None = None,
        vars: dict[str, str] | None = None,
        turn_timeout: float = 5.0,
        limits: Limits = DEFAULT_LIMITS,
    ) -> TargetContext:
        values = dict(secrets or {})
        for value in values.values():
            self.redactor.add(value)
        scope = Scope({"vars": vars or {}}, resolvers={"secrets": values.__getitem__})
        return TargetContext(
            name="api",
            run_id="run-1",
            session=session,
            scope=scope,
            clock=LoopClock(),
            http=self.http,
            redactor=self.redactor,
            turn_timeout=turn_timeout,
            limits=limits,
        )

    async def target(self, config: dict[str, Any], **ctx: Any) -> TargetAdapter:
        from tamesu.config.target import parse_target

        cfg = parse_target({"type": "rest", **config})
        adapter = targets.adapter(cfg.type)(cfg, self.context(**ctx))
        self.started.append(adapter)
        await adapter.start()
        return adapter

    @staticmethod
    async def say(adapter: TargetAdapter, text: str | None) -> list[Message]:
        """One turn's messages; checks that it ends with exactly one AgentTurn."""
        user = None if text is None else UserTurn(text=text)
        out = [msg async for msg in adapter.turn(user)]
        assert isinstance(out[-1], AgentTurn)
        assert sum(isinstance(m, AgentTurn) for m in out) == 1
        return out

    @staticmethod
    def of_type(messages: list[Message], kind: type) -> list[Any]:
        return [m for m in messages if isinstance(m, kind)]

    async def close(self) -> None:
        for adapter in self.started:
            await adapter.stop()
        await self.http.aclose()


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    h = Harness()
    yield h
    await h.close()


@pytest.fixture
def fake_voice(monkeypatch: pytest.MonkeyPatch) -> None:
    """The caller speaks a second of speech-like sound instead of TTS: the protocol is under test."""
    from tamesu.audio.synth import speech_like
    from tamesu.voice.speech import make_utterance

    async def render_speech(text: str, rate: int, **_: Any) -> Any:
        return make_utterance(speech_like(1.0, rate, seed=len(text)), rate, text=text)

    monkeypatch.setattr("tamesu.voice.caller.render_speech", render_speech)
