"""The ``a2a`` target: an Agent2Agent agent, spoken to with the official a2a-sdk client.

Each user turn is one A2A message (its words, a data part, file parts) in the conversation's
context; the agent's answer is a message or a task. A task that needs input keeps the turn's task
open, so the next user turn continues it; a task that fails (or is rejected or canceled) is the
agent's error and ends the run as one. The answer arrives in one of three ways: ``message/send``
(polling ``tasks/get`` while the task works on), ``message/stream`` when ``stream`` is set and
the card streams (resubscribing to the task when the stream breaks off), or push notifications on
a local listener (``push``). The task the turn ended with is the turn's raw response, so
``json_path`` reads it. Connecting lives in ``a2a_connect``, parts in ``a2a_parts``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from tamesu.clock import within
from tamesu.durations import format_duration
from tamesu.errors import TargetError
from tamesu.kernel.events import Resubscribed
from tamesu.kernel.messages import AgentTurn, Event, Message, RawResponse, UserTurn
from tamesu.targets.a2a.settings import A2ATarget
from tamesu.targets.base import TargetAdapter, target
from tamesu.wire.connect import ConnectPolicy

if TYPE_CHECKING:
    from a2a.types.a2a_pb2 import SendMessageRequest

    from tamesu.targets.a2a.a2a_connect import Connection
    from tamesu.targets.a2a.a2a_parts import Answer
    from tamesu.targets.a2a.a2a_push import PushSession
    from tamesu.targets.base import TargetContext

__all__ = ["A2AAdapter"]

POLL_INTERVAL = 0.2
"""Seconds between ``tasks/get`` while a task sent without streaming or push works on."""
RESUBSCRIBES = 3
"""How many times one turn resubscribes to its task after the stream broke off."""
_ENDED_BY_AGENT = {"failed", "rejected", "canceled"}


@target("a2a", config=A2ATarget)
class A2AAdapter(TargetAdapter):
    """One conversation (one A2A context) with an A2A agent; see the module docstring."""

    config: A2ATarget

    def __init__(self, config: A2ATarget, ctx: TargetContext) -> None:
        super().__init__(config, ctx)
        self.policy = ConnectPolicy.from_config(config.connect)
        self.conn: Connection | None = None
        self.push: PushSession | None = None
        self.url = ""
        self.metadata: dict[str, Any] | None = None
        self.context_id: str | None = None
        self.task_id: str | None = None
        """The task waiting for the user's input, which the next turn continues."""

    async def start(self) -> None:
        """Render the configuration, read the card, check the skill, start the client (and the
        push listener)."""
        from tamesu.targets.a2a.a2a_connect import connect, require_sdk
        from tamesu.targets.a2a.a2a_push import pushed
        from tamesu.templates import render, render_text, render_url

        require_sdk()
        config, scope = self.config, self.ctx.scope
        scope.set("session", self.ctx.session)
        if self.ctx.shared_delegates and self.context_id is None:
            self.context_id = self.ctx.session
        try:
            if config.session is not None and config.session.open is not None:
                from tamesu.wire.connect import open_session

                await open_session(self.ctx, config.session.open, self.policy)
            if not config.url:
                raise TargetError("an a2a target needs url", retryable=False, kind="config")
            self.url = render_url(config.url, scope)
            headers = {str(k): render_text(v, scope) for k, v in (config.headers or {}).items()}
            self.metadata = render(config.metadata, scope) if config.metadata else None
            push = pushed(config.push)
            self.conn = await connect(
                self.ctx,
                self.policy,
                url=self.url,
                headers=headers,
                transport=config.transport,
                stream=bool(config.stream) and not push,
            )
            self._check_skill()
            if push:
                self.push = await self._open_push()
        except TargetError as exc:
            await self.stop()
            raise self.redacted(exc) from None

    def _check_skill(self) -> None:
        skill = self.config.skill
        assert self.conn is not None
        if not skill:
            return
        skills = self.conn.card.skills
        if any(skill in (s.id, s.name) for s in skills):
            return
        offered = ", ".join(s.id for s in skills) or "none"
        raise TargetError(
            f"the agent card at {self.url} offers no skill {skill!r} (its skills: {offered})", retryable=False
        )

    async def _open_push(self) -> PushSession:
        from tamesu.targets.a2a.a2a_push import PushSession

        assert self.conn is not None
        if not self.conn.card.capabilities.push_notifications:
            raise TargetError(
                f"push is set but the agent card at {self.url} does not offer push notifications",
                retryable=False,
                kind="config",
            )
        push = self.config.push
        return await PushSession.open(
            self.ctx.limits, addr=getattr(push, "addr", None), url=getattr(push, "url", None)
        )

    async def stop(self) -> None:
        if self.push is not None:
            push, self.push = self.push, None
            await push.close()
        if self.conn is not None:
            conn, self.conn = self.conn, None
            await conn.close()

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        from tamesu.targets.a2a.a2a_parts import Answer, user_message

        clock = self.ctx.clock
        if user is None:
            # An A2A agent answers messages: it has nothing to say before the first one.
            yield AgentTurn(text="", at=clock.now())
            return
        assert self.conn is not None
        message = user_message(user, context_id=self.context_id, task_id=self.task_id, metadata=self.metadata)
        answer = Answer(self.ctx.limits)
        notes: list[Event] = []
        sent_at = clock.now()
        exchange = _Exchange(self, answer, notes)
        try:
            await within(exchange.run(message), self.ctx.turn_timeout)
        except asyncio.TimeoutError:
            raise self.redacted(
                TargetError(f"no answer within {format_duration(self.ctx.turn_timeout)} from {self.url}")
            ) from None
        except TargetError as exc:
            raise self.redacted(exc) from None
        except Exception as exc:
            raise self.redacted(self._error(exc)) from None
        for note in notes:
            yield note
        body = answer.body()
        if body is not None:
            yield RawResponse(body=body, at=clock.now())
        self._follow(answer)
        yield AgentTurn(
            text=answer.text(),
            sent_at=sent_at,
            first_byte_at=exchange.first_at,
            end_at=clock.now(),
            at=clock.now(),
        )

    def _follow(self, answer: Answer) -> None:
        """Keep the conversation's context (and a task that waits for input); a task the agent
        ended without success, or one that asks for authentication, is the agent's error."""
        self.context_id = answer.context_id or self.context_id
        state = answer.state
        self.task_id = answer.task_id if state == "input-required" else None
        if state in _ENDED_BY_AGENT:
            reason = answer.text() or "no reason given"
            raise self.redacted(TargetError(f"the agent's task ended {state}: {reason}", retryable=True))
        if state == "auth-required":
            raise self.redacted(
                TargetError(
                    "the agent asks for authentication (auth-required); give credentials in the target's headers",
                    retryable=False,
                )
            )

    def _error(self, exc: Exception) -> TargetError:
        """An SDK error as the run's error; a 4xx answer (but 408 / 429) will not change on a retry."""
        import httpx

        from tamesu.targets.a2a.a2a_connect import describe

        cause: BaseException | None = exc
        status = None
        while cause is not None and status is None:
            if isinstance(cause, httpx.HTTPStatusError):
                status = cause.response.status_code
            cause = cause.__cause__
        retryable = status is None or status >= 500 or status in (408, 429)
        return TargetError(
            f"the agent at {self.url} answered with an error: {describe(exc)}", retryable=retryable
        )


class _Exchange:
    """One user turn's exchange: send, then read the answer to its end the configured way."""

    def __init__(self, target: A2AAdapter, answer: Answer, notes: list[Event]) -> None:
        assert target.conn is not None
        self.target = target
        self.conn = target.conn
        self.answer = answer
        self.notes = notes
        self.first_at: float | None = None

    def _add(self, event: Any) -> None:
        if self.first_at is None:
            self.first_at = self.target.ctx.clock.now()
        self.answer.add(event)

    async def run(self, message: Any) -> None:
        from a2a.types.a2a_pb2 import SendMessageRequest

        request = SendMessageRequest(message=message)
        push = self.target.push
        if push is not None:
            await self._pushed(request, push)
        elif self.target.config.stream and self.conn.streams:
            await self._streamed(request)
        else:
            await self._sent(request)

    async def _sent(self, request: SendMessageRequest) -> None:
        """``message/send``, then ``tasks/get`` until the task ends the turn."""
        from a2a.types.a2a_pb2 import GetTaskRequest

        async for event in self.conn.client.send_message(request, context=self.conn.call):
            self._add(event)
        clock = self.target.ctx.clock
        while not self.answer.final and self.answer.task_id:
            await clock.sleep(POLL_INTERVAL)
            task = await self.conn.client.get_task(
                GetTaskRequest(id=self.answer.task_id), context=self.conn.call
            )
            self.answer.task = task

    async def _pushed(self, request: SendMessageRequest, push: PushSession) -> None:
        """``message/send`` returning at once with the push configuration; the updates arrive on
        the listener (those of another task are from an earlier turn and are left)."""
        while not push.queue.empty():
            push.queue.get_nowait()
        request.configuration.task_push_notification_config.CopyFrom(push.config())
        request.configuration.return_immediately = True
        async for event in self.conn.client.send_message(request, context=self.conn.call):
            self._add(event)
        while not self.answer.final:
            event = await push.next()
            if _task_of(event) in (None, self.answer.task_id) or self.answer.task_id is None:
                self._add(event)

    async def _streamed(self, request: SendMessageRequest) -> None:
        """``message/stream``; when the stream ends before the task does, resubscribe to the task
        (and when that is refused, read the task as it stands)."""
        from a2a.client.errors import A2AClientError, A2AClientTimeoutError
        from a2a.types.a2a_pb2 import GetTaskRequest, SubscribeToTaskRequest
        from a2a.utils.errors import A2AError

        events = self.conn.client.send_message(request, context=self.conn.call)
        broke: str | None = None
        for attempt in range(RESUBSCRIBES + 1):
            try:
                async for event in events:
                    self._add(event)
                    if self.answer.final:
                        return
                broke = "the stream ended before the task did"
            except A2AClientTimeoutError:
                raise
            except A2AClientError as exc:
                broke = str(exc) or type(exc).__name__
            except A2AError as exc:
                if attempt == 0:
                    raise
                broke = f"resubscribing was refused: {exc}"
                break
            task_id = self.answer.task_id
            if self.answer.final or task_id is None or attempt == RESUBSCRIBES:
                break
            now = self.target.ctx.clock.now()
            self.notes.append(Event(event=Resubscribed(task=task_id, reason=broke, at=now), at=now))
            events = self.conn.client.subscribe(SubscribeToTaskRequest(id=task_id), context=self.conn.call)
        if self.answer.final:
            return
        if self.answer.task_id is None:
            raise TargetError(f"the stream from {self.target.url} broke off before any task: {broke}")
        try:
            task = await self.conn.client.get_task(
                GetTaskRequest(id=self.answer.task_id), context=self.conn.call
            )
        except Exception:
            raise TargetError(f"the stream from {self.target.url} broke off: {broke}") from None
        self.answer.task = task
        if not self.answer.final:
            raise TargetError(
                f"the stream from {self.target.url} broke off {RESUBSCRIBES + 1} times: {broke}"
            )


def _task_of(event: Any) -> str | None:
    kind = event.WhichOneof("payload")
    if kind == "task":
        return str(event.task.id) or None
    if kind in ("status_update", "artifact_update"):
        return str(getattr(event, kind).task_id) or None
    return None
