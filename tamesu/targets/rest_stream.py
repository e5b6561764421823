"""``streaming: sse``: each turn is a request whose answer is a text/event-stream.

Every event's data is read with the ``response:`` paths (JSON, or plain text as a chunk of the
reply); the reply accumulates as ``AgentPartial`` messages, and the turn ends with the stream or
at a ``[DONE]`` event. An answer that is not an event stream is read as plain JSON.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tamesu.actors.messages import Message, UserTurn
from tamesu.errors import TargetError
from tamesu.targets.connect import fmt_seconds, stream
from tamesu.targets.rest_read import Extract, decode_text

if TYPE_CHECKING:
    from tamesu.targets.rest import RestTarget
    from tamesu.templates import Scope

__all__ = ["SSEParser", "ServerEvent", "sse_turn"]


@dataclass
class ServerEvent:
    data: str
    event: str = "message"
    id: str | None = None


@dataclass
class SSEParser:
    """The event-stream format, line by line (https://html.spec.whatwg.org/#event-stream-interpretation)."""

    _data: list[str] = field(default_factory=list)
    _event: str = ""
    _id: str | None = None

    def feed(self, line: str) -> ServerEvent | None:
        """One line without its end; returns the event a blank line completes."""
        if line == "":
            if not self._data:
                self._event = ""
                return None
            ev = ServerEvent(data="\n".join(self._data), event=self._event or "message", id=self._id)
            self._data, self._event = [], ""
            return ev
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            self._id = value
        return None

    def flush(self) -> ServerEvent | None:
        """The last event when the stream ends without a blank line."""
        return self.feed("")


async def sse_turn(t: RestTarget, user: UserTurn | None, scope: Scope) -> AsyncGenerator[Message, None]:
    """Send the turn and read its event stream."""
    import httpx

    if user is None:
        for msg in t.finish(t.builder(sent_at=None)):
            yield msg
        return
    ctx = t.ctx
    call = t.turn_call(scope)
    call.headers.setdefault("Accept", "text/event-stream")
    builder = t.builder(sent_at=ctx.clock.now(), partials=True)
    deadline = ctx.clock.now() + ctx.turn_timeout
    async with stream(ctx, t.policy, call) as resp:
        ctype = resp.headers.get("content-type", "")
        if "text/event-stream" not in ctype:
            builder.first_byte()
            text = await t.read_body(resp, call)
            for msg in t.read_answer(builder, resp.status_code, ctype, text):
                yield msg
            for msg in t.finish(builder):
                yield msg
            return
        builder.status = resp.status_code
        parser = SSEParser()
        lines = resp.aiter_lines()
        while True:
            remaining = deadline - ctx.clock.now()
            try:
                if remaining <= 0:
                    raise asyncio.TimeoutError
                line = await asyncio.wait_for(lines.__anext__(), timeout=remaining)
                event = parser.feed(line.rstrip("\r"))
            except StopAsyncIteration:
                event = parser.flush()
                if event is None:
                    break
            except asyncio.TimeoutError:
                if builder.first_byte_at is None:
                    raise TargetError(
                        f"no answer within {fmt_seconds(ctx.turn_timeout)} from {call.url}", retryable=True
                    ) from None
                break
            except httpx.HTTPError as exc:
                raise TargetError(
                    f"the event stream from {call.url} broke mid-turn: {exc}", retryable=True
                ) from None
            if event is None:
                continue
            if event.data.strip() == "[DONE]":
                break
            payload, is_json = decode_text(event.data)
            extract = (
                t.reader.read(payload, message=True, at=ctx.clock.now())
                if is_json
                else Extract(texts=[event.data] if event.data else [])
            )
            for msg in builder.add(payload, extract, status=resp.status_code):
                yield msg
    for msg in t.finish(builder):
        yield msg
