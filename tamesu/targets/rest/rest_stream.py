"""``streaming: sse``: each turn is a request whose answer is a text/event-stream.

Every event's data is read with the ``response:`` paths (JSON, or plain text as a chunk of the
reply); the reply accumulates as ``AgentPartial`` messages, and the turn ends with the stream or
at a ``[DONE]`` event. An answer that is not an event stream is read as plain JSON.
"""

from __future__ import annotations

import asyncio
import codecs
import re
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tamesu.clock import within
from tamesu.durations import format_duration
from tamesu.errors import TargetError
from tamesu.kernel.messages import Message, UserTurn
from tamesu.targets.rest.rest_read import Extract, decode_text
from tamesu.wire.connect import stream

if TYPE_CHECKING:
    from tamesu.targets.rest.adapter import RestAdapter
    from tamesu.templates import Scope

__all__ = ["SSEParser", "ServerEvent", "TooLong", "event_lines", "sse_turn"]


@dataclass
class ServerEvent:
    data: str
    event: str = "message"
    id: str | None = None


@dataclass
class SSEParser:
    """The event-stream format, line by line (https://html.spec.whatwg.org/#event-stream-interpretation).

    ``limit`` bounds the data of one event (characters): past it, ``feed`` raises ``TooLong``.
    """

    limit: int | None = None
    _data: list[str] = field(default_factory=list)
    _size: int = 0
    _event: str = ""
    _id: str | None = None

    def feed(self, line: str) -> ServerEvent | None:
        """One line without its end; returns the event a blank line completes."""
        if line == "":
            if not self._data:
                self._event = ""
                return None
            ev = ServerEvent(data="\n".join(self._data), event=self._event or "message", id=self._id)
            self._data, self._event, self._size = [], "", 0
            return ev
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            self._size += len(value) + 1
            if self.limit is not None and self._size > self.limit:
                raise TooLong
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            self._id = value
        return None

    def flush(self) -> ServerEvent | None:
        """The last event when the stream ends without a blank line."""
        return self.feed("")


class TooLong(Exception):
    """A line or an event of the stream is longer than the limit it is read under."""


_NEWLINE = re.compile(r"\r\n|\r|\n")


async def event_lines(chunks: AsyncIterator[bytes], limit: int) -> AsyncGenerator[str, None]:
    """The lines of an event stream (UTF-8, any line ending), each at most ``limit`` characters:
    a longer one raises ``TooLong`` without being held whole."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    pending: list[str] = []
    size = 0
    after_cr = False
    async for chunk in chunks:
        text = decoder.decode(chunk)
        if after_cr and text.startswith("\n"):
            text = text[1:]
        after_cr = text.endswith("\r")
        parts = _NEWLINE.split(text)
        for part in parts[:-1]:
            if pending:
                part, pending, size = "".join(pending) + part, [], 0
            if len(part) > limit:
                raise TooLong
            yield part
        last = parts[-1]
        if last:
            pending.append(last)
            size += len(last)
            if size > limit:
                raise TooLong
    rest = "".join(pending) + decoder.decode(b"", final=True)
    if rest:
        yield rest


async def sse_turn(t: RestAdapter, user: UserTurn | None, scope: Scope) -> AsyncGenerator[Message, None]:
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
        limits = ctx.limits
        parser = SSEParser(limit=limits.answer_size)
        async with aclosing(event_lines(resp.aiter_bytes(), limits.answer_size)) as lines:
            while True:
                remaining = deadline - ctx.clock.now()
                try:
                    if remaining <= 0:
                        raise asyncio.TimeoutError
                    line = await within(lines.__anext__(), remaining)
                    event = parser.feed(line)
                except StopAsyncIteration:
                    event = parser.flush()
                    if event is None:
                        break
                except TooLong:
                    raise limits.too_large(f"an event from {call.url}") from None
                except asyncio.TimeoutError:
                    if builder.first_byte_at is None:
                        raise TargetError(
                            f"no answer within {format_duration(ctx.turn_timeout)} from {call.url}",
                            retryable=True,
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
                payload, is_json = decode_text(event.data, limits.json_depth)
                extract = (
                    t.reader.read(payload, message=True, at=ctx.clock.now())
                    if is_json
                    else Extract(texts=[event.data] if event.data else [])
                )
                for msg in builder.add(payload, extract, status=resp.status_code, size=len(event.data)):
                    yield msg
    for msg in t.finish(builder):
        yield msg
