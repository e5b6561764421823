"""A real ``livekit-agents`` worker process (examples/livekit_agent/agent.py) against a loopback server."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tamesu.testing.livekit_server import LivekitServer, serve_livekit_server

AGENT_DIR = Path(__file__).resolve().parents[2] / "examples" / "livekit_agent"
REGISTER_S = 90.0
"""How long a worker process has to start and register (imports are slow on a loaded machine)."""


@pytest.fixture
async def server() -> AsyncIterator[LivekitServer]:
    async with serve_livekit_server() as s:
        yield s


def room(server: LivekitServer, **extra: Any) -> dict[str, Any]:
    """A livekit target for a room of ``server``, its keys as secrets (``keys``)."""
    return {
        "type": "livekit",
        "url": server.url,
        "api_key": "{{secrets.LK_KEY}}",
        "api_secret": "{{secrets.LK_SECRET}}",
        "join_timeout": "60s",
        **extra,
    }


def keys(server: LivekitServer) -> dict[str, str]:
    return {"LK_KEY": server.api_key, "LK_SECRET": server.api_secret}


class WorkerProcess:
    """One worker process; ``log`` is its output."""

    def __init__(self, proc: asyncio.subprocess.Process, log: Path) -> None:
        self.proc, self.log = proc, log

    def kill(self) -> None:
        """End the worker and its job processes at once, as a crash would."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


@asynccontextmanager
async def agent_worker(
    server: LivekitServer, log_dir: Path, *, agent_name: str = "", mode: str = "text"
) -> AsyncIterator[WorkerProcess]:
    """``python agent.py dev`` pointed at ``server`` by LIVEKIT_URL and keys, until it has registered."""
    registered = asyncio.Event()
    before = set(server.workers.workers)

    def changed() -> None:
        if any(w.agent_name == agent_name for i, w in server.workers.workers.items() if i not in before):
            registered.set()

    server.workers.on_change = changed
    env = {
        **os.environ,
        "LIVEKIT_URL": server.url,
        "LIVEKIT_API_KEY": server.api_key,
        "LIVEKIT_API_SECRET": server.api_secret,
        "AGENT_NAME": agent_name,
        "AGENT_MODE": mode,
        "LIVEKIT_LOG_LEVEL": os.environ.get("LIVEKIT_LOG_LEVEL", "INFO"),
    }
    log = log_dir / f"worker-{agent_name or 'auto'}-{len(before)}.log"
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "agent.py",
            "dev",
            cwd=AGENT_DIR,
            env=env,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    worker = WorkerProcess(proc, log)
    try:
        try:
            await asyncio.wait_for(registered.wait(), REGISTER_S)
        except asyncio.TimeoutError:
            raise AssertionError(f"the worker did not register:\n{worker.output()}") from None
        yield worker
    finally:
        server.workers.on_change = None
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 15)
            except asyncio.TimeoutError:
                worker.kill()
                await proc.wait()
