from __future__ import annotations

import asyncio

import pytest

from tamesu.actors.actor import Actor, Mailbox, MailboxFull, error_message, roundtrip
from tamesu.errors import ModelError, TargetError
from tamesu.kernel.messages import AgentPartial, AgentTurn, ErrorMsg, Interrupt, Message, SessionEnd, UserTurn
from tamesu.secrets import Redactor

pytestmark = [pytest.mark.unit, pytest.mark.timing]


async def test_control_messages_jump_ahead_of_data() -> None:
    box = Mailbox(maxsize=8)
    await box.put(AgentPartial(text="a"))
    await box.put(AgentPartial(text="b"))
    await box.put(Interrupt())
    await box.put(AgentPartial(text="c"))
    await box.put(SessionEnd(reason="done"))
    got = [await box.get() for _ in range(5)]
    assert [type(g).__name__ for g in got] == [
        "Interrupt",
        "SessionEnd",
        "AgentPartial",
        "AgentPartial",
        "AgentPartial",
    ]
    assert [g.text for g in got if isinstance(g, AgentPartial)] == ["a", "b", "c"]


async def test_a_full_mailbox_makes_the_sender_wait_until_a_message_is_taken() -> None:
    box = Mailbox(maxsize=2)
    await box.put(AgentPartial(text="1"))
    await box.put(AgentPartial(text="2"))
    assert box.full()
    blocked = asyncio.create_task(box.put(AgentPartial(text="3")))
    await asyncio.sleep(0)
    assert not blocked.done()
    assert len(box) == 2
    first = await box.get()
    await asyncio.wait_for(blocked, 1)
    assert first == AgentPartial(text="1")
    assert [await box.get() for _ in range(2)] == [AgentPartial(text="2"), AgentPartial(text="3")]


async def test_control_messages_are_not_held_back_by_the_bound() -> None:
    box = Mailbox(maxsize=1)
    await box.put(AgentPartial(text="1"))
    await asyncio.wait_for(box.put(SessionEnd(reason="timeout")), 1)
    assert isinstance(await box.get(), SessionEnd)


def test_put_nowait_refuses_data_when_full() -> None:
    box = Mailbox(maxsize=1)
    box.put_nowait(AgentPartial(text="1"))
    with pytest.raises(MailboxFull):
        box.put_nowait(AgentPartial(text="2"))
    box.put_nowait(Interrupt())
    assert len(box) == 2


async def test_a_cancelled_sender_does_not_swallow_the_next_wakeup() -> None:
    box = Mailbox(maxsize=1)
    await box.put(AgentPartial(text="1"))
    cancelled = asyncio.create_task(box.put(AgentPartial(text="x")))
    waiting = asyncio.create_task(box.put(AgentPartial(text="2")))
    await asyncio.sleep(0)
    cancelled.cancel()
    await box.get()
    await asyncio.wait_for(waiting, 1)
    assert await box.get() == AgentPartial(text="2")


def test_a_mailbox_needs_room() -> None:
    with pytest.raises(ValueError):
        Mailbox(maxsize=0)


class Collector(Actor):
    def __init__(self, **opts: object) -> None:
        super().__init__(**opts)  # type: ignore[arg-type]
        self.seen: list[Message] = []
        self.ended: list[Message] = []
        self.stopped = False

    async def handle(self, msg: Message) -> None:
        self.seen.append(msg)

    async def on_end(self, msg: SessionEnd | ErrorMsg) -> None:
        self.ended.append(msg)

    async def stop(self) -> None:
        self.stopped = True


class Upper(Actor):
    """Uppercases user turns; fails on the word 'boom'."""

    async def handle(self, msg: Message) -> None:
        assert isinstance(msg, UserTurn)
        if msg.text == "boom":
            raise TargetError("agent gone (key hunter2hunter2)", retryable=False)
        await self.send(AgentTurn(text=msg.text.upper()))


async def test_an_actor_handles_data_then_passes_the_end_on_and_stops() -> None:
    sink = Collector()
    upper = Upper().connect(sink)
    tasks = [asyncio.create_task(a.run()) for a in (upper, sink)]
    await upper.deliver(UserTurn(text="hi"))
    await upper.deliver(UserTurn(text="there"))
    await upper.deliver(SessionEnd(reason="done"))
    await asyncio.wait_for(asyncio.gather(*tasks), 1)
    assert [m.text for m in sink.seen] == ["HI", "THERE"]  # type: ignore[union-attr]
    assert sink.ended == [SessionEnd(reason="done")]
    assert sink.stopped


async def test_an_exception_in_handle_becomes_a_redacted_error_message() -> None:
    redactor = Redactor()
    redactor.add("hunter2hunter2")
    sink = Collector()
    upper = Upper(redactor=redactor).connect(sink)
    tasks = [asyncio.create_task(a.run()) for a in (upper, sink)]
    await upper.deliver(UserTurn(text="boom"))
    await asyncio.wait_for(asyncio.gather(*tasks), 1)
    [err] = sink.ended
    assert isinstance(err, ErrorMsg)
    assert err.kind == "agent" and err.retryable is False
    assert "hunter2" not in err.message and "***" in err.message


async def test_stop_runs_when_an_actor_is_cancelled() -> None:
    sink = Collector()
    task = asyncio.create_task(sink.run())
    await sink.deliver(AgentPartial(text="x"))
    while not sink.seen:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sink.stopped


async def test_the_encoding_boundary_delivers_an_equal_copy() -> None:
    sink = Collector(boundary=roundtrip)
    turn = UserTurn(text="hola", data={"n": 1})
    await sink.deliver(turn)
    got = await sink.inbox.get()
    assert got == turn and got is not turn


def test_error_messages_keep_the_kind_of_typed_errors() -> None:
    assert error_message(TargetError("x", retryable=False, kind="adapter")).kind == "adapter"
    model = error_message(ModelError("judge down"))
    assert (model.kind, model.retryable) == ("model", True)
    refused = error_message(ConnectionRefusedError("refused"))
    assert (refused.kind, refused.retryable) == ("agent", True)
    bug = error_message(KeyError("reply"))
    assert bug.kind == "internal" and bug.message.startswith("KeyError")
