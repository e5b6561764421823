"""The target actor: drives one adapter, one user turn at a time, and times the agent's answers.

The adapter does the talking (it is given to the actor; the actor opens nothing itself). The
actor passes each user turn on to the recorder (a ``Listen`` is a turn the user says nothing in), then every message of the agent's answer, and
fills the timings an adapter left out: sent (just before the turn), first byte (the first message
of the answer) and end (the ``AgentTurn``). Every message it passes on is storable: a lone
surrogate an adapter let through (a JSON escape such as ``\\ud800``) is kept as its escape, so
no later encoding of the transcript, a report or a request can fail on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import msgspec

from tamesu.errors import TargetError
from tamesu.kernel.messages import (
    AgentTurn,
    AudioBatch,
    AudioFrame,
    Listen,
    Message,
    MetricMsg,
    SessionStart,
    UserTurn,
)
from tamesu.untrusted import storable

from .actor import Actor

if TYPE_CHECKING:
    from tamesu.clock import Clock
    from tamesu.targets.base import TargetAdapter

__all__ = ["TargetActor", "storable_message"]

_M = TypeVar("_M", bound=Message)


class TargetActor(Actor):
    """Owns the adapter's lifetime: ``start`` connects it, ``stop`` always closes it."""

    drivable: ClassVar[bool] = True

    def __init__(
        self, adapter: TargetAdapter, *, clock: Clock, run_id: str, session: str, **opts: Any
    ) -> None:
        super().__init__(**opts)
        self.adapter = adapter
        self.clock = clock
        self.run_id = run_id
        self.session = session
        self.started = False
        self.stopped = False
        self._first: float | None = None
        """When the first message of the current turn's answer came."""

    def now(self) -> float:
        return self.clock.now()

    async def start(self) -> None:
        self.started = True
        await self.adapter.start()
        await self.send(SessionStart(run_id=self.run_id, session=self.session, at=self.clock.now()))
        if self.adapter.agent_speaks_first:
            await self._turn(None)

    async def handle(self, msg: Message) -> None:
        if isinstance(msg, UserTurn):
            await self._turn(msg)
        elif isinstance(msg, Listen):
            await self._turn(None)
        else:
            await self.send(msg)

    async def stop(self) -> None:
        if self.stopped or not self.started:
            self.stopped = True
            return
        self.stopped = True
        try:
            await self.adapter.stop()
        except Exception:
            pass

    async def _pass_on(self, msg: Message, sent: float) -> AgentTurn | None:
        """Send one message of the answer on; the final AgentTurn is returned stamped, not sent."""
        now = self.clock.now()
        if self._first is None:
            self._first = now
        msg = storable_message(msg)
        if isinstance(msg, AgentTurn):
            return _stamped(msg, sent, self._first, now)
        await self.send(msg if msg.at else msgspec.structs.replace(msg, at=now))
        return None

    async def _turn(self, user: UserTurn | None) -> None:
        sent = self.clock.now()
        if user is not None:
            user = storable_message(msgspec.structs.replace(user, at=sent))
            await self.send(user)
        self._first = None
        final: AgentTurn | None = None
        whole = await self.adapter.whole_answer(user)
        if whole is not None:
            for msg in whole:
                if (final := await self._pass_on(msg, sent)) is not None:
                    break
        else:
            answer = self.adapter.turn(user)
            try:
                async for msg in answer:
                    if (final := await self._pass_on(msg, sent)) is not None:
                        break
            finally:
                aclose = getattr(answer, "aclose", None)
                if aclose is not None:
                    await aclose()
        if final is not None:
            # Sent once the answer is closed: what the turn held (a stream) is let go before the
            # user's next turn is made, which on a driven graph happens inside this send.
            await self.send(final)
            return
        raise TargetError(
            f"the {self.adapter.type_name or type(self.adapter).__name__} adapter ended a turn without an AgentTurn",
            retryable=False,
            kind="adapter",
        )


_TEXTLESS = (AudioFrame, AudioBatch, MetricMsg)
_check = msgspec.json.Encoder(enc_hook=str).encode


def storable_message(msg: _M) -> _M:
    """The message as it is when every string in it can be encoded, else a copy where each lone
    surrogate is written as its escape (what a target put in raw answers that is not plain data
    is then kept as its text)."""
    if isinstance(msg, _TEXTLESS):
        return msg
    try:
        _check(msg)
    except UnicodeEncodeError:
        return msgspec.convert(storable(msgspec.to_builtins(msg, enc_hook=str)), type(msg))
    return msg


def _stamped(msg: AgentTurn, sent: float, first: float, now: float) -> AgentTurn:
    """The final answer with the timings its adapter left out."""
    return msgspec.structs.replace(
        msg,
        at=now,
        sent_at=msg.sent_at if msg.sent_at is not None else sent,
        first_byte_at=msg.first_byte_at if msg.first_byte_at is not None else first,
        end_at=msg.end_at if msg.end_at is not None else now,
    )
