"""Another agent plays the user: two agents talk, and the judges grade the exchange.

The counterpart is any conversational target of the suite. It speaks first with ``opening`` or,
without one, answers the scenario's goal; after that each agent turn is sent to it and its answer
becomes the next user turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tamesu.kernel.messages import AgentTurn, UserTurn
from tamesu.templates import Scope, render_text
from tamesu.users.scripted_user import DEFAULT_MAX_TURNS

if TYPE_CHECKING:
    from tamesu.config import Counterpart, Scenario
    from tamesu.kernel.transcript import Transcript
    from tamesu.targets.base import TargetAdapter

__all__ = ["CounterpartUser"]


class CounterpartUser:
    """A ``UserSimulator`` backed by a target adapter the graph has started."""

    def __init__(
        self, adapter: TargetAdapter, counterpart: Counterpart, scenario: Scenario | None, scope: Scope
    ) -> None:
        self.adapter = adapter
        self.opening = render_text(counterpart.opening, scope) if counterpart.opening else None
        self.goal = render_text(scenario.goal, scope) if scenario is not None and scenario.goal else None
        self.max_turns = (scenario.max_turns if scenario is not None else None) or DEFAULT_MAX_TURNS
        self.end_reason: str | None = None
        self.waiting = False
        self._said = 0
        self._heard = 0
        self._finished = False

    async def next_turn(self, transcript: Transcript) -> UserTurn | None:
        if transcript.end_reason is not None:
            return self._end(transcript.end_reason)
        if self._finished:
            return self._end("counterpart")
        if self._said >= self.max_turns:
            return self._end("max_turns")
        if self._said == 0 and self.opening:
            self._said += 1
            return UserTurn(text=self.opening, source="counterpart")
        agent = transcript.agent_turns()[self._heard :]
        prompt = "\n".join(t.text for t in agent if t.text) or (self.goal if self._said == 0 else None)
        self._heard = len(transcript.agent_turns())
        reply = await self._ask(UserTurn(text=prompt, source="counterpart") if prompt else None)
        if reply is None or (not reply.text and reply.done):
            return self._end("counterpart")
        self._finished = reply.done
        self._said += 1
        return UserTurn(text=reply.text, source="counterpart")

    async def _ask(self, turn: UserTurn | None) -> AgentTurn | None:
        last: AgentTurn | None = None
        async for msg in self.adapter.turn(turn):
            if isinstance(msg, AgentTurn):
                last = msg
        return last

    def _end(self, reason: str) -> UserTurn | None:
        self.end_reason = reason
        return None
