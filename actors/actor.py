"""Actors and their mailboxes: the one shape every part of a run graph has.

An actor is a plain async class: ``start``, ``handle`` for each message, ``stop``. It reads a
bounded ``Mailbox`` in which control messages (session end, interrupt, error) jump ahead of data
messages, and pushes what it produces to its outputs with ``send``, which waits while an output's
mailbox is full (backpressure). Actors never import Ray and never open sockets: whatever they talk
to (an adapter, a simulator) is handed to them, so the same classes run in every placement.

An actor runs either as a task of its own (``run``) or driven in the task of whoever sends to it
(``drive``): a message for an idle driven actor is handled at once, in the sender's task, and one
for a busy one waits in its mailbox until the message in hand is done. Both ways have the same
semantics (one message at a time, control before data, the end after the data already queued,
an exception becomes an ``ErrorMsg``); driving saves a task and a wake-up per message, which is
most of the cost of a text turn.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from tamesu.errors import BudgetExceeded, CapacityRefused, ModelError, SecretError, TargetError, TemplateError
from tamesu.kernel.messages import ErrorMsg, Message, SessionEnd, decode, encode, is_control

if TYPE_CHECKING:
    from tamesu.secrets import Redactor

__all__ = ["Actor", "Boundary", "Mailbox", "MailboxFull", "drive", "error_message", "roundtrip"]

Boundary = Callable[[Message], Message]
"""What happens to a message as it enters an actor's mailbox (identity, or encode + decode)."""


def roundtrip(msg: Message) -> Message:
    """Encode and decode a message, as if it crossed a process; tests use it to keep placements honest."""
    return decode(encode(msg))


class MailboxFull(Exception):
    """``put_nowait`` found no room for a data message."""


class Mailbox:
    """A bounded inbox: data messages keep their order and wait for room; control messages jump ahead.

    Control messages are never blocked by the bound, so a stop or an interrupt reaches an actor
    whose data queue is full. Waiters are woken like ``asyncio.Queue`` wakes them, one at a time.
    """

    __slots__ = ("_control", "_data", "_getters", "_putters", "maxsize")

    def __init__(self, maxsize: int = 64) -> None:
        if maxsize < 1:
            raise ValueError("a mailbox needs room for at least one message")
        self.maxsize = maxsize
        self._control: deque[Message] = deque()
        self._data: deque[Message] = deque()
        self._getters: deque[asyncio.Future[None]] | None = None
        self._putters: deque[asyncio.Future[None]] | None = None
        """Who waits for a message or for room: made on the first wait (a driven actor never waits)."""

    def __len__(self) -> int:
        return len(self._control) + len(self._data)

    def full(self) -> bool:
        """No room for another data message."""
        return len(self._data) >= self.maxsize

    async def put(self, msg: Message) -> None:
        """Queue a message; a data message waits while the mailbox is full."""
        if not is_control(msg):
            while self.full():
                if self._putters is None:
                    self._putters = deque()
                await self._wait(self._putters, ready=lambda: not self.full())
        self.put_nowait(msg)

    def put_nowait(self, msg: Message) -> None:
        if is_control(msg):
            self._control.append(msg)
        elif self.full():
            raise MailboxFull(f"mailbox full ({self.maxsize} data messages)")
        else:
            self._data.append(msg)
        _wake_one(self._getters)

    async def get(self) -> Message:
        """The next control message if any is waiting, else the oldest data message."""
        while not self:
            if self._getters is None:
                self._getters = deque()
            await self._wait(self._getters, ready=lambda: bool(self))
        if self._control:
            return self._control.popleft()
        msg = self._data.popleft()
        _wake_one(self._putters)
        return msg

    def get_nowait(self) -> Message:
        """What ``get`` would return now; IndexError when the mailbox is empty."""
        if self._control:
            return self._control.popleft()
        msg = self._data.popleft()
        _wake_one(self._putters)
        return msg

    def force(self, msg: Message) -> None:
        """Queue a message past the bound: only for a sender that the receiver itself is waiting on
        (waiting for room there could never end)."""
        if is_control(msg):
            self._control.append(msg)
        else:
            self._data.append(msg)
        _wake_one(self._getters)

    def take_data(self) -> list[Message]:
        """Every queued data message, oldest first, leaving none (to finish them before an end)."""
        taken = list(self._data)
        self._data.clear()
        for _ in taken:
            _wake_one(self._putters)
        return taken

    async def _wait(self, waiters: deque[asyncio.Future[None]], *, ready: Callable[[], bool]) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters.append(fut)
        try:
            await fut
        except BaseException:
            fut.cancel()
            if ready():
                _wake_one(waiters)
            raise


def _wake_one(waiters: deque[asyncio.Future[None]] | None) -> None:
    while waiters:
        fut = waiters.popleft()
        if not fut.done():
            fut.set_result(None)
            return


def error_message(exc: BaseException, *, redactor: Redactor | None = None, at: float = 0.0) -> ErrorMsg:
    """The ErrorMsg an exception becomes: typed errors keep their kind, anything else names its type."""
    if isinstance(exc, TargetError):
        text, kind, retryable = str(exc), exc.kind, exc.retryable
    elif isinstance(exc, ModelError):
        text, kind, retryable = str(exc), "model", exc.retryable
    elif isinstance(exc, BudgetExceeded):
        text, kind, retryable = str(exc), "budget", False
    elif isinstance(exc, (TemplateError, SecretError)):
        text, kind, retryable = str(exc), "config", False
    elif isinstance(exc, (OSError, asyncio.TimeoutError)):
        text, kind, retryable = f"{type(exc).__name__}: {exc}", "agent", True
    else:
        text, kind, retryable = f"{type(exc).__name__}: {exc}", "internal", False
    if redactor is not None:
        text = redactor.redact(text)
    wait = exc.retry_after if isinstance(exc, CapacityRefused) else None
    return ErrorMsg(
        message=text or type(exc).__name__, kind=kind, retryable=retryable, retry_after=wait, at=at
    )


class Actor:
    """Reads its mailbox until a SessionEnd or an ErrorMsg, which it passes on before it ends.

    ``drivable`` says the actor only ever acts on a message or in a ``start`` that returns, so a
    graph may drive it without a task; an actor that produces on its own (a timer, a stream it
    reads until the session ends) leaves it False and runs as a task.

    The end jumps the queue like every control message, but the data already queued is handled
    before it, so nothing said before the end is lost; data that arrives later is not handled.

    A subclass implements ``handle`` for data messages and may override ``start`` / ``stop`` (stop
    always runs, also when the actor is cancelled) and ``on_end`` (the end of the session).
    An exception from ``start`` or ``handle`` becomes an ``ErrorMsg`` sent to the outputs.
    """

    drivable: ClassVar[bool] = False
    sync_handlers: ClassVar[Mapping[type, Callable[[Any, Any], None]] | None] = None
    """Message types (never SessionEnd or ErrorMsg) this actor handles without awaiting anything,
    and the function (of the actor and the message) that does what ``handle`` does with them: an
    idle driven actor then handles such a message at once, without a coroutine for it."""

    def __init__(
        self,
        *,
        name: str | None = None,
        maxsize: int = 64,
        boundary: Boundary | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.name = name or type(self).__name__
        self.inbox = Mailbox(maxsize)
        self.outputs: list[Actor] = []
        self.boundary = boundary
        self.redactor = redactor
        self.driven = False
        """Set by ``drive``: messages are handled in the sender's task, not by ``run``."""
        self._ended = False
        """A driven actor saw the end of its session (or failed) and takes no more messages."""
        self.died: BaseException | None = None
        """What broke a driven actor outside ``handle`` (its ``on_end`` raised); the run is then
        an internal error, as when an actor's task dies."""
        self._started = False
        self._busy: asyncio.Task[Any] | bool | None = None
        """While a driven actor handles a message: the task doing it (True when all senders share
        one task, which ``drive`` is told, sparing a lookup per message)."""
        self._tasks = False

    def connect(self, *actors: Actor) -> Actor:
        """Send what this actor produces to ``actors``; returns self for chaining."""
        self.outputs.extend(actors)
        return self

    async def deliver(self, msg: Message) -> None:
        """Put a message in this actor's mailbox (through the boundary, when there is one); a
        driven actor that is idle handles it at once."""
        pending = self._accept(msg)
        if pending is not None:
            await pending

    def _accept(self, msg: Message) -> Awaitable[None] | None:
        """What ``deliver`` does, decided now: None when that is all, else what the caller awaits
        at once (in it an idle driven actor handles the message). ``send`` calls it directly: a
        coroutine less on every hop of a conversation, two for a message handled at once."""
        if self.boundary is not None:
            msg = self.boundary(msg)
        if not self.driven:
            return self.inbox.put(msg)
        if self._ended:
            return None
        if self._busy is None and self._started:
            if self.inbox._control or self.inbox._data:
                self.inbox.force(msg)
                return self._process(None)
            handler = None if self.sync_handlers is None else self.sync_handlers.get(type(msg))
            if handler is None:
                return self._process(msg)
            try:
                handler(self, msg)
            except Exception as exc:
                return self._fail(exc)
        elif is_control(msg) or not self.inbox.full():
            self.inbox.put_nowait(msg)
        elif not self._started or self._busy is True or self._busy is asyncio.current_task():
            self.inbox.force(msg)
        else:
            return self._put_then_process(msg)
        return None

    async def _put_then_process(self, msg: Message) -> None:
        """A busy driven actor's full mailbox: wait for room, then handle what is queued if the
        actor went idle meanwhile."""
        await self.inbox.put(msg)
        if self._busy is None and self._started and not self._ended:
            await self._process(None)

    async def send(self, msg: Message) -> None:
        """Push a message to every output, waiting while one of them is full."""
        for out in self.outputs:
            pending = out._accept(msg)
            if pending is not None:
                await pending

    async def start(self) -> None:
        """Before the first message."""

    async def handle(self, msg: Message) -> None:
        """One data message (or a control message other than the end of the session)."""

    async def on_end(self, msg: SessionEnd | ErrorMsg) -> None:
        """The session ended (or failed); the default passes the news on."""
        await self.send(msg)

    async def stop(self) -> None:
        """After the last message, after an error, and on cancellation; must not raise."""

    def now(self) -> float:
        return 0.0

    async def run(self) -> None:
        """The actor's loop: start, handle until the end of the session, stop."""
        try:
            await self.start()
            while True:
                msg = await self.inbox.get()
                if isinstance(msg, (SessionEnd, ErrorMsg)):
                    for queued in self.inbox.take_data():
                        await self.handle(queued)
                    await self.on_end(msg)
                    return
                await self.handle(msg)
        except Exception as exc:
            await self.on_end(error_message(exc, redactor=self.redactor, at=self.now()))
        finally:
            await self.stop()

    async def _begin(self) -> None:
        """A driven actor's start (when it has one of its own), then whatever was queued for it
        meanwhile."""
        self._busy = asyncio.current_task() if self._tasks else True
        try:
            if type(self).start is not Actor.start:
                await self.start()
        except Exception as exc:
            await self._fail(exc)
        finally:
            self._started = True
            self._busy = None
        if self.inbox._control or self.inbox._data:
            await self._process(None)

    async def _process(self, msg: Message | None) -> None:
        """Handle ``msg`` (None: nothing new) and then the mailbox until it is empty or the session
        ended, as ``run`` handles them, in the caller's task; an exception from ``on_end`` means
        the actor died."""
        inbox = self.inbox
        self._busy = asyncio.current_task() if self._tasks else True
        try:
            while not self._ended:
                if msg is None:
                    if not (inbox._control or inbox._data):
                        return
                    msg = inbox.get_nowait()
                try:
                    if isinstance(msg, (SessionEnd, ErrorMsg)):
                        for queued in inbox.take_data():
                            await self.handle(queued)
                        self._ended = True
                        await self.on_end(msg)
                        return
                    await self.handle(msg)
                except Exception as exc:
                    self._ended = True
                    await self.on_end(error_message(exc, redactor=self.redactor, at=self.now()))
                msg = None
        except Exception as exc:
            self._die(exc)
        finally:
            self._busy = None

    async def _fail(self, exc: Exception) -> None:
        """A start or a message handled at once raised: the session ends with the error, as in
        ``_process``."""
        self._busy = asyncio.current_task() if self._tasks else True
        self._ended = True
        try:
            await self.on_end(error_message(exc, redactor=self.redactor, at=self.now()))
        except Exception as died:
            self._die(died)
        finally:
            self._busy = None

    def _die(self, exc: BaseException) -> None:
        self._ended = True
        if self.died is None:
            self.died = exc


async def drive(actors: Sequence[Actor], *, begun: list[Actor], other_tasks: bool = False) -> None:
    """Start ``actors`` driven (no task each), the last first so that each is ready before the ones
    that send to it; ``begun`` gets each actor whose start was attempted (the caller stops them,
    also when this is cancelled).

    Whatever the starts set going (the first user turn, the answer, the next turn...) runs in this
    task, so when ``drive`` returns a conversation of driven actors is over, or goes on only in
    the tasks of actors that run on their own; ``Actor.died`` says which actor broke.
    ``other_tasks`` says that such actors send to driven ones (a full mailbox then makes them
    wait, as it makes any sender wait).
    """
    for actor in actors:
        actor.driven = True
        actor._tasks = other_tasks
    for actor in reversed(actors):
        begun.append(actor)
        await actor._begin()
