"""The simulator actor: the user's side of the conversation.

It wraps a ``UserSimulator`` (a script, a model pursuing a goal, a counterpart agent) and decides
when the session is over: the agent ended it (``AgentTurn.done``), the turn budget is spent, or the
simulator has nothing more to say.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from tamesu.kernel.messages import AgentTurn, Message, SessionEnd

from .actor import Actor

if TYPE_CHECKING:
    from tamesu.clock import Clock
    from tamesu.kernel.transcript import Transcript
    from tamesu.targets.base import TargetAdapter
    from tamesu.users.simulator import UserSimulator

__all__ = ["SimulatorActor"]


class SimulatorActor(Actor):
    """Asks the simulator for a turn at the start (unless the agent speaks first) and after each agent turn."""

    drivable: ClassVar[bool] = True

    def __init__(
        self,
        simulator: UserSimulator,
        *,
        transcript: Callable[[], Transcript],
        clock: Clock,
        max_turns: int,
        agent_speaks_first: bool = False,
        counterpart: TargetAdapter | None = None,
        **opts: Any,
    ) -> None:
        super().__init__(**opts)
        self.counterpart = counterpart
        """The adapter of a counterpart agent playing the user; started and stopped with this actor."""
        self._counterpart_started = False
        self.simulator = simulator
        self.transcript = transcript
        self.clock = clock
        self.max_turns = max_turns
        self.agent_speaks_first = agent_speaks_first
        self.sent = 0

    def now(self) -> float:
        return self.clock.now()

    async def start(self) -> None:
        if self.counterpart is not None:
            self._counterpart_started = True
            await self.counterpart.start()
        if not self.agent_speaks_first:
            await self._next()

    async def stop(self) -> None:
        if self.counterpart is not None and self._counterpart_started:
            self._counterpart_started = False
            try:
                await self.counterpart.stop()
            except Exception:
                pass

    async def handle(self, msg: Message) -> None:
        if not isinstance(msg, AgentTurn):
            return
        if msg.done:
            await self._end("agent")
        elif self.sent >= self.max_turns:
            await self._end("max_turns")
        else:
            await self._next()

    async def _next(self) -> None:
        turn = await self.simulator.next_turn(self.transcript())
        if turn is None:
            await self._end(self.simulator.end_reason or "done")
            return
        self.sent += 1
        await self.send(msgspec.structs.replace(turn, at=self.clock.now()))

    async def _end(self, reason: str) -> None:
        await self.send(SessionEnd(reason=reason, at=self.clock.now()))
