"""The simulator actor: the user's side of the conversation.

It wraps a ``UserSimulator`` (a script, a model pursuing a goal, a counterpart agent) and decides
when the session is over: the agent ended it (``AgentTurn.done``), the turn budget is spent, or the
simulator has nothing more to say. A simulator that would speak after more of the agent
(``waiting``: a ``wait_for`` not met yet) on a call hears the agent's next turn out (``Listen``)
while the agent goes on talking: until a turn in which it said nothing, at most ``max_turns`` times.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from tamesu.kernel.messages import AgentTurn, Listen, Message, SessionEnd

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
        hears_unprompted: Callable[[], bool] = lambda: False,
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
        self.hears_unprompted = hears_unprompted
        """Whether the target can hear the agent out with no user turn now (a call is up)."""
        self.sent = 0
        self.listened = 0

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
        transcript = self.transcript()
        turn = await self.simulator.next_turn(transcript)
        if turn is None:
            if self.simulator.waiting and self._may_listen(transcript):
                self.listened += 1
                await self.send(Listen(at=self.clock.now()))
                return
            await self._end(self.simulator.end_reason or "done")
            return
        self.sent += 1
        await self.send(msgspec.structs.replace(turn, at=self.clock.now()))

    def _may_listen(self, transcript: Transcript) -> bool:
        """Listen on while the agent's last turn said something and listening is bounded."""
        if self.listened >= self.max_turns or not self.hears_unprompted():
            return False
        last = transcript.turns[-1] if transcript.turns else None
        return last is not None and last.role == "agent" and bool(last.text.strip())

    async def _end(self, reason: str) -> None:
        await self.send(SessionEnd(reason=reason, at=self.clock.now()))
