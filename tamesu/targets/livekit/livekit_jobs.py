"""What the LiveKit server knows of the agent's job: read back through the agent dispatch API.

A worker that never answers its availability request, refuses the job, crashes or disconnects
mid-job leaves the caller with only a silent room or an agent that left. LiveKit keeps each
dispatch's jobs with their status and error (``ListDispatch``: ``state.jobs``), so the target
asks it: when no agent joined (``problems``), and when the agent left (``failure``, once the
job's status is final, for a short while), so a crashed agent is an error that says what
happened rather than a conversation that ended. Both need ``api_key`` and ``api_secret``;
without them, or when the server cannot be asked, they have nothing to add.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

__all__ = ["JobReader"]

SETTLE_S = 3.0
"""How long after the agent left its job may take to be reported final."""
POLL_S = 0.2
MAX_PROBLEMS = 5


class JobReader:
    """Reads one room's dispatches from the server (see the module docstring)."""

    def __init__(self, *, url: str, api_key: str, api_secret: str, room: str) -> None:
        self.url, self.api_key, self.api_secret, self.room = url, api_key, api_secret, room

    async def _jobs(self) -> list[tuple[str, Any]]:
        """(agent name, job) of every dispatch in the room; [] when the server cannot say."""
        from livekit import api

        client = api.LiveKitAPI(self.url, self.api_key, self.api_secret)
        try:
            with contextlib.suppress(Exception):
                dispatches = await client.agent_dispatch.list_dispatch(room_name=self.room)
                return [(d.agent_name, job) for d in dispatches for job in d.state.jobs]
            return []
        finally:
            await client.aclose()

    async def problems(self) -> list[str]:
        """The errors the room's jobs ended with (or are waiting on), each naming its job."""
        out = []
        for agent_name, job in await self._jobs():
            if job.state.error:
                who = f"agent {agent_name}" if agent_name else "automatic dispatch"
                out.append(f"job {job.id} ({who}): {job.state.error}")
        return out[:MAX_PROBLEMS]

    async def failure(self, identity: str) -> str | None:
        """Why the job of the agent ``identity`` failed, once it is final; None when it did not
        (or is still running after ``SETTLE_S``, or the server cannot say)."""
        from livekit.protocol import agent as agent_pb

        loop = asyncio.get_running_loop()
        deadline = loop.time() + SETTLE_S
        while True:
            jobs = [job for _, job in await self._jobs() if job.state.participant_identity == identity]
            if not jobs:
                return None
            job = jobs[-1]
            if job.state.status == agent_pb.JS_FAILED:
                return f"the agent's job {job.id} failed: {job.state.error or 'no reason given'}"
            if job.state.status == agent_pb.JS_SUCCESS or loop.time() >= deadline:
                return None
            await asyncio.sleep(POLL_S)
