"""What the remote agents heard and answered, written into the run's transcript.

Every message the agent under test sends to a remote agent (``received``) and every answer the
remote agent gives (``replied``) becomes one ``RemoteMessage`` event of the transcript: the agent's
name, the words, the data parts, the files (names and sizes, never bytes), the task's state and
ids. ``delegated_to`` reads them. The agent under test wrote what is received, so it is bounded
like any answer: words by ``turn_text``, data by ``answer_size``, and all of it together by
``transcript_size``, past which only a truncation mark is kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import msgspec

from tamesu.kernel.events import RemoteMessage, Truncated
from tamesu.limits import payload_head, payload_size

if TYPE_CHECKING:
    from a2a.types.a2a_pb2 import Message

    from tamesu.clock import Clock
    from tamesu.kernel.transcript import Transcript
    from tamesu.limits import Limits

__all__ = ["EVENT", "Recording"]

EVENT = "a2a_remote"
"""The transcript event type of a message to or from a remote agent."""

Direction = Literal["received", "replied"]


class Recording:
    """The events one run's remote agents add to its transcript."""

    def __init__(self, transcript: Transcript, clock: Clock, limits: Limits) -> None:
        self.transcript = transcript
        self.clock = clock
        self.limits = limits
        self._stored = 0
        self._truncated = False

    def message(
        self, agent: str, direction: Direction, msg: Message, *, state: str | None = None, task: str = ""
    ) -> None:
        """Record an A2A message (what the agent under test sent, or a reply relayed from a real agent)."""
        from tamesu.targets.a2a.a2a_parts import message_data, message_files, message_text

        self.add(
            agent,
            direction,
            text=message_text(msg),
            data=message_data(msg),
            files=message_files(msg),
            state=state,
            context=msg.context_id,
            task=task or msg.task_id,
        )

    def add(
        self,
        agent: str,
        direction: Direction,
        *,
        text: str,
        data: list[Any] | None = None,
        files: list[dict[str, Any]] | None = None,
        state: str | None = None,
        context: str = "",
        task: str = "",
    ) -> None:
        kept_data = None
        if data:
            size = payload_size(data)
            kept_data = data if size <= self.limits.answer_size else _mark(data, size)
        event = RemoteMessage(
            at=self.clock.now(),
            agent=agent,
            direction=direction,
            text=text[: self.limits.turn_text],
            data=kept_data,
            files=files or [],
            state=state or None,
            context=context,
            task=task,
        )
        self.transcript.events.append(self._kept(event))

    def _kept(self, event: RemoteMessage) -> RemoteMessage:
        size = payload_size(msgspec.to_builtins(event))
        if self._stored + size <= self.limits.transcript_size:
            self._stored += size
            return event
        if not self._truncated:
            self._truncated = True
            self.transcript.events.append(
                Truncated(at=event.at, what=EVENT, limit=self.limits.transcript_size)
            )
        return RemoteMessage(
            at=event.at, agent=event.agent, direction=event.direction, text=event.text[:200], truncated=True
        )


def _mark(value: Any, size: int) -> dict[str, Any]:
    return {"truncated": True, "bytes": size, "head": payload_head(value, 200)}
