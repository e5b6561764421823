"""Driven actors: messages handled in the sender's task, with the semantics of ``Actor.run``."""

from __future__ import annotations

import asyncio

import pytest

from tamesu.actors.actor import Actor, drive
from tamesu.errors import TargetError
from tamesu.kernel.messages import AgentPartial, AgentTurn, ErrorMsg, Interrupt, Message, SessionEnd, UserTurn
from tamesu.secrets import Redactor

pytestmark = [pytest.mark.unit, pytest.mark.timing]


class Collector(Actor):
    def __init__(self, **opts: object) -> None:
        super().__init__(**opts)  # type: ignore[arg-type]
        self.seen: list[Message] = []
        self.ended: list[Message] = []
        self.tasks: set[asyncio.Task[object] | None] = set()

    async def handle(self, msg: Message) -> None:
        self.tasks.add(asyncio.current_task())
        self.seen.append(msg)

    async def on_end(self, msg: SessionEnd | ErrorMsg) -> None:
        self.ended.append(msg)


class Upper(Actor):
    """Uppercases user turns; fails on the word 'boom'."""

    async def handle(self, msg: Message) -> None:
        assert isinstance(msg, UserTurn)
        if msg.text == "boom":
            raise TargetError("agent gone (key hunter2hunter2)", retryable=False)
        await self.send(AgentTurn(text=msg.text.upper()))


class Talker(Actor):
    """Says each line of ``lines`` in ``start``, then ends the session."""

    def __init__(self, lines: list[str], **opts: object) -> None:
        super().__init__(**opts)  # type: ignore[arg-type]
        self.lines = lines

    async def start(self) -> None:
        for line in self.lines:
            await self.send(UserTurn(text=line))
        await self.send(SessionEnd(reason="done"))


async def test_a_driven_chain_runs_in_the_senders_task_without_tasks_of_its_own() -> None:
    sink = Collector()
    upper = Upper().connect(sink)
    talker = Talker(["hi", "there"]).connect(upper)
    before = len(asyncio.all_tasks())
    begun: list[Actor] = []
    await drive([talker, upper, sink], begun=begun)
    assert len(asyncio.all_tasks()) == before
    assert [m.text for m in sink.seen] == ["HI", "THERE"]  # type: ignore[union-attr]
    assert sink.tasks == {asyncio.current_task()}
    assert sink.ended == [SessionEnd(reason="done")]
    assert begun == [sink, upper, talker]
    assert upper._ended and sink._ended


class Echo(Actor):
    """Answers each user turn; while handling the first it is sent more (a cycle back to it)."""

    def __init__(self, **opts: object) -> None:
        super().__init__(**opts)  # type: ignore[arg-type]
        self.order: list[str] = []

    async def handle(self, msg: Message) -> None:
        text = getattr(msg, "text", type(msg).__name__)
        self.order.append(text)
        if text == "first":
            await self.deliver(AgentPartial(text="data"))
            await self.deliver(Interrupt())
            await self.deliver(AgentPartial(text="more"))
            await self.deliver(SessionEnd(reason="done"))

    async def on_end(self, msg: SessionEnd | ErrorMsg) -> None:
        self.order.append(f"end:{type(msg).__name__}")


async def test_a_busy_driven_actor_queues_control_before_data_and_ends_after_the_data() -> None:
    echo = Echo()
    await drive([echo], begun=[])
    await echo.deliver(UserTurn(text="first"))
    assert echo.order == ["first", "Interrupt", "data", "more", "end:SessionEnd"]
    await echo.deliver(UserTurn(text="late"))
    assert echo.order[-1] == "end:SessionEnd"


async def test_an_exception_in_a_driven_handle_becomes_a_redacted_error_message() -> None:
    redactor = Redactor()
    redactor.add("hunter2hunter2")
    sink = Collector()
    upper = Upper(redactor=redactor).connect(sink)
    await drive([upper, sink], begun=[])
    await upper.deliver(UserTurn(text="boom"))
    [err] = sink.ended
    assert isinstance(err, ErrorMsg) and err.kind == "agent" and err.retryable is False
    assert "hunter2" not in err.message and "***" in err.message
    assert upper._ended and upper.died is None
    await upper.deliver(UserTurn(text="after"))
    assert sink.seen == []


class BadEnd(Collector):
    async def on_end(self, msg: SessionEnd | ErrorMsg) -> None:
        raise RuntimeError("cannot end")


async def test_an_actor_whose_end_breaks_is_marked_dead_and_the_sender_goes_on() -> None:
    bad = BadEnd()
    talker = Talker(["hi"]).connect(bad)
    await drive([talker, bad], begun=[])
    assert isinstance(bad.died, RuntimeError)
    assert [m.text for m in bad.seen] == ["hi"]  # type: ignore[union-attr]
    assert talker.died is None


class FailingStart(Actor):
    async def start(self) -> None:
        raise TargetError("refused", retryable=True)


async def test_a_failed_start_sends_an_error_and_is_still_stopped() -> None:
    sink = Collector()
    failing = FailingStart().connect(sink)
    begun: list[Actor] = []
    await drive([failing, sink], begun=begun)
    assert failing in begun
    [err] = sink.ended
    assert isinstance(err, ErrorMsg) and err.message == "refused"


class Slow(Collector):
    """Holds each message until released, so its mailbox fills."""

    def __init__(self, **opts: object) -> None:
        super().__init__(**opts)
        self.release = asyncio.Event()

    async def handle(self, msg: Message) -> None:
        await self.release.wait()
        await super().handle(msg)


async def test_a_task_that_sends_to_a_busy_driven_actor_waits_for_room() -> None:
    slow = Slow(maxsize=1)
    await drive([slow], begun=[], other_tasks=True)
    first = asyncio.create_task(slow.deliver(AgentPartial(text="1")))
    while slow._busy is None:
        await asyncio.sleep(0)
    await slow.deliver(AgentPartial(text="2"))
    third = asyncio.create_task(slow.deliver(AgentPartial(text="3")))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not third.done() and len(slow.inbox) == 1
    slow.release.set()
    await asyncio.wait_for(asyncio.gather(first, third), 1)
    assert [m.text for m in slow.seen] == ["1", "2", "3"]  # type: ignore[union-attr]


async def test_messages_sent_before_a_driven_actor_starts_wait_for_its_start() -> None:
    sink = Collector(maxsize=1)
    sink.driven = True
    await sink.deliver(AgentPartial(text="early"))
    await sink.deliver(AgentPartial(text="past the bound"))
    assert sink.seen == []
    await drive([sink], begun=[])
    assert [m.text for m in sink.seen] == ["early", "past the bound"]  # type: ignore[union-attr]


class Noter(Collector):
    """Notes partials at once (``sync_handlers``); answers a user turn after a pause, while busy."""

    def __init__(self, **opts: object) -> None:
        super().__init__(**opts)
        self.notes: list[str] = []
        self.pause = asyncio.Event()

    def _note(self, msg: AgentPartial) -> None:
        if msg.text == "bad":
            raise ValueError("unreadable partial")
        self.notes.append(msg.text)

    sync_handlers = {AgentPartial: _note}

    async def handle(self, msg: Message) -> None:
        if isinstance(msg, AgentPartial):
            self._note(msg)
        else:
            await self.pause.wait()
            self.notes.append("turn")


async def test_an_idle_driven_actor_handles_a_sync_message_at_once_and_a_busy_one_in_order() -> None:
    noter = Noter()
    await drive([noter], begun=[], other_tasks=True)
    await noter.deliver(AgentPartial(text="now"))
    assert noter.notes == ["now"] and noter._busy is None
    turn = asyncio.create_task(noter.deliver(UserTurn(text="hi")))
    while noter._busy is None:
        await asyncio.sleep(0)
    await noter.deliver(AgentPartial(text="after the turn"))
    assert noter.notes == ["now"]
    noter.pause.set()
    await asyncio.wait_for(turn, 1)
    assert noter.notes == ["now", "turn", "after the turn"]


async def test_a_sync_handler_that_raises_ends_the_session_with_the_error() -> None:
    noter = Noter()
    await drive([noter], begun=[])
    await noter.deliver(AgentPartial(text="bad"))
    [err] = noter.ended
    assert isinstance(err, ErrorMsg) and "unreadable partial" in err.message
    await noter.deliver(AgentPartial(text="later"))
    assert noter.notes == [] and noter._busy is None
