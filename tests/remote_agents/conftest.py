"""Remote agents served for a test, and a harness of targets to talk to them (real loopback)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from tamesu.clock import MonotonicClock
from tamesu.kernel.transcript import Transcript
from tamesu.limits import DEFAULT_LIMITS, Limits
from tamesu.templates import Scope
from tests.targets.conftest import Harness, closed_port  # noqa: F401  (a fixture)

pytest.importorskip("a2a.client", reason="the a2a extra is not installed")

Serve = Callable[..., Awaitable[tuple[Any, Transcript]]]


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    h = Harness()
    yield h
    await h.close()


@pytest.fixture
async def serve_remote(harness: Harness) -> AsyncIterator[Serve]:
    """Serve remote agents (name -> config as in a suite) for one run; returns (served, transcript)."""
    from tamesu.config.suite import RemoteAgent
    from tamesu.remote_agents.run_agents import RemoteAgents

    opened: list[RemoteAgents] = []

    async def serve(
        agents: dict[str, Any], *, secrets: dict[str, str] | None = None, limits: Limits = DEFAULT_LIMITS
    ) -> tuple[RemoteAgents, Transcript]:
        configs = {name: RemoteAgent.model_validate(config) for name, config in agents.items()}
        transcript = Transcript()
        scope = Scope(resolvers={"secrets": (secrets or {}).__getitem__})
        served = await RemoteAgents.open(
            configs,
            scope=scope,
            transcript=transcript,
            clock=MonotonicClock(),
            limits=limits,
            http=harness.http,
        )
        opened.append(served)
        return served, transcript

    yield serve
    for served in opened:
        await served.close()
